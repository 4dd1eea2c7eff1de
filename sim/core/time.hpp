#pragma once
// Simulated time. One unit is one IPU clock cycle of the configured hardware: the Graphcore
// tools report cycles, per-layer `cycles` overrides are in cycles, and closed-form checks
// stay exact. Link and host transfers are converted to whole cycles (rounded up) where they
// are scheduled. Seconds appear only in reports.

#include <cmath>
#include <compare>
#include <cstdint>

#include "sim/core/checked.hpp"

namespace ipusim::core {

// Sums of times never wrap: a run longer than 2^63 cycles (219 years at 1.33 GHz) throws
// Overflow, which the simulation reports as a config error.
struct Cycles {
  std::int64_t count = 0;

  constexpr auto operator<=>(const Cycles&) const = default;
  constexpr Cycles operator+(Cycles other) const {
    return {checked_add(count, other.count, "simulated time")};
  }
  constexpr Cycles operator-(Cycles other) const { return {count - other.count}; }
  constexpr Cycles& operator+=(Cycles other) {
    count = checked_add(count, other.count, "simulated time");
    return *this;
  }
};

// The one conversion of a duration to whole cycles, rounded up; the 1e-9 absorbs the rounding
// error of products that are whole numbers of cycles in exact arithmetic.
inline std::int64_t cycles_from_seconds(double seconds, double clock_hz) {
  const double cycles = std::ceil(seconds * clock_hz - 1e-9);
  // 2^62: room to add a few such durations before a sum is checked.
  if (!(cycles < 4611686018427387904.0))
    throw Overflow("simulated time");
  return cycles < 0 ? 0 : static_cast<std::int64_t>(cycles);
}

// Cycles to move `bytes` at `bandwidth` bytes/s; nothing to move, or no bandwidth modelled, takes
// 0.
inline std::int64_t transfer_cycles(double bytes, double bandwidth, double clock_hz) {
  if (bandwidth <= 0 || bytes <= 0)
    return 0;
  return cycles_from_seconds(bytes / bandwidth, clock_hz);
}

}  // namespace ipusim::core
