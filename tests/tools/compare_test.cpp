#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "sim/report/run_metrics.hpp"
#include "tests/tools/cli_support.hpp"

namespace {

using namespace ipusim::testing;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

// The line with each run of spaces made one space.
std::string squeeze(const std::string& line) {
  std::string out;
  for (char c : line) {
    if (c != ' ' || out.empty() || out.back() != ' ')
      out += c;
  }
  return out;
}

const std::string kGac2Error =
    "--gac 2: at /pipeline/gradient_accumulation_count: The number of iterations of the "
    "pipeline must be a multiple of 4, but it is 2. This number is gradient_accumulation_count; "
    "the grouped schedule with 2 stages runs 4 micro-batches at once (set "
    "pipeline.relaxed_divisibility to explore it anyway)";

}  // namespace

TEST_CASE("compare puts the grouped and interleaved schedules side by side") {
  const auto result = run_ipusim({"compare", kTf1Config, "--schedules", "grouped,interleaved"});
  CHECK(result.code == 0);
  CHECK(result.err.empty());
  CHECK(result.out ==
        "                                        grouped        interleaved\n"
        "Step                           1,227,062 cycles   1,257,226 cycles\n"
        "Step time                             0.9226 ms          0.9453 ms\n"
        "Throughput                    554,952 samples/s  541,637 samples/s\n"
        "Ramp-up                           83,052 cycles      39,766 cycles\n"
        "Main                             499,473 cycles     596,490 cycles\n"
        "Ramp-down                         41,642 cycles      18,075 cycles\n"
        "Weight update                    602,895 cycles     602,895 cycles\n"
        "Ramp overhead                              6.2%               3.3%\n"
        "Bubble                                    58.6%              60.5%\n"
        "Utilisation (mean of IPUs)                21.2%              20.7%\n"
        "Utilisation (least busy IPU)              15.4%              15.0%\n"
        "Peak memory (fullest IPU)              13.84 MB           13.64 MB\n"
        "Peak stash (fullest IPU)                0.62 MB            0.41 MB\n"
        "Fits in memory                              yes                yes\n"
        "Throughput per IPU            277,476 samples/s  270,818 samples/s\n"
        "Collectives                            0 cycles           0 cycles\n"
        "Wait for host input                    0 cycles           0 cycles\n"
        "Physical IPU of each IPU                   0, 1               0, 1\n"
        "IPU0 peak memory                       13.84 MB           13.64 MB\n"
        "IPU0 peak stash                         0.62 MB            0.41 MB\n"
        "IPU1 peak memory                        8.28 MB            8.28 MB\n"
        "IPU1 peak stash                         0.02 MB            0.02 MB\n"
        "fastest: grouped (1.02x the throughput of interleaved)\n");
}

// A figure added to metric_table() needs no edit of compare: its heading starts a row.
TEST_CASE("every metric column of the CSV is a row of compare's table, in the table's order") {
  const auto result = run_ipusim({"compare", kTf1Config, "--schedules", "grouped,interleaved"});
  REQUIRE(result.code == 0);
  std::size_t at = 0;
  for (const auto& column : ipusim::sim::metric_table()) {
    INFO(column.heading);
    at = result.out.find("\n" + column.heading + "  ", at);
    CHECK(at != std::string::npos);
  }
}

TEST_CASE("with three or more runs compare names the next fastest and the slowest") {
  const auto result =
      run_ipusim({"compare", kTf1Config, "--schedules", "grouped,interleaved,sequential,1f1b"});
  CHECK(result.code == 0);
  CHECK(result.out.substr(result.out.rfind("fastest:")) ==
        "fastest: 1f1b (1.01x the throughput of grouped, the next fastest; "
        "1.25x the throughput of sequential, the slowest)\n");
}

