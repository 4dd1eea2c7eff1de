#include "sim/html/html_report.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "sim/core/format.hpp"
#include "sim/report/run_metrics.hpp"
#include "tests/sim/html/chromium.hpp"
#include "tests/sim/report/report_fixture.hpp"

using namespace ipusim;
using namespace ipusim::testing;
namespace fs = std::filesystem;

namespace {

const char* const kTinyLayer4 = "/model/layers/4/cycles={\"forward\": 8, \"backward\": 16}";
const char* const kTinyLayer5 = "/model/layers/5/cycles={\"forward\": 8, \"backward\": 16}";
const char* const kTinyLayer6 = "/model/layers/6/cycles={\"forward\": 8, \"backward\": 16}";

// References that would make the browser fetch something from the network.
bool fetches_network(const std::string& html) {
  static const std::regex remote(
      R"((src|href)\s*=\s*["']?\s*(https?:)?//|url\(\s*["']?(https?:)?//)", std::regex::icase);
  return std::regex_search(html, remote) || html.find("http://") != std::string::npos ||
         html.find("https://") != std::string::npos;
}

// The <svg> element with this id, or "" when there is none.
std::string svg_element(const std::string& html, const std::string& id) {
  const auto begin = html.find("<svg id=\"" + id + "\"");
  if (begin == std::string::npos)
    return "";
  return html.substr(begin, html.find("</svg>", begin) - begin);
}

// A sweep's run: the varied `values` (numbers where they are one) and figures of `throughput`
// samples/s and `peak_bytes` on its fullest IPU.
sim::SweepPlotRun sweep_run(const std::vector<std::string>& values, double throughput,
                            std::int64_t peak_bytes, bool fits = true) {
  sim::SweepPlotRun run;
  for (const auto& value : values) {
    const bool number = !value.empty() && std::isdigit(static_cast<unsigned char>(value[0]));
    run.values.push_back({value, number ? std::optional<double>(std::stod(value)) : std::nullopt});
  }
  run.metrics.emplace();
  run.metrics->throughput = throughput;
  run.metrics->peak_memory_bytes_max = peak_bytes;
  run.metrics->fits_in_memory = fits;
  return run;
}

}  // namespace

