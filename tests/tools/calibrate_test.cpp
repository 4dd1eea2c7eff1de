// `ipusim calibrate` on measurements made by `ipusim run` with hidden parameters, as a user
// would make them on IPUs.

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sim/core/format.hpp"
#include "tests/scratch_folder.hpp"
#include "tests/tools/cli_support.hpp"

namespace {

namespace fs = std::filesystem;
using namespace ipusim::testing;

// The fitted formula's parameters: these cases price by it (the chips' presets plan).
const std::string kFitted = "hardware.operations.pricing=fitted";
const std::vector<std::string> kHidden = {kFitted,
                                          "hardware.operations.compute_set_cycles=173",
                                          "hardware.operations.exchange_bytes_per_tile_cycle=3.1",
                                          "hardware.operations.matmul.efficiency=0.52",
                                          "hardware.operations.elementwise.efficiency=0.27",
                                          "hardware.operations.reduction.efficiency=0.08"};

// `ipusim run --json` of `config` with `sets`; fails the test when the run does.
nlohmann::json run_json(const std::string& config, const std::vector<std::string>& sets) {
  const std::string json = scratch("run.json");
  std::vector<std::string> args = {"run", config, "--no-numeric", "--quiet", "--json", json};
  for (const auto& set : sets) {
    args.push_back("--set");
    args.push_back(set);
  }
  const auto result = run_ipusim(args);
  REQUIRE(result.code == 0);
  return nlohmann::json::parse(read_file(json));
}

// One variant's measurements with the hidden parameters, as JSON entries: each stage's passes
// (the sums of its operations' cycles) and the step.
void measure(const std::vector<std::string>& set, nlohmann::json& entries,
             const std::vector<std::string>& hidden = kHidden) {
  auto sets = set;
  sets.insert(sets.end(), hidden.begin(), hidden.end());
  const auto report = run_json(kTf1Config, sets);
  std::map<int, std::pair<std::int64_t, std::int64_t>> stages;
  for (const auto& op : report["operations"]) {
    auto& [forward, backward] = stages[op["stage"].get<int>()];
    forward += op["forward_cycles"].get<std::int64_t>();
    backward += op["backward_cycles"].get<std::int64_t>();
  }
  for (const auto& [stage, cycles] : stages)
    entries.push_back({{"set", set},
                       {"stage", stage},
                       {"forward_cycles", cycles.first},
                       {"backward_cycles", cycles.second}});
  entries.push_back({{"set", set}, {"step_cycles", report["step_cycles"]}});
}

nlohmann::json measurements() {
  nlohmann::json entries = nlohmann::json::array();
  measure({"pipeline.micro_batch_size=8"}, entries);
  measure({}, entries);
  measure({"pipeline.micro_batch_size=256", "pipeline.gradient_accumulation_count=8"}, entries);
  return {{"measurements", entries}};
}

// The same measurements as CSV rows.
std::string as_csv(const nlohmann::json& measured) {
  std::string csv = "set,stage,forward_cycles,backward_cycles,step_cycles\n";
  for (const auto& entry : measured["measurements"]) {
    std::string set;
    for (const auto& item : entry["set"])
      set += (set.empty() ? "" : ";") + item.get<std::string>();
    const auto cell = [&](const char* key) {
      return entry.contains(key) ? entry[key].dump() : std::string();
    };
    csv += set + "," + cell("stage") + "," + cell("forward_cycles") + "," +
           cell("backward_cycles") + "," + cell("step_cycles") + "\n";
  }
  return csv;
}

// The first line of `text` holding `first` and, after it, `then`; empty when there is none.
std::string line_of(const std::string& text, const std::string& first,
                    const std::string& then = "") {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const auto at = line.find(first);
    if (at != std::string::npos && line.find(then, at) != std::string::npos)
      return line;
  }
  return "";
}

}  // namespace

TEST_CASE("calibrate fits a CSV of measurements and writes a preset that reproduces the fit") {
  const std::string csv = write("tf1.csv", as_csv(measurements()));
  const std::string preset = scratch("calibrated.json");
  const auto result =
      run_ipusim({"calibrate", kTf1Config, "--measured", csv, "-o", preset, "--set", kFitted});
  INFO(result.err);
  REQUIRE(result.code == 0);
  CHECK(result.out.rfind("ipusim calibrate: " + kTf1Config + " against " + csv +
                             ": 15 measurement(s) of 3 config variant(s), ",
                         0) == 0);
  CHECK(result.out.find("Root mean square error: ") != std::string::npos);
  CHECK(result.out.find("% before, 0.00% after\n") != std::string::npos);
  CHECK(line_of(result.out, "conv.efficiency ").find("0.3441  unconstrained") != std::string::npos);
  CHECK(result.out.find("Wrote " + preset +
                        ": list it in the config's include, after the hardware preset.\n") !=
        std::string::npos);
  const auto fitted = nlohmann::json::parse(read_file(preset))["hardware"]["operations"];
  CHECK(fitted["matmul"]["efficiency"].get<double>() == Approx(0.52).epsilon(0.01));
  CHECK(fitted["compute_set_cycles"].get<double>() == Approx(173).epsilon(0.01));

  // The step the config with the preset included runs is the After column of the step's row.
  const std::string wrapper = write(
      "tf1_calibrated.json",
      nlohmann::json({{"include", {fs::absolute(kTf1Config).string(), "calibrated.json"}}}).dump());
  const auto step = run_json(wrapper, {kFitted})["step_cycles"].get<std::int64_t>();
  const std::string line = line_of(result.out, "(as configured)", " step ");
  CHECK(line.find("  " + ipusim::sim::with_commas(step) + "  ") != std::string::npos);
}

