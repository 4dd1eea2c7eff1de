// Graphcore's Sequential schedule (graphcore-schedules.md): T = S m + s, one slot at a time.
#include "schedules/registry.hpp"
#include "schedules/step_schedule.hpp"

namespace ipusim::schedules {
namespace {

class SequentialRule final : public StepRule {
 public:
  std::string name() const override { return "sequential"; }
  std::int64_t period(int slots, bool) const override { return slots; }
  bool pipelined() const override { return false; }
};

const StepRule& sequential_rule() {
  static const SequentialRule rule;
  return rule;
}

std::int64_t sequential_lanes(const PipelineShape&) {
  return 1;
}

std::unique_ptr<Schedule> make_sequential(const PipelineShape& shape, RecomputationMode mode,
                                          bool relaxed) {
  return std::make_unique<StepSchedule>(sequential_rule(), shape, mode, relaxed);
}

}  // namespace

ScheduleRow sequential_row() {
  return {.info = {sequential_rule().name(),
                   "Graphcore's debug mode: one stage at a time, like a sharded model. No "
                   "overlap, no stash, any M."},
          .graphcore = true,
          .auto_recomputation = RecomputationMode::kRecomputeAndBackpropagateInterleaved,
          .then_backpropagate = false,
          .interleaved_recompute = true,
          .lanes = sequential_lanes,
          .placement = any_placement,
          .make = make_sequential};
}

}  // namespace ipusim::schedules
