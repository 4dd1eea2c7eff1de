// The compare, sweep, plan and run pages as a reader at 1,400 px sees them in headless
// Chromium: no console errors, every table inside the window (wide ones scroll in their own
// box), runs that do not fit drawn hollow, pan and zoom that reacts to "+". Each test also
// screenshots its page; tools/screenshots copies those into tools/docs for the README.

#include <catch2/catch.hpp>
#include <cmath>

#include "sim/core/format.hpp"
#include "sim/html/html_report.hpp"
#include "tests/sim/html/chromium.hpp"
#include "tests/sim/report/report_fixture.hpp"

using namespace ipusim;
using namespace ipusim::testing;

namespace {

const std::vector<std::string>& seven_schedules() {
  static const std::vector<std::string> names = {"grouped",       "interleaved", "sequential",
                                                 "1f1b",          "gpipe",       "interleaved_1f1b",
                                                 "zero_bubble_h1"};
  return names;
}

std::vector<std::unique_ptr<RecordedRun>> tf1_runs(const std::vector<std::string>& schedules,
                                                   const std::vector<std::string>& extra = {}) {
  std::vector<std::unique_ptr<RecordedRun>> runs;
  for (const auto& name : schedules) {
    std::vector<std::string> overrides = {"pipeline.pipeline_schedule=" + name, kTightMemory};
    overrides.insert(overrides.end(), extra.begin(), extra.end());
    runs.push_back(record_allowing_oom(kTf1Config, overrides));
  }
  return runs;
}

// The fit checks every page must pass at 1,400 px.
void check_fits_1400(const Probe& probe) {
  INFO(probe.lines);
  CHECK(probe.console_errors.empty());
  std::istringstream lines(probe.lines);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string name;
    std::string value;
    words >> name >> value;
    if (name == "page" || name == "tables")
      CHECK(std::stoi(value) <= 1400);
    if (name == "loose" || name == "hidden" || name == "misaligned")
      CHECK(value == "0");
  }
}

}  // namespace

TEST_CASE("a comparison of seven schedules fits 1,400 px and draws the runs that do not fit hollow",
          "[browser]") {
  require_chromium();
  // interleaved_1f1b interleaves two stages an IPU: the MLP cut into four, on IPUs 0, 1, 0, 1.
  auto runs = tf1_runs({"grouped", "interleaved", "sequential", "1f1b", "gpipe"});
  runs.push_back(std::move(tf1_runs({"interleaved_1f1b"}, kTf1FourStages).front()));
  runs.push_back(std::move(tf1_runs({"zero_bubble_h1"}).front()));
  std::vector<const sim::RunReport*> reports;
  std::vector<const sim::Timeline*> timelines;
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    reports.push_back(&runs[i]->report);
    timelines.push_back(&runs[i]->timeline());
    labels.push_back(seven_schedules()[i]);
  }
  const auto html = sim::compare_html(reports, timelines, labels);
  const fs::path page = build_dir() / "compare_seven.html";
  write_file(page, html);

  const auto probe = probe_page(page, html);
  check_fits_1400(probe);
  CHECK(probe.lines.find("zoom translate(-752 0) scale(2 1)") != std::string::npos);
  // Every schedule but sequential and interleaved_1f1b overflows IPU0: sequential holds one
  // micro-batch where the others hold two or more, and interleaved_1f1b's IPU0 holds stages 0
  // and 2 of four (12.6 MB). Those five are hollow in every chart: a ring each, and their
  // throughput bar and both IPUs' memory bars outlined. Grouped's IPU0 holds 3 x 206,848 B of
  // stage 0.
  const auto dom = open_in_chromium(page, "--dump-dom").dom;
  CHECK(count(dom, "<circle class=\"ring\"") == 5);
  CHECK(count(dom, "class=\"bar-over\"") == 5 * 3);
  CHECK(dom.find("<li><b>grouped</b>: IPU0 needs 13.92 MB of its 13.64 MB, over by "
                 "280,640 bytes (280.6 kB)</li>") != std::string::npos);
  CHECK(dom.find("<li><b>sequential</b>") == std::string::npos);
  CHECK(screenshot(page, "compare.png", 830, "memory-speed").empty());
  CHECK(screenshot(page, "compare-table.png", 800, "figures").empty());
}

