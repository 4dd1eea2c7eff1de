#pragma once
// Checks every invariant a schedule must keep, for the property tests: each piece of work runs
// exactly once on the right IPU (as many per micro-batch as tasks_per_microbatch says),
// dependencies come first in program and step order (and never form a cycle), stashes are read in
// the order they were written, located tasks match the programs, phase labels add up to
// phase_counts(), and stash depths match the program orders.

#include <string>

#include "schedules/schedule.hpp"

namespace ipusim::schedules::testing {

// The first broken invariant, described, or "" when all hold.
std::string audit(const Schedule& schedule);

}  // namespace ipusim::schedules::testing
