// Must not compile: a schedule's registry row that names no builder. The test "a schedule row
// that leaves out a function does not compile" builds it with the project's warnings and expects
// the build to fail on the missing member, which keeps a new schedule from going without its
// lanes, placement check or builder. Everything else here is well formed, so the build fails
// for that reason alone.

#include "schedules/registry.hpp"

namespace ipusim::schedules {

ScheduleRow forgets_its_builder() {
  return {.info = {"forgetful", "a schedule whose row names no builder"},
          .graphcore = false,
          .auto_recomputation = RecomputationMode::kNone,
          .then_backpropagate = false,
          .interleaved_recompute = false,
          .lanes = no_lanes,
          .placement = any_placement};
}

}  // namespace ipusim::schedules
