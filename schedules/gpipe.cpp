// GPipe (ordered_schedule.hpp): every forward, then every backward.
#include "schedules/ordered_schedule.hpp"
#include "schedules/registry.hpp"

namespace ipusim::schedules {
namespace {

class GPipeRule final : public OrderRule {
 public:
  std::string name() const override { return "gpipe"; }
  std::int64_t warmup(const OrderPosition& at) const override {
    return at.microbatches * at.chunks;
  }
};

const OrderRule& gpipe_rule() {
  static const GPipeRule rule;
  return rule;
}

std::unique_ptr<Schedule> make_gpipe(const PipelineShape& shape, RecomputationMode mode, bool) {
  return std::make_unique<OrderedSchedule>(gpipe_rule(), shape, mode);
}

}  // namespace

ScheduleRow gpipe_row() {
  return {.info = {gpipe_rule().name(),
                   "GPU: all forwards, then all backwards. Simplest; stashes all M "
                   "micro-batches."},
          .graphcore = false,
          .auto_recomputation = RecomputationMode::kRecomputeAndBackpropagateInterleaved,
          .then_backpropagate = false,
          .interleaved_recompute = true,
          .lanes = no_lanes,
          .placement = one_stage_per_ipu,
          .make = make_gpipe};
}

}  // namespace ipusim::schedules
