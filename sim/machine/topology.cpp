#include "sim/machine/topology.hpp"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "sim/core/checked.hpp"
#include "sim/core/error.hpp"

namespace ipusim::sim {

int physical_ipu(SelectionOrder order, int index, int count) {
  IPUSIM_CHECK(index >= 0 && index < count);
  switch (order) {
    case SelectionOrder::kZigzag:
      return index;
    case SelectionOrder::kSnake: {
      // 0,1,3,2,4,5,7,6: every second rung is walked right to left.
      const int rung = index / 2;
      const int side = index % 2;
      return 2 * rung + (rung % 2 == 0 ? side : 1 - side);
    }
    case SelectionOrder::kHoof: {
      // Up the left rail (0,2,4,...) and down the right rail (...,5,3,1).
      const int half = (count + 1) / 2;
      return index < half ? 2 * index : 2 * (count - 1 - index) + 1;
    }
  }
  return index;
}

int links_between(const HardwareSpec& hw, int a, int b) {
  if (a > b)
    std::swap(a, b);
  const int rung_a = a / 2;
  const int rung_b = b / 2;
  if (rung_a == rung_b)
    return hw.links_in_pair;
  if (rung_b != rung_a + 1)
    return 0;
  return (a % 2) == (b % 2) ? hw.links_up_down : hw.links_cross;
}

Topology::Topology(const HardwareSpec& hardware, int pipeline_ipus) : hardware_(hardware) {
  const int device = std::max(core::round_up_to_power_of_two(pipeline_ipus), 2);
  for (int i = 0; i < pipeline_ipus; ++i)
    physical_.push_back(physical_ipu(hardware.selection_order, i, device));
  width_ = device;
  for (const int p : physical_)
    width_ = std::max(width_, p + 1);
  routes_.resize(std::size_t(width_) * width_);
}

std::vector<LinkStats> Topology::stats() const {
  std::vector<int> logical(std::size_t(width_), -1);
  for (int i = 0; i < int(physical_.size()); ++i)
    logical[physical_[i]] = i;
  std::vector<LinkStats> out;
  for (std::size_t i = 0; i < routes_.size(); ++i) {
    const auto& route = routes_[i];
    if (route.link.uses() == 0)
      continue;
    const int a = int(i / width_);
    const int b = int(i % width_);
    out.push_back({logical[a], logical[b], a, b, route.link.busy_cycles(), route.bytes});
  }
  std::sort(out.begin(), out.end(), [](const LinkStats& x, const LinkStats& y) {
    return std::pair{x.from_ipu, x.to_ipu} < std::pair{y.from_ipu, y.to_ipu};
  });
  return out;
}

}  // namespace ipusim::sim
