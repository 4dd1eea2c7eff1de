// The planner's answers to a GAC the schedule rules out, its per-schedule estimate of a
// micro-batch's cycles, and its bounds on the lists it searches.

#include <catch2/catch.hpp>

#include "sim/core/error.hpp"
#include "sim/machine/cost_model.hpp"
#include "sim/spec/spec.hpp"
#include "sim/sweep/plan_pricer.hpp"
#include "sim/sweep/planner.hpp"
#include "tests/test_support.hpp"

namespace {

using namespace ipusim;

sim::PlanRequest tf1_plan(std::vector<std::string> schedules, std::vector<std::string> gacs) {
  sim::PlanRequest request;
  request.config_path = "configs/tf1_mnist_2ipu.json";
  request.jobs = 2;
  request.schedules = std::move(schedules);
  request.gacs = std::move(gacs);
  return request;
}

std::string plan_error(const sim::PlanRequest& request) {
  return testing::error_of<core::ConfigError>([&] { sim::plan(request); });
}

// The cycles of one micro-batch of stage k, forward and backward, by the full cost model.
std::int64_t stage_cycles(const sim::CostModel& cost, int k) {
  return cost.substage(k, 0).forward_cycles + cost.substage(k, 0).backward_cycles;
}

}  // namespace

TEST_CASE("a GAC the schedule rules out is planned again at the nearest legal GAC either side") {
  // Grouped on two training stages starts 2 x 2 = 4 micro-batches at once: GAC 6 is not a
  // multiple of 4, and 4 and 8 are the multiples either side of it.
  const auto result = sim::plan(tf1_plan({"grouped", "sequential"}, {"6"}));
  REQUIRE(result.nearest_legal_gac.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& c = result.nearest_legal_gac[i];
    const std::string gac = i == 0 ? "4" : "8";
    CHECK(c.instead_of_gac == 6);
    CHECK(c.schedule == "grouped");
    CHECK(c.gac == std::stoi(gac));
    // The same as the best of a plan asked for that GAC.
    const auto at = sim::plan(tf1_plan({"grouped"}, {gac}));
    CHECK(c.key() == at.ranked.front().key());
    CHECK(c.report->figures.throughput == at.ranked.front().report->figures.throughput);
  }
  // The ranking keeps the GAC asked for.
  for (const auto& c : result.ranked)
    CHECK(c.gac == 6);
  const auto text = sim::render_plan(result);
  CHECK(text.find("skipped: --schedules grouped --gac 6: --gac 6: at "
                  "/pipeline/gradient_accumulation_count: The number of iterations of the "
                  "pipeline must be a multiple of 4, but it is 6.") != std::string::npos);
  CHECK(text.find("\nat the nearest GAC values their schedule accepts (the best split of each, "
                  "replayed; not ranked above, plan at one with --gac):\nInstead of  dense "
                  "layers per IPU  Schedule  GAC  ") != std::string::npos);
  CHECK(text.find("\nGAC 6       2,3                   grouped     4  ") != std::string::npos);
  CHECK(text.find("\nGAC 6       2,3                   grouped     8  ") != std::string::npos);
}

TEST_CASE("when only ruled-out GACs are asked for, the error names the nearest legal ones") {
  CHECK(plan_error(tf1_plan({"grouped"}, {"6"})) ==
        "configs/tf1_mnist_2ipu.json: no combination of the values asked for is a valid config; "
        "the first: --schedules grouped --gac 6: --gac 6: at "
        "/pipeline/gradient_accumulation_count: The number of iterations of the pipeline must be "
        "a multiple of 4, but it is 6. This number is gradient_accumulation_count; the grouped "
        "schedule with 2 stages runs 4 micro-batches at once (set pipeline.relaxed_divisibility "
        "to explore it anyway); the nearest GAC values its schedule accepts instead of 6: 4 or 8");
  // Below the overlap length there is no legal GAC below.
  CHECK(plan_error(tf1_plan({"grouped"}, {"3"}))
            .ends_with("; the nearest GAC values its schedule accepts instead of 3: 4"));
}

TEST_CASE("the split pricer times a sequential micro-batch as the sum of its stages") {
  for (const char* schedule : {"grouped", "sequential"}) {
    const auto spec = sim::load_run_spec(
        "configs/tf1_mnist_2ipu.json",
        {core::parse_set_argument(std::string("pipeline.pipeline_schedule=") + schedule)});
    const auto cost = sim::build_cost_model(spec);
    const std::vector<int> cuts = {spec.pipeline.stages[1].layers().front()};
    sim::PlanCandidate c;
    sim::plan_detail::SplitPricer(spec).estimate(cuts, c);
    const auto first = stage_cycles(cost, 0);
    const auto second = stage_cycles(cost, 1);
    // Grouped runs both IPUs in every step: the busier decides. Sequential runs one stage at a
    // time: a micro-batch takes both, one after the other.
    CHECK(c.bottleneck_cycles == std::max(first, second));
    CHECK(c.microbatch_cycles ==
          (std::string(schedule) == "grouped" ? std::max(first, second) : first + second));
  }
}

TEST_CASE("plan refuses lists it would take hours or gigabytes to search, before searching") {
  auto request = tf1_plan({}, {});
  for (int g = 1; g <= 257; ++g)
    request.gacs.push_back(std::to_string(4 * g));
  CHECK(plan_error(request) ==
        "--gac: expected at most 256 values, found 257; plan validates and prices every "
        "combination, so search fewer values");
  request.gacs.resize(200);
  for (int m = 1; m <= 200; ++m)
    request.micro_batches.push_back(std::to_string(m));
  request.recomputations = {"none", "auto", "recompute_then_backpropagate"};
  CHECK(plan_error(request) ==
        "3 --schedules x 200 --gac x 200 --micro-batch x 3 --recomputation (the default "
        "schedules): the lists make 360,000 settings, more than the 100,000 plan searches in one "
        "run; search fewer values");
  auto ipus = tf1_plan({}, {});
  ipus.ipus_per_replica = {1 << 30};
  CHECK(plan_error(ipus) ==
        "--ipus-per-replica 1073741824: expected at most 1024 IPUs per replica, the most --ipus "
        "takes");
}
