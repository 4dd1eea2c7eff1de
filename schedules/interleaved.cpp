// Graphcore's Interleaved schedule (graphcore-schedules.md): T = 2m + s when training, so IPUs
// alternate forward and backward steps; one stage per IPU when training.
#include "schedules/registry.hpp"
#include "schedules/schedule_error.hpp"

namespace ipusim::schedules {
namespace {

class InterleavedRule final : public StepRule {
 public:
  std::string name() const override { return "interleaved"; }
  std::int64_t period(int, bool training) const override { return training ? 2 : 1; }
};

std::int64_t interleaved_lanes(const PipelineShape& shape) {
  return shape.stages();
}

// TF's own words, then the stages that share an IPU.
void interleaved_placement(const std::string&, const PipelineShape& shape) {
  const std::string shared = shared_ipu(shape);
  if (shape.training && !shared.empty())
    throw ScheduleError(ScheduleOption::kDeviceMapping,
                        "The pipelining schedule 'Interleaved' does not currently support "
                        "multiple pipeline stages on the same device for training graphs. "
                        "Please use a different pipeline schedule. (" +
                            shared + ")");
}

}  // namespace

ScheduleRow interleaved_row() {
  return {.info = {rule_instance<InterleavedRule>().name(),
                   "Graphcore: IPUs alternate forward and backward steps. Half grouped's stash, "
                   "but every step waits for the slower of a forward and a backward; M a "
                   "multiple of N, one stage per IPU."},
          .graphcore = true,
          .auto_recomputation = RecomputationMode::kRecomputeThenBackpropagate,
          .then_backpropagate = true,
          .interleaved_recompute = false,
          .lanes = interleaved_lanes,
          .placement = interleaved_placement,
          .make = make_stepped<InterleavedRule>,
          .relayout_stages_per_ipu = 1};
}

}  // namespace ipusim::schedules
