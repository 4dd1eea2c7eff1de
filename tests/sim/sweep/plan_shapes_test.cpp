// Which IPU counts per replica `ipusim plan` searches when not told, and a ruled-out setting's
// nearest legal GAC held to the bound on splits as the setting itself is.

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "sim/sweep/planner.hpp"
#include "tests/scratch_folder.hpp"

namespace {

using namespace ipusim;

// The TF1 tutorial's MLP (7 layers) as one stage, GAC 16.
std::string one_stage_config() {
  const auto path = testing::scratch_folder("plan_shapes_test") / "one_stage.json";
  std::ofstream(path) << R"({"include": ")" IPUSIM_SOURCE_DIR
                         R"(/configs/models/tf1_mnist_mlp.json",
    "pipeline": {"gradient_accumulation_count": 16}, "hardware": {"ipus": 8}})";
  return path.string();
}

}  // namespace

TEST_CASE("plan spreads a one-stage config over 1, 2, 4 and 8 IPUs per replica by default") {
  sim::PlanRequest request;
  request.config_path = one_stage_config();
  request.jobs = 1;
  const auto result = sim::plan(request);
  CHECK(result.default_shapes);
  // 7 layers: the one-stage run once, C(6, 1) and C(6, 3) splits under each of the three
  // step-based schedules, and no 8-stage split.
  CHECK(result.evaluated == 1 + 3 * 6 + 3 * 20);
  REQUIRE(result.any_fits());
  CHECK(sim::render_plan(result).find("the config has one stage, so 1, 2, 4 and 8 IPUs per "
                                      "replica were searched (--ipus-per-replica to choose)\n") !=
        std::string::npos);
}

TEST_CASE("plan searches only the IPU counts it is given for a one-stage config") {
  sim::PlanRequest request;
  request.config_path = one_stage_config();
  request.jobs = 1;
  request.ipus_per_replica = {2};
  const auto result = sim::plan(request);
  CHECK_FALSE(result.default_shapes);
  CHECK(result.evaluated == 3 * 6);
  CHECK(sim::render_plan(result).find("the config has one stage") == std::string::npos);
}

TEST_CASE("a deep setting is searched coarsely, at its nearest legal GAC too") {
  // ResNet-50 at GAC 8: 8 stages need a GAC of 16 under grouped, and 177 layers in 8 stages
  // make more splits than plan prices in full, at GAC 8 or 16: both are walked coarsely.
  sim::PlanRequest request;
  request.config_path = IPUSIM_SOURCE_DIR "/configs/resnet50_1ipu.json";
  request.jobs = 1;
  request.top = 1;
  request.ipus_per_replica = {2, 8};
  const auto result = sim::plan(request);
  REQUIRE(result.any_fits());
  CHECK(result.coarse_settings > 0);
  CHECK(result.coarse_step == 6);
  CHECK(std::any_of(result.nearest_legal_gac.begin(), result.nearest_legal_gac.end(),
                    [](const auto& c) { return c.ipus_per_replica == 8 && c.gac == 16; }));
}

TEST_CASE("plan -o in another folder names the config's initial weights from there") {
  const auto folder = testing::scratch_folder("plan_shapes_test");
  std::filesystem::create_directories(folder / "imported");
  std::filesystem::create_directories(folder / "planned");
  const auto config = folder / "imported" / "mlp.json";
  std::ofstream(config) << R"({"include": ")" IPUSIM_SOURCE_DIR
                           R"(/configs/tf1_mnist_2ipu.json",
    "model": {"initial_weights": "mlp.weights"}})";
  sim::PlanRequest request;
  request.config_path = config.string();
  request.jobs = 1;
  request.top = 1;
  const auto result = sim::plan(request);
  REQUIRE(result.any_fits());
  const auto& best = result.ranked.front();
  CHECK(sim::planned_config(
            best, (folder / "planned" / "best.json").string())["model"]["initial_weights"] ==
        "../imported/mlp.weights");
  CHECK(sim::planned_config(
            best, (folder / "imported" / "best.json").string())["model"]["initial_weights"] ==
        "mlp.weights");
}
