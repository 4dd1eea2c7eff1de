// Megatron-LM's interleaved 1F1B (ordered_schedule.hpp): v stages per IPU, stage k on IPU
// k mod P, which divide 1F1B's bubble by v.
#include <algorithm>

#include "schedules/registry.hpp"
#include "schedules/schedule_error.hpp"

namespace ipusim::schedules {
namespace {

class Interleaved1F1BRule final : public OrderRule {
 public:
  std::string name() const override { return "interleaved_1f1b"; }
  bool virtual_stages() const override { return true; }
  // Megatron-LM's get_pp_rank_microbatches (megatron/core/pipeline_parallel/schedules.py) and
  // PyTorch's ScheduleInterleaved1F1B (torch/distributed/pipelining/schedules.py): 2 per hop to
  // the last IPU plus a group per further chunk, capped at every unit. Until November 2024
  // Megatron-LM ran every forward first when M equalled the IPUs; no more.
  std::int64_t warmup(const OrderPosition& at) const override {
    return std::min<std::int64_t>(
        static_cast<std::int64_t>(at.group - 1 - at.ipu) * 2 + (at.chunks - 1) * at.group,
        at.microbatches * at.chunks);
  }
};

void fail_placement(ScheduleOption option, const std::string& message) {
  throw ScheduleError(option, message);
}

void check_one_ipu_per_stage(const PipelineShape& shape) {
  for (int stage = 0; stage < shape.stages(); ++stage) {
    if (shape.device_mapping[stage].size() > 1)
      fail_placement(ScheduleOption::kDeviceMapping,
                     "the interleaved_1f1b schedule runs each stage on one IPU, but stage " +
                         std::to_string(stage) + " has " +
                         std::to_string(shape.device_mapping[stage].size()));
  }
}

void virtual_stages(const std::string&, const PipelineShape& shape) {
  check_one_ipu_per_stage(shape);
  const int n = shape.stages();
  const int ipus = shape.ipus();
  if (n % ipus != 0)
    fail_placement(ScheduleOption::kDeviceMapping,
                   "the interleaved_1f1b schedule needs the same number of stages on every IPU, "
                   "but " +
                       std::to_string(n) + " stages do not divide evenly over " +
                       std::to_string(ipus) + " IPUs");
  // One stage per IPU is 1F1B's order with a deeper warm-up: nothing to interleave.
  if (n == ipus)
    fail_placement(ScheduleOption::kDeviceMapping,
                   "the interleaved_1f1b schedule interleaves two or more stages on each IPU "
                   "(Megatron-LM's virtual stages), but these " +
                       std::to_string(n) + " stages are one per IPU: split the model into " +
                       std::to_string(2 * ipus) + " stages or more, stage k on IPU k mod " +
                       std::to_string(ipus) + ", or run 1f1b");
  for (int stage = 0; stage < n; ++stage) {
    if (shape.device_mapping[stage].front() != stage % ipus)
      fail_placement(ScheduleOption::kDeviceMapping,
                     "the interleaved_1f1b schedule places stage k on IPU k mod " +
                         std::to_string(ipus) + " (Megatron-LM's virtual stages), but stage " +
                         std::to_string(stage) + " is on IPU " +
                         std::to_string(shape.device_mapping[stage].front()));
  }
  if (shape.microbatches % ipus != 0)
    fail_placement(ScheduleOption::kGradientAccumulationCount,
                   "number of microbatches (" + std::to_string(shape.microbatches) +
                       ") is not divisible by pipeline-model-parallel-size (" +
                       std::to_string(ipus) +
                       ") when using interleaved schedule (Megatron-LM's rule for "
                       "interleaved_1f1b)");
}

}  // namespace

ScheduleRow interleaved_1f1b_row() {
  return gpu_row<Interleaved1F1BRule>(
      "GPU, Megatron-LM interleaved: v stages per IPU (stage k on IPU k mod P) "
      "divide the bubble by v at the cost of more copies; M a multiple of P.",
      virtual_stages, 2);
}

}  // namespace ipusim::schedules