TEST_CASE("a sweep page draws a Pareto chart with rings and fits 1,400 px", "[browser]") {
  require_chromium();
  sim::SweepPlotTable table;
  table.varied = {"pipeline.gradient_accumulation_count", "pipeline.pipeline_schedule"};
  table.ipus = 2;
  table.capacity_bytes = 13'640'000;  // kTightMemory
  for (const int gac : {8, 16, 32, 64}) {
    const auto runs = tf1_runs({"grouped", "sequential"},
                               {"pipeline.gradient_accumulation_count=" + std::to_string(gac)});
    for (std::size_t i = 0; i < runs.size(); ++i) {
      table.runs.push_back(
          {{{std::to_string(gac), double(gac)}, {i == 0 ? "grouped" : "sequential", std::nullopt}},
           sim::run_metrics(runs[i]->report)});
    }
  }
  const auto html = sim::sweep_html(table);
  const fs::path page = build_dir() / "sweep_browser.html";
  write_file(page, html);
  check_fits_1400(probe_page(page, html));
  const auto dom = open_in_chromium(page, "--dump-dom").dom;
  // Grouped does not fit at any GAC: a ring in each of the four charts.
  const auto pareto = dom.substr(dom.find("<svg id=\"sweep-pareto\""));
  CHECK(count(pareto.substr(0, pareto.find("</svg>")), "<circle class=\"ring\"") == 4);
  // Its IPU0 is the bar past the capacity; both its bars are hollow in each of the four groups.
  const auto bars = dom.substr(dom.find("<svg id=\"sweep-memory-ipus\""));
  CHECK(count(bars.substr(0, bars.find("</svg>")), "class=\"bar-over\"") == 8);
  CHECK(count(bars.substr(0, bars.find("</svg>")), "class=\"bar-fill\"") == 8);
  CHECK(screenshot(page, "sweep.png", 2300).empty());
}

