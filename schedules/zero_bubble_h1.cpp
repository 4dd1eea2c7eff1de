// ZB-H1, Qi et al. 2023 (ordered_schedule.hpp): 1F1B's order with the backward split into B
// and W, stage k deferring its W's by k micro-batches into the cool-down.
#include "schedules/ordered_schedule.hpp"
#include "schedules/registry.hpp"

namespace ipusim::schedules {

namespace {

class ZeroBubbleH1Rule final : public OrderRule {
 public:
  std::string name() const override { return "zero_bubble_h1"; }
  bool splits_weight_grad() const override { return true; }
  std::int64_t warmup(const OrderPosition& at) const override { return one_f_one_b_warmup(at); }
};

const OrderRule& zero_bubble_h1_rule() {
  static const ZeroBubbleH1Rule rule;
  return rule;
}

std::unique_ptr<Schedule> make_zero_bubble_h1(const PipelineShape& shape, RecomputationMode mode,
                                              bool) {
  return std::make_unique<OrderedSchedule>(zero_bubble_h1_rule(), shape, mode);
}

}  // namespace

ScheduleRow zero_bubble_h1_row() {
  return {.info = {zero_bubble_h1_rule().name(),
                   "GPU, ZB-H1 (Qi et al. 2023): backward split into input and weight gradients, "
                   "the weight gradients filling the cool-down. 1f1b's peak memory, about a third "
                   "of its bubble."},
          .graphcore = false,
          .auto_recomputation = RecomputationMode::kRecomputeAndBackpropagateInterleaved,
          .then_backpropagate = false,
          .interleaved_recompute = true,
          .lanes = no_lanes,
          .placement = one_stage_per_ipu,
          .make = make_zero_bubble_h1};
}

}  // namespace ipusim::schedules
