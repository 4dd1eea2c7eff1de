#pragma once
// The reference for the phases of the dependency-ordered schedules: a plain unit-time
// simulation of a schedule's whole program, read through the public interface only, with the
// costs and rules that ordered_schedule.hpp states (F = 1, B = 2 or 1 when W is split off,
// R = 1 run together with its B, W = 1, free copies; ramp-up is what starts before the last
// IPU starts computing, ramp-down what starts once the first IPU has finished). Its time and
// memory grow with M, so it suits only the small shapes of the tests.

#include <string>

#include "schedules/schedule.hpp"

namespace ipusim::schedules::testing {

// The first difference between the schedule's phase counts and task phases and those of the
// unit-time simulation, described, or "" when they agree.
std::string compare_with_unit_time(const Schedule& schedule);

}  // namespace ipusim::schedules::testing