TEST_CASE("the tf1 report renders in headless Chromium with its Gantt chart and no errors") {
  require_chromium();
  // IPU1's layers profiled at a few cycles, so that its tasks are narrower than a pixel.
  const auto run = testing::record(kTf1Config, {kTinyLayer4, kTinyLayer5, kTinyLayer6});
  const auto html = sim::html_report(run->report, run->timeline());
  const fs::path page = build_dir() / "html_report.html";
  write_file(page, html);

  const auto loaded = open_in_chromium(page, "--dump-dom");
  CHECK(loaded.console_errors.empty());
  // To scale, only IPU0's F1..F16 are boxes; IPU1's are aggregated.
  const auto gantt = svg_element(loaded.dom, "gantt");
  CHECK(count(gantt, "class=\"box k-f\"") == 16);
  CHECK(count(gantt, "class=\"box k-b\"") == 16);
  CHECK(count(gantt, "class=\"agg k-f\"") > 0);
  // IPU1's aggregated columns carry their cycles and shares in a tooltip.
  CHECK(gantt.find("<g><title>cycles ") != std::string::npos);
  CHECK(gantt.find(", F forward ") != std::string::npos);
  // By step, every F and B of both IPUs is a labelled box.
  const auto steps = svg_element(loaded.dom, "steps");
  CHECK(count(steps, "class=\"box k-f\"") == 32);
  CHECK(count(steps, "class=\"box k-b\"") == 32);
  CHECK(count(steps, ">F1</text>") == 2);
  CHECK(count(steps, ">B16</text>") == 2);

  const fs::path png = build_dir() / "html_report.png";
  fs::remove(png);
  open_in_chromium(page, "--hide-scrollbars --window-size=1440,2000 --screenshot=" + png.string());
  CHECK(fs::exists(png));
  CHECK(fs::file_size(png) > 20'000);
}

TEST_CASE("the console error check catches an uncaught exception") {
  require_chromium();
  const fs::path page = build_dir() / "html_report_broken.html";
  write_file(page, "<!DOCTYPE html><html><body><script>missing_function();</script></body></html>");
  CHECK(open_in_chromium(page, "--dump-dom").console_errors.size() == 1);
}

TEST_CASE("the tf1 report is self-contained and has every section") {
  const auto run = testing::record(kTf1Config);
  const auto html = sim::html_report(run->report, run->timeline());
  CHECK(!fetches_network(html));
  CHECK(count(html, "<script") == 1);  // the to-scale chart's pan and zoom
  CHECK(count(html, "<link") == 0);
  for (const char* id : {"config", "figures", "pipeline-steps", "pipeline", "timing", "utilisation",
                         "memory", "stash"})
    CHECK(html.find(std::string("<section id=\"") + id + "\">") != std::string::npos);
  CHECK(html.find("<title>ipusim: tf1_mnist (grouped)</title>") != std::string::npos);
  CHECK(html.find("<dt>Gradient accumulation (M)</dt><dd>16</dd>") != std::string::npos);
  CHECK(html.find("<svg id=\"memory-ipu1\"") != std::string::npos);
  CHECK(html.find(">ramp-up</text>") != std::string::npos);
  CHECK(html.find(">-0</text>") == std::string::npos);  // the axes start at a plain 0
  CHECK(svg_element(html, "steps").find(">WU</text>") != std::string::npos);
  // Syncs are sub-pixel in the whole step; the zoomed views draw each one.
  CHECK(svg_element(html, "gantt").find("class=\"box k-sy\"") == std::string::npos);
  CHECK(svg_element(html, "gantt").find("agg k-sy") != std::string::npos);
  CHECK(svg_element(html, "zoom-main").find("class=\"box k-sy\"") != std::string::npos);
  CHECK(fetches_network("<img src=\"https://example.com/a.png\">"));
}

// A figure added to the metric table shows on the run page too, with its CSV column.
TEST_CASE("the run page lists every metric column with its value and CSV key") {
  const auto run = testing::record(kTf1Config);
  const auto html = sim::html_report(run->report, run->timeline());
  for (const auto& column : sim::metric_table()) {
    INFO(column.key);
    CHECK(html.find("<tr><td>" + column.heading + "</td>") != std::string::npos);
    CHECK(html.find("<td><code>" + column.key + "</code></td>") != std::string::npos);
  }
  CHECK(html.find("<tr><td>Throughput per IPU</td><td>277,476 samples/s</td>") !=
        std::string::npos);
}

TEST_CASE("the same run gives a byte-identical report") {
  const auto a = testing::record(kTf1Config);
  const auto b = testing::record(kTf1Config);
  CHECK(sim::html_report(a->report, a->timeline()) == sim::html_report(b->report, b->timeline()));
}

TEST_CASE("a comparison of the same runs is byte-identical") {
  const auto a = testing::record(kTf1Config);
  const auto b = testing::record(kTf1Config);
  CHECK(sim::compare_html({&a->report}, {&a->timeline()}, {"tf1"}) ==
        sim::compare_html({&b->report}, {&b->timeline()}, {"tf1"}));
}

TEST_CASE("the zoomed views show only the phases a schedule has, each from its first cycle") {
  const auto sequential = testing::record(kTf1Config, {"pipeline.pipeline_schedule=sequential"});
  const auto html = sim::html_report(sequential->report, sequential->timeline());
  CHECK(html.find("<svg id=\"zoom-ramp-up\"") == std::string::npos);
  CHECK(html.find("<svg id=\"zoom-ramp-down\"") == std::string::npos);
  CHECK(html.find("<svg id=\"zoom-main\"") != std::string::npos);
  const auto grouped = testing::record(kTf1Config);
  const auto page = sim::html_report(grouped->report, grouped->timeline());
  CHECK(page.find("Ramp-up: cycles 0 \u2013 83,052 (83,052 cycles, 0.0624 ms)") !=
        std::string::npos);
  CHECK(page.find("One period of the main phase: cycles 83,052 \u2013 121,473 (38,421 cycles, "
                  "0.0289 ms)") != std::string::npos);
  // Each task of the windows is a box with its exact cycles, none aggregated.
  CHECK(svg_element(page, "zoom-main").find("class=\"agg ") == std::string::npos);
  CHECK(svg_element(page, "zoom-main").find("<title>F3 s1 on IPU1 \u00b7 cycles ") !=
        std::string::npos);
}

TEST_CASE("text from the config is escaped in the report") {
  auto json = nlohmann::json::parse(read_file(kTf1Config));
  json.erase("include");
  json.erase("data");
  const auto model = nlohmann::json::parse(read_file("configs/models/tf1_mnist_mlp.json"));
  json["model"] = model["model"];
  json["model"]["name"] = "mlp <b>&amp;";
  json["description"] = "a \"quoted\" <script>alert(1)</script>";
  json["hardware"] = {{"preset", "gc200"}};
  const auto run =
      testing::record(sim::build_run_spec(core::ConfigDocument::from_json(json, "x.json")));
  const auto html = sim::html_report(run->report, run->timeline());
  CHECK(html.find("<script>alert") == std::string::npos);
  CHECK(html.find("a &quot;quoted&quot; &lt;script&gt;alert(1)&lt;/script&gt;") !=
        std::string::npos);
  CHECK(html.find("mlp &lt;b&gt;&amp;amp;") != std::string::npos);
}

TEST_CASE("the BERT report and a 100,000 micro-batch report stay under 5 MB") {
  const auto bert = testing::record("configs/bert_large_4ipu.json");
  const auto bert_html = sim::html_report(bert->report, bert->timeline());
  write_file(build_dir() / "html_report_bert.html", bert_html);
  CHECK(bert_html.size() < 5'000'000);
  CHECK(!bert->timeline().truncated);

  const auto large = testing::record(kTf1Config, {"pipeline.gradient_accumulation_count=100000"});
  const auto large_html = sim::html_report(large->report, large->timeline());
  write_file(build_dir() / "html_report_large.html", large_html);
  CHECK(large_html.size() < 5'000'000);
  REQUIRE(large->timeline().truncated);
  CHECK(large_html.find("Long run: showing the first ") != std::string::npos);
}

TEST_CASE("a comparison stacks the runs' Gantt charts in one chart with a table") {
  const auto grouped = testing::record(kTf1Config, {kTinyLayer4, kTinyLayer5, kTinyLayer6});
  const auto interleaved = testing::record(kTf1Config, {kTinyLayer4, kTinyLayer5, kTinyLayer6,
                                                        "pipeline.pipeline_schedule=interleaved"});
  const auto html = sim::compare_html({&grouped->report, &interleaved->report},
                                      {&grouped->timeline(), &interleaved->timeline()},
                                      {"grouped", "interleaved"});
  write_file(build_dir() / "compare_report.html", html);
  CHECK(count(html, "<svg id=\"gantt\"") == 1);
  CHECK(html.find("class=\"run-title\" x=\"4\" y=\"39\">grouped</text>") != std::string::npos);
  CHECK(html.find(">interleaved</text>") != std::string::npos);
  CHECK(html.find("<tr><th>Figure</th><th>grouped</th><th>interleaved</th></tr>") !=
        std::string::npos);
  CHECK(count(html, "class=\"box k-f\"") == 32);  // IPU0's of each run; IPU1's are sub-pixel
  CHECK(html.find("<svg id=\"steps\"") == std::string::npos);
  CHECK(!fetches_network(html));
}

TEST_CASE("a sweep plots ramp overhead and throughput with one line per schedule") {
  sim::SweepPlotTable table;
  table.varied = {"pipeline.gradient_accumulation_count", "pipeline.pipeline_schedule"};
  for (const int ramp : {8, 2}) {
    for (int gac : {8, 16, 32, 64, 128}) {
      auto run = sweep_run({std::to_string(gac), ramp == 8 ? "grouped" : "interleaved"},
                           (100 - ramp) * gac, 1000);
      run.metrics->ramp_overhead = double(ramp) / (gac + ramp);
      table.runs.push_back(run);
    }
  }
  const auto html = sim::sweep_html(table);
  write_file(build_dir() / "sweep_report.html", html);
  const auto ramp = svg_element(html, "sweep-ramp_overhead-0");
  const auto speed = svg_element(html, "sweep-throughput-0");
  CHECK(html.find("sweep-ramp_overhead-1") == std::string::npos);  // schedule is not an axis
  CHECK(count(ramp, "<polyline") == 2);
  CHECK(count(speed, "<polyline") == 2);
  CHECK(count(ramp, "<circle") == 10);
  CHECK(count(speed, "<circle") == 10);
  CHECK(html.find(">ramp overhead (% of IPU time)</text>") != std::string::npos);
  CHECK(html.find("pipeline.gradient_accumulation_count (log scale)") != std::string::npos);
  CHECK(html.find("<title>interleaved: 8 \u2192 20</title>") != std::string::npos);
  CHECK(!fetches_network(html));
}

TEST_CASE("a sweep draws runs that do not fit as rings and plots peak memory in MB") {
  sim::SweepPlotTable table;
  table.varied = {"pipeline.micro_batch_size"};
  table.runs = {sweep_run({"8"}, 100, 500000000), sweep_run({"16"}, 150, 900000000),
                sweep_run({"32"}, 180, 1700000000, false)};
  const auto html = sim::sweep_html(table);
  // The ramp overhead chart draws the 32 run as a ring too.
  CHECK(count(svg_element(html, "sweep-ramp_overhead-0"), "<circle class=\"ring\"") == 1);
  CHECK(html.find("<svg id=\"sweep-peak_memory_bytes_max-0\"") != std::string::npos);
  CHECK(html.find(">bubble (% of IPU time in the pipeline phases)</text>") != std::string::npos);
  CHECK(html.find(">weight update (% of the step)</text>") != std::string::npos);
  // The five line charts (ramp overhead, throughput, bubble, weight update, memory) and the
  // Pareto chart each draw the 32 run as a ring, the others as dots.
  CHECK(count(html, "<circle class=\"ring\"") == 6);
  CHECK(count(html, "<circle") == 18);
  CHECK(html.find("<title>Peak memory: 32 \u2192 1,700 (does not fit in memory)</title>") !=
        std::string::npos);
  CHECK(html.find("<title>Throughput: 16 \u2192 150</title>") != std::string::npos);
  CHECK(count(html, "<i class=\"ring\"></i>does not fit in memory") == 5);
}

TEST_CASE("a sweep draws each IPU's peak memory of each run against the capacity") {
  sim::SweepPlotTable table;
  table.varied = {"pipeline.micro_batch_size"};
  table.ipus = 3;
  // The third run has two IPUs and its IPU0 is over the capacity.
  table.runs = {sweep_run({"8"}, 100, 500000000), sweep_run({"16"}, 150, 900000000),
                sweep_run({"32"}, 180, 1700000000, false)};
  table.runs[0].metrics->peak_memory_bytes_per_ipu = {500000000, 400000000, 300000000};
  table.runs[1].metrics->peak_memory_bytes_per_ipu = {900000000, 800000000, 700000000};
  table.runs[2].metrics->peak_memory_bytes_per_ipu = {1700000000, 600000000};
  for (auto& run : table.runs)
    run.metrics->utilisation_per_ipu.resize(run.metrics->peak_memory_bytes_per_ipu.size());
  table.capacity_bytes = 1000000000;
  const auto html = sim::sweep_html(table);
  const std::string bars = svg_element(html, "sweep-memory-ipus");
  REQUIRE(!bars.empty());
  // Run 32 does not fit (its IPU0: 1.7 GB > 1 GB): both its bars are hollow.
  CHECK(count(bars, "<rect class=\"bar-fill\"") == 6);
  CHECK(count(bars, "<rect class=\"bar-over\"") == 2);
  CHECK(bars.find("<title>32 IPU0: 1,700,000,000 bytes at peak (micro_batch_size=32)</title>") !=
        std::string::npos);
  CHECK(bars.find("<title>32 IPU2") == std::string::npos);
  CHECK(count(bars, "fill=\"#f6d5d5\"") == 1);
  CHECK(bars.find(">capacity 1.000 GB</text>") != std::string::npos);
  // The fullest IPU's line chart and the Pareto chart shade the region over the capacity too.
  const std::string line = svg_element(html, "sweep-peak_memory_bytes_max-0");
  CHECK(count(line, "fill=\"#f6d5d5\"") == 1);
  CHECK(line.find(">capacity 1.000 GB</text>") != std::string::npos);
  CHECK(count(svg_element(html, "sweep-pareto"), "fill=\"#f6d5d5\"") == 1);
  CHECK(html.find("<ul class=\"overflow\"><li><b>micro_batch_size=32</b>: IPU0 needs 1.700 GB "
                  "of its 1.000 GB, over by 700,000,000 bytes (700.0 MB)</li>\n</ul>") !=
        std::string::npos);
  // Without a common capacity nothing is shaded, and the list gives the fullest IPU's peak.
  table.capacity_bytes = 0;
  const auto unshaded = sim::sweep_html(table);
  CHECK(unshaded.find("#f6d5d5\"/>") == std::string::npos);
  CHECK(unshaded.find("<li><b>micro_batch_size=32</b>: does not fit; its fullest IPU peaks at "
                      "1.700 GB</li>") != std::string::npos);
}

TEST_CASE("a sweep with more runs than a per-IPU chart can show says where they are") {
  sim::SweepPlotTable table;
  table.varied = {"pipeline.gradient_accumulation_count"};
  table.ipus = 1;
  for (int gac = 1; gac <= 49; ++gac)
    table.runs.push_back(sweep_run({std::to_string(gac)}, 100, 1000));
  const auto html = sim::sweep_html(table);
  CHECK(svg_element(html, "sweep-memory-ipus").empty());
  CHECK(html.find("49 runs are too many to draw per IPU (at most 48); the CSV's "
                  "peak_memory_bytes_ipuK columns hold them.") != std::string::npos);
}

TEST_CASE("the numeric section shows the check's fields and nothing when absent") {
  CHECK(sim::numeric_section(std::nullopt) == "");
  sim::NumericReport numeric;
  numeric.data = "synthetic";
  numeric.losses = {{2.5f, 2.1f}, {1.9f, 1.7f}};
  numeric.reference_losses = numeric.losses;
  numeric.bit_identical = true;
  const auto html = sim::numeric_section(numeric);
  CHECK(html.find("<td>bit_identical</td><td><span class=\"ok\">yes</span></td>") !=
        std::string::npos);
  CHECK(html.find("<td>max_abs_diff_loss</td><td>0</td>") != std::string::npos);
  CHECK(html.find("<td>losses</td><td>2 \u00d7 2 values</td>") != std::string::npos);
  CHECK(html.find("<td>mean_loss_per_update</td><td>[2.3, 1.8]</td>") != std::string::npos);
  CHECK(html.find("<svg id=\"numeric-mean_loss_per_update\"") != std::string::npos);
}

TEST_CASE("a 1f1b report draws its tasks to scale and has no step chart") {
  const auto run = testing::record(kTf1Config, {"pipeline.pipeline_schedule=1f1b"});
  const auto html = sim::html_report(run->report, run->timeline());
  CHECK(html.find("<svg id=\"steps\"") == std::string::npos);
  CHECK(html.find("<section id=\"pipeline-steps\">") == std::string::npos);
  CHECK(html.find("<title>F1 s0 on IPU0 \u00b7 cycles ") != std::string::npos);
  CHECK(!fetches_network(html));
}

TEST_CASE("the run page lists each stage's operations in an Operations Summary") {
  const auto run = testing::record(kTf1Config);
  const auto html = sim::html_report(run->report, run->timeline());
  CHECK(html.find("<section id=\"operations\">") != std::string::npos);
  CHECK(count(html, "<details><summary>Stage ") == 2);
  // Five dense layers, each a row whose operation and class are both "matmul".
  CHECK(count(html, "<td class=\"text\">matmul</td>") == 2 * 5);
  CHECK(html.find("<details><summary>Stage 0 on IPU0: 9 operations, forward 9,878 cycles, "
                  "backward 10,737 cycles</summary>") != std::string::npos);
}

TEST_CASE("the report names the overrides under the config's own description") {
  const auto plain = testing::record(kTf1Config);
  CHECK(sim::html_report(plain->report, plain->timeline()).find("Run with overrides") ==
        std::string::npos);
  const auto run = testing::record(
      kTf1Config, {"pipeline.gradient_accumulation_count=32", "pipeline.micro_batch_size=16"});
  const auto html = sim::html_report(run->report, run->timeline());
  CHECK(html.find("<p class=\"sub\">Run with overrides of the config (the description above is "
                  "the file's): --set pipeline.gradient_accumulation_count=32, --set "
                  "pipeline.micro_batch_size=16</p>") != std::string::npos);
}

namespace {

std::string lower_case(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return text;
}

}  // namespace

TEST_CASE("an inference run's page speaks of one inference pass and shows no weight update") {
  const auto run = testing::record(kTf1Config, {"pipeline.training=false"});
  const auto html = sim::html_report(run->report, run->timeline());
  write_file(build_dir() / "html_report_inference.html", html);
  // No legend entry, band, phase row, utilisation column or note of a weight update.
  CHECK(lower_case(html).find("weight update") == std::string::npos);
  CHECK(html.find("<div class=\"card\"><b>0.3426 ms</b><span>step (one inference pass), 455,616 "
                  "cycles</span></div>") != std::string::npos);
  CHECK(html.find("<dt>Micro-batches per pass (M)</dt><dd>16</dd>") != std::string::npos);
  CHECK(html.find("<dt>Samples per pass</dt><dd>512</dd>") != std::string::npos);
  CHECK(html.find("<dt>Training</dt><dd>no (inference)</dd>") != std::string::npos);
  // A training run keeps its weight update: the card, and a band in each of the five legends.
  const auto training = testing::record(kTf1Config);
  const auto trained = sim::html_report(training->report, training->timeline());
  CHECK(trained.find("<span>step (one weight update), ") != std::string::npos);
  CHECK(count(trained, "\"></i>weight update</span>") == 2 * 5);  // the box and the band
}

TEST_CASE("no page has a literal backtick") {
  const auto run = testing::record(kTf1Config);
  const auto page = sim::html_report(run->report, run->timeline());
  CHECK(page.find("<code>ipusim schedule</code> also prints code phases") != std::string::npos);
  const auto inference = testing::record(kTf1Config, {"pipeline.training=false"});
  sim::SweepPlotTable table;
  table.varied = {"pipeline.micro_batch_size"};
  table.runs = {sweep_run({"8"}, 100, 500000000), sweep_run({"16"}, 150, 900000000, false)};
  table.capacity_bytes = 800'000'000;
  sim::PlanPlot plan;
  plan.title = "one candidate";
  plan.capacity_bytes = 12'300'000;
  plan.points = {{"#1", 1, 1000, 12'000'000, true, 0}};
  plan.table = {{"Rank", "Samples/s"}, {"#1", "1,000"}};
  plan.evaluated = 2;
  plan.over_capacity = 1;
  plan.nearest_over_capacity = {{"splits=[\"dense64\"]", 1, 12'400'000}};
  for (const auto& html :
       {page, sim::html_report(inference->report, inference->timeline()),
        sim::compare_html({&run->report, &inference->report},
                          {&run->timeline(), &inference->timeline()}, {"train", "infer"}),
        sim::sweep_html(table), sim::plan_html(plan)})
    CHECK(html.find('`') == std::string::npos);
}

TEST_CASE("a comparison draws a run that does not fit hollow in every chart") {
  const auto grouped = testing::record_allowing_oom(kTf1Config, {kTightMemory});
  const auto sequential = testing::record_allowing_oom(
      kTf1Config, {kTightMemory, "pipeline.pipeline_schedule=sequential"});
  REQUIRE(!grouped->report.figures.fits_in_memory);
  REQUIRE(sequential->report.figures.fits_in_memory);
  const auto html =
      sim::compare_html({&grouped->report, &sequential->report},
                        {&grouped->timeline(), &sequential->timeline()}, {"grouped", "sequential"});
  // Grouped's throughput bar and both its IPUs' memory bars are outlines; sequential's solid.
  const auto speed = svg_element(html, "compare-throughput");
  CHECK(count(speed, "<rect class=\"bar-over\"") == 1);
  CHECK(count(speed, "<rect class=\"bar-fill\"") == 1);
  CHECK(speed.find("<rect class=\"bar-over\" x=\"170\" y=\"37\"") != std::string::npos);
  const auto memory = svg_element(html, "compare-memory");
  CHECK(count(memory, "<rect class=\"bar-over\"") == 2);
  CHECK(count(memory, "<rect class=\"bar-fill\"") == 2);
  CHECK(count(svg_element(html, "compare-pareto"), "<circle class=\"ring\"") == 1);
}

TEST_CASE("memory figures carry their unit and four figures beside the capacity") {
  const auto grouped = testing::record_allowing_oom(kTf1Config, {kTightMemory});
  const auto sequential = testing::record_allowing_oom(
      kTf1Config, {kTightMemory, "pipeline.pipeline_schedule=sequential"});
  const auto run = sim::html_report(sequential->report, sequential->timeline());
  CHECK(run.find("<div class=\"card\"><b>13.51 MB</b><span>peak memory of an IPU (99.0% of "
                 "13.64 MB)</span></div>") != std::string::npos);
  CHECK(run.find("<tr><th>IPU</th><th>Peak memory</th><th>Share of capacity</th><th>Peak "
                 "stash</th><th>In streaming memory</th><th>Fits</th></tr>\n<tr><td>IPU0</td><td>"
                 "13.51 MB</td>") != std::string::npos);
  // IPU1: 8,260,204 B allocated for the program, its micro-batch's 17,792 B between forward
  // and backward, and the loss's one-hot, 10 logits x 32 samples x 4 B = 1,280 B.
  CHECK(run.find("<td>IPU1</td><td>8.279 MB</td>") != std::string::npos);
  const auto compare =
      sim::compare_html({&grouped->report, &sequential->report},
                        {&grouped->timeline(), &sequential->timeline()}, {"grouped", "sequential"});
  CHECK(compare.find("<tr><td>Peak memory (fullest IPU)</td><td>13.92 MB</td><td>13.51 MB</td>"
                     "</tr>") != std::string::npos);
  CHECK(compare.find("<tr><td>Memory per IPU (capacity)</td><td>13.64 MB</td><td>13.64 MB</td>"
                     "</tr>") != std::string::npos);
  CHECK(compare.find("<tr><td>Peak stash per IPU</td><td>") != std::string::npos);
  for (const auto* html : {&run, &compare})
    CHECK(html->find("(bytes)</t") == std::string::npos);
  // Four figures tell a peak just under the capacity from the capacity itself.
  CHECK(sim::si_figures(12'255'690, "B", 4) == "12.26 MB");
  CHECK(sim::si_figures(12'300'000, "B", 4) == "12.30 MB");
  CHECK(sim::si_figures(999'960, "B", 4) == "1.000 MB");
  CHECK(sim::si_figures(512, "B", 4) == "512 B");
}

TEST_CASE("a plan page counts the candidates over capacity by the estimate and names the nearest") {
  sim::PlanPlot plot;
  plot.title = "two candidates";
  plot.capacity_bytes = 12'300'000;
  plot.points = {{"#1 a", 1, 1000, 12'000'000, true, 0}, {"#2 b", 2, 1100, 12'460'000, false, 1}};
  plot.table = {{"Rank", "Samples/s"}, {"#1", "1,000"}, {"#2", "1,100"}};
  plot.evaluated = 54;
  plot.over_capacity = 27;
  plot.nearest_over_capacity = {{"splits=[\"dense256\"] schedule=grouped gac=8", 1, 12'362'024}};
  const auto html = sim::plan_html(plot);
  CHECK(html.find("27 more were over capacity by the estimate and not replayed") !=
        std::string::npos);
  CHECK(html.find("<section id=\"plan-over-capacity\"><h2>Over capacity by the estimate</h2>\n"
                  "<p>27 of the 54 candidates evaluated on the cost model were over capacity by "
                  "the estimate, so they were not replayed and are in neither the chart nor the "
                  "table. The 1 nearest to fitting:</p>") != std::string::npos);
  CHECK(html.find("<tr><td class=\"text\">splits=[&quot;dense256&quot;] schedule=grouped "
                  "gac=8</td><td class=\"text\">IPU1</td><td>12.36 MB of 12.30 "
                  "MB</td><td>62,024</td></tr>") != std::string::npos);
  // A replayed candidate that does not fit is named by its fullest IPU.
  CHECK(html.find("<li><b>#2 b</b>: IPU1 needs 12.46 MB of its 12.30 MB, over by 160,000 bytes "
                  "(160.0 kB)</li>") != std::string::npos);
  plot.over_capacity = 0;
  CHECK(sim::plan_html(plot).find("over capacity by the estimate") == std::string::npos);
}

TEST_CASE("runs drawn close together on the Pareto chart share one label") {
  const auto run = testing::record(kTf1Config);
  const auto other =
      testing::record(kTf1Config, {"pipeline.pipeline_schedule=sequential"});  // another spot
  const auto html =
      sim::compare_html({&run->report, &other->report, &run->report, &run->report},
                        {&run->timeline(), &other->timeline(), &run->timeline(), &run->timeline()},
                        {"grouped", "sequential", "grouped again", "grouped once more"});
  const auto pareto = svg_element(html, "compare-pareto");
  CHECK(pareto.find(">runs 1, 3, 4</text>") != std::string::npos);
  CHECK(pareto.find(">2</text>") != std::string::npos);
  CHECK(pareto.find(">3</text>") == std::string::npos);
  CHECK(count(pareto, "<circle ") == 4);  // every run keeps its point and tooltip
}