TEST_CASE("a --with that sets the schedule --schedules sets is refused, not run under its label") {
  const auto result =
      run_ipusim({"compare", kTf1Config, "--schedules", "grouped,1f1b", "--with",
                  "pipeline.gradient_accumulation_count=32;pipeline.pipeline_schedule=\"gpipe\""});
  CHECK(result.code == 2);
  CHECK(result.out.empty());
  CHECK(result.err ==
        "error: --with pipeline.gradient_accumulation_count=32;pipeline.pipeline_schedule="
        "\"gpipe\": sets pipeline.pipeline_schedule, which --schedules sets for every run: give "
        "the schedules in one place, --schedules or a --with each\n");
  // A --with of its own schedule, without --schedules, is a column like any other.
  const auto alone = run_ipusim(
      {"compare", kTf1Config, "--with", "pipeline.pipeline_schedule=\"gpipe\"", "--quiet"});
  CHECK(alone.code == 0);
}

TEST_CASE("variants given with --with are numbered columns, their overrides in a legend") {
  const auto result = run_ipusim(
      {"compare", kTf1Config, "--with", "pipeline.gradient_accumulation_count=32", "--with",
       "pipeline.gradient_accumulation_count=64;pipeline.micro_batch_size=16"});
  CHECK(result.code == 0);
  const auto text = lines_of(result.out);
  REQUIRE(text.size() > 3);
  CHECK(text[0] == "run 1: pipeline.gradient_accumulation_count=32");
  CHECK(text[1] == "run 2: pipeline.gradient_accumulation_count=64;pipeline.micro_batch_size=16");
  CHECK(squeeze(text[2]) == " run 1 run 2");
  CHECK(text.back() == "fastest: run 1 (1.39x the throughput of run 2)");
  const auto step = result.out.find("\nStep ");
  CHECK(squeeze(result.out.substr(step + 1, result.out.find('\n', step + 1) - step - 1)) ==
        "Step 1,841,798 cycles 2,551,188 cycles");
}

TEST_CASE("beside a training run an inference pass has no weight update") {
  const auto result = run_ipusim({"compare", kTf1Config, "--with", "pipeline.training=true",
                                  "--with", "pipeline.training=false"});
  CHECK(result.code == 0);
  const auto row = result.out.find("\nWeight update ");
  REQUIRE(row != std::string::npos);
  CHECK(squeeze(result.out.substr(row + 1, result.out.find('\n', row + 1) - row - 1)) ==
        "Weight update 602,895 cycles none (inference)");
  // With no training run there is no weight-update row at all, as in a run's report.
  const auto passes = run_ipusim({"compare", kTf1Config, "--schedules", "grouped,interleaved",
                                  "--set", "pipeline.training=false"});
  CHECK(passes.code == 0);
  CHECK(passes.out.find("\nRamp-down ") != std::string::npos);
  CHECK(passes.out.find("Weight update") == std::string::npos);
}

TEST_CASE("a run invalid for its schedule is listed under the table and the others still run") {
  const auto result =
      run_ipusim({"compare", kTf1Config, "--schedules", "grouped,interleaved", "--gac", "2"});
  CHECK(result.code == 0);
  CHECK(result.out.substr(0, result.out.find('\n')) ==
        "                                    interleaved");
  CHECK(result.out.find("\ninvalid: grouped: " + kGac2Error + "\n") != std::string::npos);
  CHECK(result.out.find("fastest") == std::string::npos);
}

TEST_CASE("compare stops at a config file that is not there, before any run") {
  const auto html = fresh_output("compare_test", "missing.html");
  const auto result = run_ipusim({"compare", "nosuch.json", kTf1Config, "--html", html});
  CHECK(result.code == 2);
  CHECK(result.out.empty());
  CHECK(result.err ==
        "error: nosuch.json: cannot read config file 'nosuch.json': No such file or directory\n");
  CHECK_FALSE(std::filesystem::exists(html));
}

TEST_CASE("when no run is valid compare fails with the first run's config error") {
  const auto result = run_ipusim({"compare", kTf1Config, "--gac", "2"});
  CHECK(result.code == 2);
  CHECK(result.out.empty());
  CHECK(result.err == "error: " + kGac2Error + "\n");
}

