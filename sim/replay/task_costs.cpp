#include "sim/replay/task_costs.hpp"

#include <algorithm>

#include "sim/core/error.hpp"
#include "sim/core/time.hpp"

namespace ipusim::sim {

using schedules::Op;
using schedules::Task;

TaskCosts::TaskCosts(const RunSpec& spec, const schedules::Schedule& schedule,
                     const CostModel& cost)
    : spec_(spec),
      cost_(cost),
      collectives_(spec),
      sharding_group_(sharding_group(spec)),
      split_weight_grad_(schedule.splits_weight_grad()),
      routes_(cost.stages.size()) {
  for (const auto& [key, bytes] : cost.copy_bytes) {
    const auto& [stage, ipu, peer, gradient] = key;
    routes_[stage].push_back({ipu, peer, gradient, bytes});
  }
}

double TaskCosts::flops(const Task& task) const {
  const auto& sub = substage(task);
  switch (task.op) {
    case Op::kForward:
    case Op::kRecompute:
      return sub.forward_flops;
    case Op::kBackward:
    case Op::kWeightGrad:
      return sub.backward_cycles > 0
                 ? sub.backward_flops * double(compute_cycles(task)) / double(sub.backward_cycles)
                 : 0.0;
    default:
      return 0.0;
  }
}

std::int64_t TaskCosts::streaming_cycles(std::int64_t bytes) const {
  const auto& hw = spec_.hardware;
  return core::transfer_cycles(double(bytes), hw.streaming_memory_bandwidth, hw.clock_hz);
}

std::int64_t TaskCosts::reduce_scatter_cycles(int ipu) const {
  if (sharding_group_ == 1)
    return 0;
  return collectives_.reduce_scatter(double(cost_.gradient_bytes[ipu]));
}

std::int64_t TaskCosts::all_reduce_cycles(int ipu) const {
  const double gradients = double(cost_.gradient_bytes[ipu]);
  if (sharding_group_ == 1)
    return collectives_.all_reduce(gradients);
  return collectives_.cross_ild_all_reduce(gradients / sharding_group_);
}

std::int64_t TaskCosts::all_gather_cycles(int ipu) const {
  if (sharding_group_ == 1)
    return 0;
  return collectives_.all_gather(double(cost_.weight_bytes[ipu]));
}

std::int64_t TaskCosts::tied_exchange_cycles(int ipu) const {
  const auto bytes = cost_.tied_exchange_bytes[ipu];
  if (bytes == 0)
    return 0;
  const auto& hw = spec_.hardware;
  return 2 * hw.link_latency_cycles +
         core::transfer_cycles(double(bytes), hw.link_bandwidth, hw.clock_hz);
}

}  // namespace ipusim::sim
