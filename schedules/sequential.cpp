// Graphcore's Sequential schedule (graphcore-schedules.md): T = S m + s, one slot at a time.
#include "schedules/registry.hpp"

namespace ipusim::schedules {
namespace {

class SequentialRule final : public StepRule {
 public:
  std::string name() const override { return "sequential"; }
  std::int64_t period(int slots, bool) const override { return slots; }
  bool pipelined() const override { return false; }
};

std::int64_t sequential_lanes(const PipelineShape&) {
  return 1;
}

}  // namespace

ScheduleRow sequential_row() {
  return {.info = {rule_instance<SequentialRule>().name(),
                   "Graphcore's debug mode: one stage at a time, like a sharded model. No "
                   "overlap, no stash, any M."},
          .graphcore = true,
          .auto_recomputation = RecomputationMode::kRecomputeAndBackpropagateInterleaved,
          .then_backpropagate = false,
          .interleaved_recompute = true,
          .lanes = sequential_lanes,
          .placement = any_placement,
          .make = make_stepped<SequentialRule>};
}

}  // namespace ipusim::schedules
