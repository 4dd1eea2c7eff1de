#pragma once
// The IPUs one replica runs on and the IPU-Links between them.
//
// Contract. Pipeline IPU i (logical: a stage's device_mapping entry) is placed on physical IPU
// physical()[i], by the hardware's selection order over the smallest device that holds the
// pipeline: a power of two, at least 2 (multi-IPU devices come in powers of two). The physical
// IPUs form a ladder: 2r and 2r+1 are rung r, joined by links_in_pair links; an IPU and the one
// on the same rail a rung away by links_up_down, the other rail's a rung away by links_cross.
// A transfer between neighbours uses their direct links; any other crosses the ladder rung by
// rung at the rail links' bandwidth, one link latency per hop. Each ordered pair of physical
// IPUs is one route: a busy route queues later transfers behind earlier ones (first come,
// first served); different routes do not contend.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "sim/core/checked.hpp"
#include "sim/core/resource.hpp"
#include "sim/core/time.hpp"
#include "sim/spec/hardware.hpp"

namespace ipusim::sim {

// The copies from one IPU to another over the links joining their physical IPUs, in one step.
struct LinkStats {
  int from_ipu = 0;  // logical
  int to_ipu = 0;
  int from_physical = 0;
  int to_physical = 0;
  std::int64_t busy_cycles = 0;
  std::int64_t bytes = 0;
};

// When a transfer occupied which route (physical IPUs).
struct LinkUse {
  int from = 0;
  int to = 0;
  core::Cycles begin;
  core::Cycles end;
};

// The physical IPU that pipeline IPU `index` (of a device of `count`) is placed on.
int physical_ipu(SelectionOrder order, int index, int count);

// Links joining two physical IPUs of the ladder directly (0 when not neighbours).
int links_between(const HardwareSpec& hardware, int a, int b);

// The ladder as the pipeline sees it: logical IPUs mapped to physical ones, and one link
// resource per route, so transfers sharing a route queue behind each other.
class Topology {
 public:
  Topology(const HardwareSpec& hardware, int pipeline_ipus);

  const std::vector<int>& physical() const { return physical_; }

  // Sends `bytes` from pipeline IPU `from` to `to`, starting no earlier than `start`.
  LinkUse send(int from, int to, std::int64_t bytes, core::Cycles start);

  // The routes used so far, ordered by logical (from, to).
  std::vector<LinkStats> stats() const;

 private:
  struct Route {
    core::Resource link;
    std::int64_t bytes = 0;
    // The last transfer's size and cycles: a route mostly carries one tensor over and over.
    std::int64_t last_bytes = -1;
    std::int64_t last_cycles = 0;
  };

  std::int64_t route_cycles(int a, int b, std::int64_t bytes) const;

  const HardwareSpec& hardware_;
  std::vector<int> physical_;
  int width_ = 0;              // physical IPUs a route index spans
  std::vector<Route> routes_;  // by from * width_ + to
};

// Inline: the replay sends a copy for most tasks.
inline std::int64_t Topology::route_cycles(int a, int b, std::int64_t bytes) const {
  const int direct = links_between(hardware_, a, b);
  const int hops = direct > 0 ? 1 : std::abs(a / 2 - b / 2) + 1;
  const int width = direct > 0 ? direct : std::max(1, hardware_.links_up_down);
  return hops * hardware_.link_latency_cycles +
         core::transfer_cycles(double(bytes), hardware_.link_bandwidth * width, hardware_.clock_hz);
}

inline LinkUse Topology::send(int from, int to, std::int64_t bytes, core::Cycles start) {
  const int a = physical_[from];
  const int b = physical_[to];
  Route& route = routes_[std::size_t(a) * width_ + b];
  if (bytes != route.last_bytes) {
    route.last_bytes = bytes;
    route.last_cycles = route_cycles(a, b, bytes);
  }
  const auto held = route.link.occupy(start, route.last_cycles);
  route.bytes = core::checked_add(route.bytes, bytes, core::kByteCount);
  return {a, b, held.begin, held.end};
}

}  // namespace ipusim::sim
