// Graphcore's Grouped schedule (graphcore-schedules.md): T = m + s, every IPU runs its backward
// then its forward in every step.
#include "schedules/registry.hpp"

namespace ipusim::schedules {
namespace {

class GroupedRule final : public StepRule {
 public:
  std::string name() const override { return "grouped"; }
  std::int64_t period(int, bool) const override { return 1; }
  bool every_slot_every_step() const override { return true; }
};

std::int64_t grouped_lanes(const PipelineShape& shape) {
  return shape.training ? 2 * shape.stages() : shape.stages();
}

}  // namespace

ScheduleRow grouped_row() {
  return {.info = {rule_instance<GroupedRule>().name(),
                   "Graphcore's default: each step every IPU runs its backward then its forward. "
                   "Fastest when stages are balanced; stashes 2(N-1-k) micro-batches on stage k; "
                   "M a multiple of 2N."},
          .graphcore = true,
          .auto_recomputation = RecomputationMode::kRecomputeThenBackpropagate,
          .then_backpropagate = true,
          .interleaved_recompute = true,
          .lanes = grouped_lanes,
          .placement = any_placement,
          .make = make_stepped<GroupedRule>};
}

}  // namespace ipusim::schedules
