// ZB-H1, Qi et al. 2023 (ordered_schedule.hpp): 1F1B's order with the backward split into B
// and W, stage k deferring its W's by k micro-batches into the cool-down.
#include "schedules/registry.hpp"

namespace ipusim::schedules {

namespace {

class ZeroBubbleH1Rule final : public OrderRule {
 public:
  std::string name() const override { return "zero_bubble_h1"; }
  bool splits_weight_grad() const override { return true; }
  std::int64_t warmup(const OrderPosition& at) const override { return one_f_one_b_warmup(at); }
};

}  // namespace

ScheduleRow zero_bubble_h1_row() {
  return gpu_row<ZeroBubbleH1Rule>(
      "GPU, ZB-H1 (Qi et al. 2023): backward split into input and weight gradients, "
      "the weight gradients filling the cool-down. 1f1b's peak memory, about a third "
      "of its bubble.",
      one_stage_per_ipu, 1);
}

}  // namespace ipusim::schedules