TEST_CASE("a plan page fits 1,400 px and draws a candidate that does not fit as a ring",
          "[browser]") {
  require_chromium();
  sim::PlanPlot plot;
  plot.title = "four made-up candidates";
  plot.capacity_bytes = 12'300'000;
  plot.table = {{"Rank", "dense layers per IPU", "Samples/s", "Peak memory per IPU", "Fits"}};
  plot.right_aligned = {false, false, true, false, false};
  const std::vector<std::tuple<double, std::int64_t, bool>> candidates = {
      {1'179'805, 12'100'000, true},
      {1'136'342, 12'000'000, true},
      {978'047, 11'700'000, true},
      {1'250'000, 12'600'000, false}};
  int rank = 0;
  for (const auto& [throughput, peak, fits] : candidates) {
    ++rank;
    plot.points.push_back({"#" + std::to_string(rank), rank, throughput, peak, fits, 1});
    plot.table.push_back({"#" + std::to_string(rank), "2,3",
                          sim::with_commas(std::llround(throughput)), sim::si(double(peak), "B"),
                          fits ? "yes" : "no"});
  }
  const auto html = sim::plan_html(plot);
  CHECK(html.find("<li><b>#4</b>: IPU1 needs 12.60 MB of its 12.30 MB, over by "
                  "300,000 bytes (300.0 kB)</li>") != std::string::npos);
  const fs::path page = build_dir() / "plan_browser.html";
  write_file(page, html);
  check_fits_1400(probe_page(page, html));
  const auto dom = open_in_chromium(page, "--dump-dom").dom;
  CHECK(count(dom, "<circle class=\"ring\"") == 1);
  // Made-up candidates: not for the README, which shows a real plan.
  CHECK(screenshot(page, "plan.png", 900, "", false).empty());
}

TEST_CASE("the run page's zoomed views, pan and zoom and tables work at 1,400 px", "[browser]") {
  require_chromium();
  const auto run = record(kTf1Config);
  const auto html = sim::html_report(run->report, run->timeline());
  const fs::path page = build_dir() / "run_browser.html";
  write_file(page, html);
  const auto probe = probe_page(page, html);
  check_fits_1400(probe);
  CHECK(probe.lines.find("zoom translate(-752 0) scale(2 1)") != std::string::npos);
  // Ctrl+wheel zooms on to 2.5x; the drag then pans, so the shift is not the wheel's alone.
  CHECK(probe.lines.find("after translate(") != std::string::npos);
  CHECK(probe.lines.find(" scale(2.5 1)") != std::string::npos);
  // Keys: 0 shows the whole step; + doubles about the middle (the plot is 1,268 wide from
  // x = 118, so the shift is -118 - 634); ArrowRight moves an eighth further (158.5).
  CHECK(probe.lines.find("key 0 translate(0 0) scale(1 1)\n") != std::string::npos);
  CHECK(probe.lines.find("key + translate(-752 0) scale(2 1)\n") != std::string::npos);
  CHECK(probe.lines.find("key ArrowRight translate(-910.5 0) scale(2 1)") != std::string::npos);
  const auto dom = open_in_chromium(page, "--dump-dom").dom;
  for (const char* id : {"zoom-ramp-up", "zoom-main", "zoom-ramp-down"})
    CHECK(dom.find(std::string("<svg id=\"") + id + "\"") != std::string::npos);
  // One main period of a grouped tf1 step: B2 and F3 on IPU1, B1 and F4 on IPU0 (in part).
  const auto main = dom.substr(dom.find("<svg id=\"zoom-main\""));
  CHECK(main.substr(0, main.find("</svg>")).find(">F4</text>") != std::string::npos);
  CHECK(screenshot(page, "pipeline.png", 700, "pipeline").empty());
  CHECK(screenshot(page, "pipeline-zoom.png", 960, "pipeline-zoom").empty());
}

namespace {

// Clicks "+" three times (8x about the middle), then nine more (4096x, the most), and after
// each reports the to-scale chart's tick labels within the plot, cycles then ms, and its box
// labels; "left" and "right" say how far the first and last box label reach.
const char* const kZoomScript =
    "<script>(function(){var f=document.querySelector('.gantt-frame[data-plot-x]'),"
    "s=f.querySelector('svg'),b=f.querySelector('.pz-in'),L=+f.dataset.plotX,"
    "W=+f.dataset.plotWidth,r=[];"
    "function texts(q,keep){return [].slice.call(s.querySelectorAll(q)).filter(keep)"
    ".map(function(t){return t.textContent}).join(' ')}"
    "function inside(t){var x=+t.getAttribute('x');return x>=L&&x<=L+W}"
    "function report(){r.push(f.querySelector('.pz-k').textContent);"
    "r.push('cycles '+texts('g.pz-ticks text',function(t){return inside(t)&&"
    "t.getAttribute('y')=='13'}));"
    "r.push('ms '+texts('g.pz-ticks text',function(t){return inside(t)&&"
    "t.getAttribute('y')!='13'}));"
    "r.push('boxes '+texts('g.pz-labels text',function(){return true}));"
    "var cut=0;s.querySelectorAll('g.pz-labels text').forEach(function(t){var c=t.getBBox();"
    "if(c.x<L-0.5||c.x+c.width>L+W+0.5)cut++});r.push('cut '+cut)}"
    "for(var i=0;i<3;i++)b.click();report();for(i=0;i<9;i++)b.click();report();"
    "var p=document.createElement('pre');p.id='probe';p.textContent=r.join('\\n');"
    "document.body.appendChild(p);})();</script>";

}  // namespace

TEST_CASE("zooming the run page's to-scale chart redraws its axes and box labels", "[browser]") {
  require_chromium();
  // One repeat, and a host call without its 450 µs a weight tensor: the step ends with the
  // call's whole 10 µs, which puts the main phase's steady state at 8x about the middle.
  const auto run =
      record(kTf1Config, {"pipeline.repeat_count=1", "hardware.host_call.per_tensor=0s"});
  const auto html = sim::html_report(run->report, run->timeline());
  const fs::path page = build_dir() / "run_zoom.html";
  write_file(page, html);
  const auto probe = run_in_page(page, html, kZoomScript);
  INFO(probe.lines);
  CHECK(probe.console_errors.empty());
  // At 8x about the middle: eight cycle ticks, six ms ticks, and every box in view labelled in
  // full, none cut by the chart's edges.
  CHECK(probe.lines.find("8.0x\ncycles 290,000 300,000 310,000 320,000 330,000 340,000 350,000 "
                         "360,000\nms 0.22 0.23 0.24 0.25 0.26 0.27\n"
                         "boxes B6 F9 B7 F10 B7 F8 B8 F9 B9 F10\ncut 0\n") == 0);
  // At the most, 4096x, ticks 20 cycles and 20 ns apart, and the one box in view labelled.
  CHECK(probe.lines.find("4096.0x\ncycles 320,200 320,220 320,240 320,260 320,280 320,300 "
                         "320,320 320,340\nms 0.24076 0.24078 0.2408 0.24082 0.24084 "
                         "0.24086\nboxes F9\ncut 0") != std::string::npos);
}
