#pragma once
// Simulated time. One unit is one IPU clock cycle of the configured hardware: the Graphcore
// tools report cycles, per-layer `cycles` overrides are in cycles, and closed-form checks
// stay exact. Link and host transfers are converted to whole cycles (rounded up) where they
// are scheduled. Seconds appear only in reports.

#include <compare>
#include <cstdint>

namespace ipusim::core {

struct Cycles {
  std::int64_t count = 0;

  constexpr auto operator<=>(const Cycles&) const = default;
  constexpr Cycles operator+(Cycles other) const { return {count + other.count}; }
  constexpr Cycles operator-(Cycles other) const { return {count - other.count}; }
  constexpr Cycles& operator+=(Cycles other) {
    count += other.count;
    return *this;
  }
};

}  // namespace ipusim::core
