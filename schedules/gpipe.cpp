// GPipe (ordered_schedule.hpp): every forward, then every backward.
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

}  // namespace

ScheduleRow gpipe_row() {
  return gpu_row<GPipeRule>(
      "GPU: all forwards, then all backwards. Simplest; stashes all M "
      "micro-batches.",
      one_stage_per_ipu, 1);
}

}  // namespace ipusim::schedules
