#include "sim/sweep/planner.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>

#include "sim/core/error.hpp"
#include "sim/spec/spec.hpp"

namespace {

using namespace ipusim;

// The fastest fitting run of a search space, and every candidate that reaches it.
struct BruteForce {
  double throughput = -1;
  std::vector<std::string> best;  // "splits schedule gac" of each candidate at the maximum
  std::size_t valid = 0;
};

std::string label(const std::vector<std::string>& splits, const std::string& schedule,
                  std::int64_t gac) {
  return nlohmann::json(splits).dump() + " " + schedule + " " + std::to_string(gac);
}

void replay_one(const std::string& config, const std::vector<core::Override>& overrides,
                BruteForce& out) {
  std::optional<sim::RunSpec> spec;
  try {
    spec = sim::load_run_spec(config, overrides);
  } catch (const core::ConfigError&) {
    return;
  }
  ++out.valid;
  sim::SimulateOptions options;
  options.allow_oom = true;
  const auto report = sim::simulate(*spec, options);
  if (!report.fits_in_memory() || report.throughput() < out.throughput)
    return;
  const auto& p = spec->pipeline;
  std::vector<std::string> splits;
  for (std::size_t k = 1; k < p.stages.size(); ++k)
    splits.push_back(spec->model.layers[std::size_t(p.stages[k].layers().front())].id);
  const auto key = label(splits, p.schedule, p.gradient_accumulation_count);
  if (report.throughput() > out.throughput)
    out.best.clear();
  out.throughput = report.throughput();
  out.best.push_back(key);
}

// Replays every split of the config's layers into its stages, under every schedule and GAC.
BruteForce brute_force(const std::string& config, const std::vector<std::string>& schedules,
                       const std::vector<std::string>& gacs) {
  const auto base = sim::load_run_spec(config, {});
  const int layers = int(base.model.layers.size());
  const int cuts = int(base.pipeline.stages.size()) - 1;
  BruteForce out;
  std::vector<std::string> splits;
  std::function<void(int)> place = [&](int first) {
    if (int(splits.size()) == cuts) {
      for (const auto& schedule : schedules) {
        for (const auto& gac : gacs) {
          replay_one(config,
                     {{"/pipeline/pipeline_schedule", nlohmann::json(schedule).dump(), "test"},
                      {"/pipeline/gradient_accumulation_count", gac, "test"},
                      {"/pipeline/splits", nlohmann::json(splits).dump(), "test"}},
                     out);
        }
      }
      return;
    }
    for (int c = first; c < layers; ++c) {
      splits.push_back(base.model.layers[std::size_t(c)].id);
      place(c + 1);
      splits.pop_back();
    }
  };
  place(1);
  return out;
}

void check_planner_matches_brute_force(const std::string& config,
                                       const std::vector<std::string>& gacs) {
  const std::vector<std::string> schedules = {"grouped", "interleaved", "sequential"};
  sim::PlanRequest request;
  request.config_path = config;
  request.gacs = gacs;
  request.jobs = 2;
  const auto result = sim::plan(request);
  const auto expected = brute_force(config, schedules, gacs);
  REQUIRE(result.any_fits());
  REQUIRE(expected.valid > 0);
  const auto& best = result.ranked.front();
  CHECK(best.report->throughput() == expected.throughput);
  CHECK_THAT(expected.best,
             Catch::Matchers::VectorContains(label(best.splits, best.schedule, best.gac)));
}

}  // namespace

TEST_CASE("the planner's best TF1 MLP split, schedule and GAC are brute force's fastest") {
  check_planner_matches_brute_force("configs/tf1_mnist_2ipu.json", {"8", "16"});
}

TEST_CASE("the planner's best Keras CNN split, schedule and GAC are brute force's fastest") {
  check_planner_matches_brute_force("configs/keras_cnn_2stage.json", {"8", "16"});
}

TEST_CASE("the planner tries every split the stage rules accept on a small model") {
  sim::PlanRequest request;
  request.config_path = "configs/tf1_mnist_2ipu.json";
  request.jobs = 1;
  const auto result = sim::plan(request);
  // 7 layers make 6 two-stage splits under each of the three step-based schedules.
  CHECK(result.evaluated == 18);
  CHECK(result.ranked.size() + result.invalid == 18);
}

TEST_CASE("the planner refuses a config with explicit stages") {
  const auto path = std::filesystem::path(IPUSIM_BINARY_DIR) / "planner_test_stages.json";
  std::ofstream(path) << R"({"include": ")" IPUSIM_SOURCE_DIR
                         R"(/configs/models/tf1_mnist_mlp.json",
    "pipeline": {"gradient_accumulation_count": 8, "stages": [["flatten", "dense256"], ["dense128", "dense64", "dense32", "logits",
    "cel"]]}})";
  sim::PlanRequest request;
  request.config_path = path.string();
  std::string message;
  try {
    sim::plan(request);
  } catch (const core::ConfigError& error) {
    message = error.what();
  }
  CHECK(message == path.string() +
                       ": at /pipeline/stages: plan moves the split points of pipeline.splits, "
                       "one IPU per stage; a config with explicit (or concurrent) stages is "
                       "outside what it searches: write the stages as pipeline.splits, or plan "
                       "without them");
}

TEST_CASE("the planner searches BERT-Large's splits and beats the layout Graphcore ran") {
  sim::PlanRequest request;
  request.config_path = "configs/bert_large_4ipu.json";
  request.jobs = 2;
  const auto result = sim::plan(request);
  REQUIRE(result.any_fits());
  // 29 layers cut into 5 stages, C(28, 4) ways, under the two schedules that accept two stages
  // on IPU0; the interleaved schedule is skipped with its error.
  CHECK(result.evaluated == 2 * 20475);
  CHECK(result.invalid_settings.size() == 1);
  sim::SimulateOptions options;
  const auto own = sim::simulate(sim::load_run_spec(request.config_path, {}), options);
  CHECK(result.ranked.front().report->throughput() >= own.throughput());
}