TEST_CASE("compare writes a CSV with the sweep's metric columns and a JSON report per run") {
  const auto csv = fresh_output("compare_test", "compare.csv");
  const auto json = fresh_output("compare_test", "compare.json");
  const auto result = run_ipusim({"compare", kTf1Config, "--schedules", "grouped,interleaved",
                                  "--quiet", "--csv", csv, "--json", json});
  CHECK(result.code == 0);
  CHECK(result.out.empty());
  std::ifstream in(csv);
  std::string header;
  std::string first;
  std::getline(in, header);
  std::getline(in, first);
  CHECK(header ==
        "label,config,schedule,with,step_cycles,step_seconds,throughput_samples_per_second,"
        "ramp_up_cycles,main_cycles,ramp_down_cycles,weight_update_cycles,ramp_overhead,"
        "bubble_fraction,utilisation_mean,utilisation_min,peak_memory_bytes_max,"
        "peak_stash_bytes_max,fits_in_memory,throughput_per_ipu,collective_cycles,"
        "input_wait_cycles,utilisation_ipu0,utilisation_ipu1,peak_memory_bytes_ipu0,"
        "peak_memory_bytes_ipu1,error");
  CHECK(first ==
        "grouped,configs/tf1_mnist_2ipu.json,grouped,,1227062,0.000922603008,"
        "554951.584,83052,499473,41642,602895,0.062165,0.586316,0.212465,0.153677,13843840,"
        "620544,true,277475.792,0,0,0.271254,0.153677,13843840,8279276,");
  const auto report = nlohmann::json::parse(std::ifstream(json));
  REQUIRE(report["runs"].size() == 2);
  CHECK(report["runs"][1]["label"] == "interleaved");
  CHECK(report["runs"][1]["report"]["step_cycles"] == 1257226);
}

TEST_CASE("compare has help with an example") {
  const auto help = run_ipusim({"compare", "--help"});
  CHECK(help.code == 0);
  CHECK(help.out.find("Example:\n  ipusim compare") != std::string::npos);
}

TEST_CASE("compare --html stacks every run's pipeline chart on one time axis") {
  const auto html = fresh_output("compare_test", "compare.html");
  const auto result = run_ipusim({"compare", kTf1Config, "--schedules", "grouped,interleaved,1f1b",
                                  "--html", html, "--quiet"});
  REQUIRE(result.code == 0);
  std::ifstream in(html);
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(page.find("<svg id=\"gantt\"") != std::string::npos);
  CHECK(page.find("<svg id=\"gantt\"", page.find("<svg id=\"gantt\"") + 1) == std::string::npos);
  for (const char* label : {"grouped", "interleaved", "1f1b"})
    CHECK(page.find(label) != std::string::npos);
  CHECK(page.find("src=\"http") == std::string::npos);
  // Its table of figures has a row per metric column, as the text table has.
  for (const auto& column : ipusim::sim::metric_table())
    CHECK(page.find("<tr><td>" + column.heading + "</td>") != std::string::npos);
}

TEST_CASE("compare refuses an unknown schedule with the nearest name, before any run") {
  const auto csv = scratch("typo.csv");
  const auto result = run_ipusim(
      {"compare", kTf1Config, "--schedules", "grouped,zerobubble", "--quiet", "--csv", csv});
  CHECK(result.code == 1);
  CHECK(result.out.empty());
  CHECK(result.err ==
        "error: --schedules: 'zerobubble' is not a schedule: expected 'grouped', 'interleaved', "
        "'sequential', 'gpipe', '1f1b', 'interleaved_1f1b' or 'zero_bubble_h1'; did you mean "
        "'zero_bubble_h1'?\n");
  CHECK_FALSE(std::ifstream(csv).good());
}

