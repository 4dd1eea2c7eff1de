#pragma once
// The lines `ipusim sweep` prints when it is done, and its error when no run is valid.

#include <optional>
#include <string>

#include "sim/core/error.hpp"
#include "sim/sweep/plan.hpp"
#include "sim/sweep/sweep.hpp"

namespace ipusim::sim {

// The counts of runs simulated, skipped, invalid and out of memory, the fastest run that fits,
// and the file written.
std::string summary_text(const SweepRequest& request, const SweepPlan& plan,
                         const SweepSummary& summary);

// The command's error when every run of the sweep (or shard) is invalid: the first run's, so a
// mistyped value fails the command as it fails `run`.
std::optional<core::ConfigError> none_valid(const SweepRequest& request,
                                            const SweepSummary& summary);

}  // namespace ipusim::sim
