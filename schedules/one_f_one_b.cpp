// 1F1B, PipeDream-flush (ordered_schedule.hpp): N-1-k warm-up forwards on stage k, then one
// forward one backward.
#include <algorithm>

#include "schedules/registry.hpp"

namespace ipusim::schedules {

std::int64_t one_f_one_b_warmup(const OrderPosition& at) {
  return std::min<std::int64_t>(at.stages - 1 - at.first_stage, at.microbatches);
}

namespace {

class OneFOneBRule final : public OrderRule {
 public:
  std::string name() const override { return "1f1b"; }
  std::int64_t warmup(const OrderPosition& at) const override { return one_f_one_b_warmup(at); }
};

}  // namespace

ScheduleRow one_f_one_b_row() {
  return gpu_row<OneFOneBRule>(
      "GPU, PipeDream-flush / Megatron-LM: a warm-up of forwards, then one forward "
      "one backward. Gpipe's bubble with at most N-k micro-batches stashed on stage "
      "k.",
      one_stage_per_ipu, 1);
}

}  // namespace ipusim::schedules