namespace {

const std::string kGptConfig = "configs/gpt_tiny_2ipu.json";

// A run's JSON report in compare's --json file, by label.
nlohmann::json compared_report(const std::string& json_path, const std::string& label) {
  std::ifstream in(json_path);
  const auto document = nlohmann::json::parse(in);
  for (const auto& run : document.at("runs")) {
    if (run.at("label") == label)
      return run;
  }
  FAIL("no run labelled " << label);
  return {};
}

// The step cycles `run --json` reports with these arguments after the config.
std::int64_t run_step_cycles(const std::vector<std::string>& extra) {
  const auto json = fresh_output("compare_test", "relayout_run.json");
  std::vector<std::string> args = {"run", kGptConfig, "--no-numeric", "--quiet", "--json", json};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto result = run_ipusim(args);
  REQUIRE(result.code == 0);
  std::ifstream in(json);
  return nlohmann::json::parse(in).at("step_cycles");
}

// compare --relayout of gpt_tiny with `schedules`: its text, and its --json file.
std::pair<std::string, std::string> relaid_run(const std::string& schedules) {
  const auto json = fresh_output("compare_test", "relayout.json");
  const auto result =
      run_ipusim({"compare", kGptConfig, "--schedules", schedules, "--relayout", "--json", json});
  REQUIRE(result.code == 0);
  return {result.out, json};
}

}  // namespace

TEST_CASE("a schedule that refuses the config's layout is listed with the flag that relays it") {
  const auto result = run_ipusim({"compare", kGptConfig, "--schedules", "grouped,1f1b"});
  CHECK(result.code == 0);
  CHECK(result.out.find(
            "\ninvalid: 1f1b: " + kGptConfig +
            ": at /pipeline/device_mapping: the 1f1b schedule runs one stage per IPU, but stages "
            "0 and 2 are both on IPU 0 (grouped and sequential run several stages on one IPU, "
            "and so does interleaved_1f1b with stage k on IPU k mod the IPU count); --relayout "
            "runs it on 2 stages, stage k on IPU k mod 2, split as plan finds best\n") !=
        std::string::npos);
}

TEST_CASE("compare --relayout runs 1f1b on one stage per IPU, split as fast as any split of it") {
  const auto [out, json] = relaid_run("grouped,1f1b");
  const auto relaid = compared_report(json, "1f1b");
  const std::string flags = relaid.at("relayout");
  CHECK(out.find("\nrelaid out: 1f1b: " + flags + "\n") != std::string::npos);
  CHECK(flags.find(" --set 'pipeline.device_mapping=[0,1]'") != std::string::npos);
  CHECK(compared_report(json, "grouped").count("relayout") == 0);
  // Every two-stage split, run one by one: none is faster than the one --relayout picked.
  std::int64_t best = std::numeric_limits<std::int64_t>::max();
  const auto layers = std::vector<std::string>{"embeddings",       "block1.ln1",
                                               "block1.attention", "block1.residual1",
                                               "block1.ln2",       "block1.mlp_up",
                                               "block1.mlp_down",  "block1.residual2",
                                               "block2.ln1",       "block2.attention",
                                               "block2.residual1", "block2.ln2",
                                               "block2.mlp_up",    "block2.mlp_down",
                                               "block2.residual2", "ln_f",
                                               "lm_head",          "loss"};
  for (const auto& cut : layers)
    best = std::min(best, run_step_cycles({"--schedule", "1f1b", "--splits", cut, "--set",
                                           "pipeline.device_mapping=[0,1]"}));
  CHECK(relaid.at("report").at("step_cycles").get<std::int64_t>() == best);
}

TEST_CASE("compare --relayout gives interleaved_1f1b two stages an IPU, stage k on IPU k mod 2") {
  const auto relaid =
      compared_report(relaid_run("interleaved_1f1b").second, "gpt_tiny interleaved_1f1b");
  const std::string flags = relaid.at("relayout");
  const auto set_at = flags.find(" --set 'pipeline.device_mapping=[0,1,0,1]'");
  REQUIRE(set_at != std::string::npos);
  // The flags it prints run the same program.
  const std::string splits =
      flags.substr(std::string("--splits ").size(), set_at - std::string("--splits ").size());
  CHECK(std::count(splits.begin(), splits.end(), ',') == 2);
  CHECK(run_step_cycles({"--schedule", "interleaved_1f1b", "--splits", splits, "--set",
                         "pipeline.device_mapping=[0,1,0,1]"}) ==
        relaid.at("report").at("step_cycles").get<std::int64_t>());
}
