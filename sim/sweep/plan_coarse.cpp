// The planner's walk over the splits of a deep model: every split when there are few enough,
// else those that cut on every k-th layer boundary, then the best of them improved one cut at a
// time (sim/sweep/planner_internal.hpp).

#include <algorithm>

#include "sim/sweep/planner_internal.hpp"

namespace ipusim::sim::plan_detail {
namespace {

// C(n, k), or limit + 1 once it passes limit.
std::int64_t choose_capped(int n, int k, std::int64_t limit) {
  if (k < 0 || k > n)
    return 0;
  std::int64_t count = 1;
  for (int i = 1; i <= k; ++i) {
    count = count * (n - k + i) / i;  // exact: a product of i consecutive integers over i!
    if (count > limit)
      return limit + 1;
  }
  return count;
}

// The cut positions of a coarse walk: 1, 1 + step, 1 + 2 step, ... below `layers`.
std::vector<int> coarse_positions(int layers, int step) {
  std::vector<int> out;
  for (int p = 1; p < layers; p += step)
    out.push_back(p);
  return out;
}

}  // namespace

void for_each_split(int layers, int count,
                    const std::function<void(const std::vector<int>&)>& visit) {
  std::vector<int> cuts(static_cast<std::size_t>(count));
  std::function<void(int, int)> place = [&](int index, int first) {
    if (index == count) {
      visit(cuts);
      return;
    }
    for (int c = first; c <= layers - (count - index); ++c) {
      cuts[std::size_t(index)] = c;
      place(index + 1, c + 1);
    }
  };
  place(0, 1);
}

std::vector<int> own_cuts(const RunSpec& spec) {
  std::vector<int> cuts;
  for (std::size_t k = 1; k < spec.pipeline.stages.size(); ++k)
    cuts.push_back(spec.pipeline.stages[k].layers().front());
  return cuts;
}

std::int64_t splits_count(int layers, int stages) {
  return choose_capped(layers - 1, stages - 1, kMaxSplits);
}

int coarse_step(int layers, int stages) {
  if (splits_count(layers, stages) <= kMaxSplits)
    return 1;
  // Half the budget for the coarse walk, the rest for refining its best.
  for (int step = 2;; ++step) {
    const int positions = int(coarse_positions(layers, step).size());
    if (positions < stages - 1)
      return step - 1;
    if (choose_capped(positions, stages - 1, kMaxSplits / 2) <= kMaxSplits / 2)
      return step;
  }
}

void for_each_coarse_split(int layers, int stages, int step,
                           const std::function<void(const std::vector<int>&)>& visit) {
  const auto positions = coarse_positions(layers, step);
  const int count = stages - 1;
  const int n = int(positions.size());
  std::vector<int> cuts(static_cast<std::size_t>(count));
  std::function<void(int, int)> place = [&](int index, int first) {
    if (index == count) {
      visit(cuts);
      return;
    }
    for (int c = first; c <= n - (count - index); ++c) {
      cuts[std::size_t(index)] = positions[std::size_t(c)];
      place(index + 1, c + 1);
    }
  };
  place(0, 0);
}

void refine_split(std::vector<int> cuts, int layers,
                  const std::function<bool(const std::vector<int>&)>& improves) {
  constexpr int kMaxRounds = 16;
  for (int round = 0; round < kMaxRounds; ++round) {
    bool moved = false;
    for (std::size_t i = 0; i < cuts.size(); ++i) {
      const int low = i == 0 ? 1 : cuts[i - 1] + 1;
      const int high = i + 1 == cuts.size() ? layers - 1 : cuts[i + 1] - 1;
      for (int p = low; p <= high; ++p) {
        if (p == cuts[i])
          continue;
        auto trial = cuts;
        trial[i] = p;
        if (improves(trial)) {
          cuts = std::move(trial);
          moved = true;
        }
      }
    }
    if (!moved)
      return;
  }
}

}  // namespace ipusim::sim::plan_detail
