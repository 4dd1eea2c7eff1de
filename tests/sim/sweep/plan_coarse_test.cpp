// The planner's walk over the splits of a deep model: every split while there are at most
// 5,000,000, else a coarse walk and a refinement of its best.

#include <catch2/catch.hpp>
#include <set>

#include "sim/sweep/planner_internal.hpp"

namespace plan = ipusim::sim::plan_detail;

TEST_CASE("a model with few enough splits is walked in full") {
  // 20 layers in 5 stages: C(19, 4) = 3,876, as plan_halves_test prices.
  CHECK(plan::splits_count(20, 5) == 3876);
  CHECK(plan::coarse_step(20, 5) == 1);
  // ResNet-50's 177 layers in 4 stages: C(176, 3) = 893,200.
  CHECK(plan::splits_count(177, 4) == 893200);
  CHECK(plan::coarse_step(177, 4) == 1);
}

TEST_CASE("a deep model's coarse walk cuts on every k-th boundary, k the least that fits") {
  // 177 layers in 8 stages: C(176, 7) is past the bound. Cuts every 5th boundary leave
  // ceil(176 / 5) = 36 places, C(36, 7) = 8,347,680, over half the bound; every 6th leaves 30,
  // C(30, 7) = 2,035,800, within it.
  CHECK(plan::splits_count(177, 8) == plan::kMaxSplits + 1);
  CHECK(plan::coarse_step(177, 8) == 6);
  std::int64_t visited = 0;
  bool on_grid = true;
  plan::for_each_coarse_split(177, 8, 6, [&](const std::vector<int>& cuts) {
    ++visited;
    for (std::size_t i = 0; i < cuts.size(); ++i)
      on_grid = on_grid && cuts[i] % 6 == 1 && cuts[i] < 177 && (i == 0 || cuts[i] > cuts[i - 1]);
  });
  CHECK(visited == 2035800);
  CHECK(on_grid);
}

TEST_CASE("refining moves one cut at a time to wherever the split ranks higher") {
  // A score separable by cut (the L1 distance to a target) is minimised in one round from any
  // start whose order the target keeps.
  const std::vector<int> target = {7, 20, 33};
  const auto distance = [&](const std::vector<int>& cuts) {
    int d = 0;
    for (std::size_t i = 0; i < cuts.size(); ++i)
      d += std::abs(cuts[i] - target[i]);
    return d;
  };
  std::vector<int> best = {1, 13, 25};
  std::set<std::vector<int>> tried;
  plan::refine_split(best, 40, [&](const std::vector<int>& trial) {
    tried.insert(trial);
    if (distance(trial) >= distance(best))
      return false;
    best = trial;
    return true;
  });
  CHECK(best == target);
  // Each trial moved one cut of the split it came from, between its neighbours.
  for (const auto& t : tried)
    CHECK((t[0] >= 1 && t[0] < t[1] && t[1] < t[2] && t[2] <= 39));
}