TEST_CASE("calibrate reads the JSON form of the measurements as it reads the CSV form") {
  const auto measured = measurements();
  const std::string csv = write("same.csv", as_csv(measured));
  const std::string json = write("same.json", measured.dump(2));
  const auto from_csv = run_ipusim({"calibrate", kTf1Config, "--measured", csv, "--set", kFitted});
  const auto from_json =
      run_ipusim({"calibrate", kTf1Config, "--measured", json, "--set", kFitted});
  REQUIRE(from_csv.code == 0);
  REQUIRE(from_json.code == 0);
  const auto body = [](const std::string& out) { return out.substr(out.find('\n')); };
  CHECK(body(from_csv.out) == body(from_json.out));
}

TEST_CASE("calibrate names the measurement at fault, with exit code 2") {
  const std::string stage = write("stage.csv",
                                  "set,stage,forward_cycles,backward_cycles,step_cycles\n"
                                  "pipeline.micro_batch_size=8,3,1000,,\n");
  auto result = run_ipusim({"calibrate", kTf1Config, "--measured", stage});
  CHECK(result.code == 2);
  CHECK(result.out.empty());
  CHECK(result.err == "error: " + stage +
                          ": line 2, column stage: stage 3 does not exist: the config variant has "
                          "2 stage(s), 0 to 1\n");
  const std::string set = write("set.json", R"({"measurements": [
      {"set": ["pipeline.splits=[\"dense256\", \"nowhere\"]"], "step_cycles": 1000}]})");
  result = run_ipusim({"calibrate", kTf1Config, "--measured", set});
  CHECK(result.code == 2);
  CHECK(result.err ==
        "error: " + set +
            ": at /measurements/0/set: its config variant is not valid: --set "
            "pipeline.splits=[\"dense256\", \"nowhere\"]: at /pipeline/splits/1: no layer has "
            "the id 'nowhere'\n");
}

TEST_CASE("calibrate checks its output before reading anything and needs --measured") {
  auto result =
      run_ipusim({"calibrate", kTf1Config, "--measured", "absent.csv", "-o", "/dev/null"});
  CHECK(result.code == 2);
  CHECK(result.err ==
        "error: /dev/null: cannot write the -o output: it is a character device; give the path "
        "of a regular file or of a new one\n");
  result = run_ipusim({"calibrate", kTf1Config});
  CHECK(result.code == 1);
  CHECK(result.err == "error: --measured is required\n");
}

TEST_CASE("a fit whose least replays exceed what one command replays is refused before any") {
  // 8 tasks a micro-batch x 2^25 micro-batches = 268,435,456 tasks a replay; the variant is
  // replayed once to check it fits and 14 times more at least (the rank check's start and a
  // difference for each of the 10 parameters, the fit's start, a trial, the configured
  // predictions): 15 x 268,435,456 = 4.03e9.
  const std::string csv = write("big.csv",
                                "set,stage,forward_cycles,backward_cycles,step_cycles\n"
                                "pipeline.gradient_accumulation_count=33554432,,,,1000000000\n");
  const auto result = run_ipusim({"calibrate", kTf1Config, "--measured", csv});
  CHECK(result.code == 2);
  CHECK(result.err ==
        "error: --measured: the fit replays at least about 4e+09 tasks (each variant once to "
        "check it fits, and each variant with a measured step 14 times more, 2.7e+08 tasks a "
        "time), more than the 2,000,000,000 tasks one command replays; measure steps of variants "
        "with a lower gradient_accumulation_count\n");
}

TEST_CASE("calibrate fits plan_scale under planned pricing, the chips' default") {
  // Products and vector operations as Poplar plans them, 1.7 times poplibs' estimate; the loss
  // by the formula, its reduction at 0.08 of the vector unit's peak.
  nlohmann::json entries = nlohmann::json::array();
  const std::vector<std::string> hidden = {"hardware.operations.plan_scale=1.7",
                                           "hardware.operations.reduction.efficiency=0.08"};
  measure({"pipeline.micro_batch_size=8"}, entries, hidden);
  measure({}, entries, hidden);
  const std::string json =
      write("planned.json", nlohmann::json({{"measurements", entries}}).dump());
  const std::string preset = scratch("planned_preset.json");
  const auto result = run_ipusim({"calibrate", kTf1Config, "--measured", json, "-o", preset});
  INFO(result.out << result.err);
  REQUIRE(result.code == 0);
  CHECK(result.out.find("% before, 0.00% after\n") != std::string::npos);
  // What Poplar plans is none of the classes' business: matmul's efficiency acts on nothing.
  CHECK(line_of(result.out, "matmul.efficiency ").find("unconstrained") != std::string::npos);
  const auto fitted = nlohmann::json::parse(read_file(preset))["hardware"]["operations"];
  CHECK(fitted["plan_scale"].get<double>() == Approx(1.7).epsilon(0.01));
  CHECK(fitted["reduction"]["efficiency"].get<double>() == Approx(0.08).epsilon(0.01));
}
