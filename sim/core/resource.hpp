#pragma once
// A resource that serves one request at a time in arrival order: an IPU-Link direction, a host
// link. A request waits until the resource is free, then holds it for its duration.

#include <algorithm>
#include <cstdint>

#include "sim/core/time.hpp"

namespace ipusim::core {

// The interval a request holds a Resource: end - begin is its duration.
struct Occupancy {
  Cycles begin;
  Cycles end;
};

// One resource serving requests in arrival order; busy_cycles sums the durations it served.
class Resource {
 public:
  Occupancy occupy(Cycles earliest, std::int64_t duration) {
    const Cycles begin = std::max(earliest, free_at_);
    free_at_ = begin + Cycles{duration};
    busy_cycles_ += duration;
    ++uses_;
    return {begin, free_at_};
  }

  std::int64_t busy_cycles() const { return busy_cycles_; }
  std::int64_t uses() const { return uses_; }

 private:
  Cycles free_at_{0};
  std::int64_t busy_cycles_ = 0;
  std::int64_t uses_ = 0;
};

}  // namespace ipusim::core
