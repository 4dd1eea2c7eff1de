#pragma once
// The planner's estimate of a split before any replay: each IPU's work per micro-batch (the
// bottleneck) and its peak memory, from the cost model's prices of layer ranges, each range
// priced once per stage. Used by sim/sweep/planner.cpp only.

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "schedules/schedule.hpp"
#include "sim/sweep/planner.hpp"

namespace ipusim::sim::plan_detail {

// Prices every candidate split of one setting. Layers are in the config's order; a split is
// N-1 increasing cut positions, cut c starting a stage at layer c.
class SplitPricer {
 public:
  explicit SplitPricer(const RunSpec& spec);

  int stages() const { return int(ipu_.size()); }
  int layers() const { return layers_; }

  // Fills the candidate's estimate from its cuts.
  void estimate(const std::vector<int>& cuts, PlanCandidate& out);

 private:
  // The cost-model figures of a range of layers as stage k.
  struct RangeCost {
    std::int64_t work = 0;  // forward + backward + recomputation, per micro-batch
    std::int64_t forward = 0;
    std::int64_t backward = 0;
    std::int64_t recompute = 0;     // 0 unless the stage recomputes
    std::int64_t static_bytes = 0;  // code, weights, accumulators, optimizer state on chip
    std::int64_t stash_bytes = 0;   // one FIFO entry
    std::int64_t live_bytes = 0;
  };
  // A layer tied to an embedding, and the bytes of its copy of the word matrix (with its
  // accumulator when training) should the two land on different IPUs.
  struct Tie {
    int user = 0;
    int owner = 0;
    std::int64_t copy_bytes = 0;
  };

  // One step of the steady-state window: per IPU, the compute tasks (stage, op) it runs.
  using StepWork = std::vector<std::vector<std::pair<int, schedules::Op>>>;

  void find_ties();
  void find_window();
  std::int64_t window_cycles(const std::vector<const RangeCost*>& stage_costs) const;
  void add_tied_copies(const std::vector<int>& cuts, PlanCandidate& out) const;
  const RangeCost& range(int k, int begin, int end);
  RangeCost price(int k, int begin, int end) const;
  std::int64_t bytes_per_parameter() const;
  std::int64_t optimizer_state_bytes(std::int64_t params) const;

  const RunSpec& spec_;
  int layers_;
  std::vector<int> ipu_;
  std::vector<Tie> ties_;
  std::vector<schedules::StashKind> stash_kind_;
  std::vector<std::int64_t> held_;  // per stage: stash entries on chip at most (held_on_chip)
  std::vector<StepWork> window_;    // one period of a step-based schedule's steady state
  std::unordered_map<std::int64_t, RangeCost> memo_;  // by (stage, begin, end)
  // estimate's scratch, kept between its millions of calls: per IPU, and per stage.
  std::vector<std::int64_t> work_;
  std::vector<std::int64_t> live_;
  std::vector<const RangeCost*> stage_costs_;
};

}  // namespace ipusim::sim::plan_detail
