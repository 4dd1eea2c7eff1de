#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/tools/cli_support.hpp"

namespace {

using ipusim::testing::run_ipusim;

std::string output(const std::string& name) {
  const auto dir = std::filesystem::path(IPUSIM_BINARY_DIR) / "plan_test";
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::filesystem::remove(path);
  return path.string();
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

// The cells of a CSV line without quotes (the planner's numeric cells have none).
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  bool quoted = false;
  for (char c : line) {
    if (c == '"')
      quoted = !quoted;
    else if (c == ',' && !quoted)
      out.push_back(std::exchange(cell, ""));
    else
      cell += c;
  }
  out.push_back(cell);
  return out;
}

}  // namespace

TEST_CASE("plan writes a best config that run accepts with the planner's throughput") {
  const auto best = output("best.json");
  const auto csv = output("plan.csv");
  const auto plan = run_ipusim({"plan", "configs/tf1_mnist_2ipu.json", "--gac", "8,16", "-o", best,
                                "--csv", csv, "--jobs", "2"});
  REQUIRE(plan.code == 0);
  CHECK(plan.err.empty());
  const auto report = output("run.json");
  const auto run = run_ipusim({"run", best, "--no-numeric", "--json", report});
  REQUIRE(run.code == 0);
  const auto json = nlohmann::json::parse(read(report));
  const auto rows = lines(read(csv));
  REQUIRE(rows.size() > 1);
  const auto header = cells(rows[0]);
  const auto first = cells(rows[1]);
  const auto column = std::find(header.begin(), header.end(), "throughput_samples_per_second");
  REQUIRE(column != header.end());
  char expected[64];
  std::snprintf(expected, sizeof expected, "%.3f",
                json["throughput_samples_per_second"].get<double>());
  CHECK(first[std::size_t(column - header.begin())] == expected);
  // The table's figure is the run's, to the sample per second.
  const auto table_row = lines(plan.out)[2];
  const auto throughput_line = lines(run.out)[5];
  const auto figure = throughput_line.substr(12, throughput_line.find(" samples/s") - 12);
  CHECK_THAT(table_row, Catch::Matchers::Contains(" " + figure + " "));
  CHECK_THAT(read(best), Catch::Matchers::Contains("\"description\": \"planned by ipusim plan"));
}

TEST_CASE("plan says why nothing fits and exits with the simulation outcome code") {
  const auto result = run_ipusim(
      {"plan", "configs/tf1_mnist_2ipu.json", "--set", "hardware.memory_per_ipu=\"4MB\""});
  CHECK(result.code == 3);
  CHECK(result.out.empty());
  const auto text = lines(result.err);
  REQUIRE(text.size() >= 3);
  CHECK(text[0] ==
        "no candidate fits in memory: 18 candidate(s) evaluated on the cost model (18 over "
        "capacity by the estimate, 0 refused by validation), 3 replayed");
  CHECK(text[1] ==
        "the smallest peak found: IPU0 needs 11 MB of its 4 MB with splits=[\"dense128\"] "
        "schedule=sequential gac=16 micro-batch=32 recomputation=none. Largest consumers there:");
  CHECK(text[2] == "  7 MB  control program");
  CHECK(text.back() ==
        "What would help: more IPUs (more stages in pipeline.device_mapping and pipeline.splits), "
        "recomputation (--recomputation auto), --set "
        "pipeline.offload_weight_update_variables=true, --set pipeline.offload_activations=true, "
        "a smaller micro-batch (--micro-batch 16)");
}

TEST_CASE("plan lists each setting it skipped with the error that rules it out") {
  const auto result = run_ipusim({"plan", "configs/tf1_mnist_2ipu.json", "--gac", "6"});
  CHECK(result.code == 0);
  const auto text = lines(result.out);
  REQUIRE(text.size() >= 2);
  CHECK(text[text.size() - 2] ==
        "12 candidate(s) evaluated on the cost model (0 over capacity by the estimate, 0 refused "
        "by validation), 12 replayed");
  CHECK(text.back() ==
        "skipped: --schedules grouped --gac 6: --gac 6: at "
        "/pipeline/gradient_accumulation_count: The number of iterations of the pipeline must be "
        "a multiple of 4, but it is 6. This number is gradient_accumulation_count; the grouped "
        "schedule with 2 stages runs 4 micro-batches at once (set "
        "pipeline.relaxed_divisibility to explore it anyway)");
}
