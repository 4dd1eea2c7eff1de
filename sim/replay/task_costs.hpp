#pragma once
// What one task costs on the hardware model: compute cycles and FLOPs of F, B, R and W, bytes
// and cycles of host transfers, bytes of inter-IPU copies, streaming-memory transfers and the
// weight update's parts. Pure functions of the cost model and the hardware; the replay decides
// when tasks run.

#include <cstdint>
#include <vector>

#include "schedules/schedule.hpp"
#include "schedules/task.hpp"
#include "sim/core/error.hpp"
#include "sim/core/time.hpp"
#include "sim/machine/collectives.hpp"
#include "sim/machine/cost_model.hpp"
#include "sim/spec/spec.hpp"

namespace ipusim::sim {

// Looks up and derives the cost of each task (see the top); holds no replay state.
class TaskCosts {
 public:
  TaskCosts(const RunSpec& spec, const schedules::Schedule& schedule, const CostModel& cost);

  // F, B, R, W: cycles on the IPU (B without its W part when the schedule splits W off).
  std::int64_t compute_cycles(const schedules::Task& task) const;
  // FLOPs of a compute task; a split-off W gets the backward's FLOPs in proportion to cycles.
  double flops(const schedules::Task& task) const;
  const SubstageCost& substage(const schedules::Task& task) const {
    return cost_.substage(task.stage, task.substage);
  }
  // The activations alive while a compute task runs: a recomputation or backward also holds the
  // state its stage rebuilds.
  std::int64_t live_bytes(const schedules::Task& task) const {
    const SubstageCost& sub = substage(task);
    return task.op == schedules::Op::kForward ? sub.live_bytes : sub.backward_live_bytes;
  }
  // Infeed and outfeed: bytes of one micro-batch, and the cycles the host link takes.
  std::int64_t host_bytes(const schedules::Task& task) const;
  std::int64_t host_cycles(std::int64_t bytes) const;
  // A copy's bytes; a route the cost model has no bytes for carries nothing.
  std::int64_t copy_bytes(const schedules::Task& task) const;
  // At the streaming-memory link's bandwidth only: no fixed cost per transfer is published
  // (ipu-hardware.md §2 has only the bandwidth's upper bound), so none is modelled.
  std::int64_t streaming_cycles(std::int64_t bytes) const;
  // The replicas' collectives over `ipu`'s gradients (sim/machine/collectives.hpp). Replicated
  // state: an all-reduce over all replicas. Sharded state: a reduce-scatter inside the sharding
  // group, an all-reduce of the shard between ILDs (0 in one ILD), and after the update an
  // all-gather of the weights; unsharded runs have no reduce-scatter or all-gather.
  std::int64_t reduce_scatter_cycles(int ipu) const;
  std::int64_t all_reduce_cycles(int ipu) const;
  std::int64_t all_gather_cycles(int ipu) const;
  // A tied word matrix's gradient to its owner's IPU and the matrix back, over one IPU-Link.
  std::int64_t tied_exchange_cycles(int ipu) const;
  std::int64_t offload_bytes(int ipu) const { return cost_.offload_bytes[ipu]; }
  std::int64_t weight_update_cycles(int ipu) const { return cost_.weight_update_cycles[ipu]; }
  const HostInput& host_input() const { return cost_.host_input; }

 private:
  struct Route {
    int ipu = 0;
    int peer = 0;
    bool gradient = false;
    std::int64_t bytes = 0;
  };

  const RunSpec& spec_;
  const CostModel& cost_;
  Collectives collectives_;
  int sharding_group_;
  bool split_weight_grad_;
  std::vector<std::vector<Route>> routes_;  // by stage: a short scan beats a map lookup
};

// The costs the replay asks for every task are inline: its inner loops pay no call for them.

inline std::int64_t TaskCosts::compute_cycles(const schedules::Task& task) const {
  const auto& sub = substage(task);
  switch (task.op) {
    case schedules::Op::kForward:
      return sub.forward_cycles;
    case schedules::Op::kRecompute:
      return sub.recompute_cycles;
    case schedules::Op::kWeightGrad:
      return sub.weight_grad_cycles;
    case schedules::Op::kBackward:
      return split_weight_grad_ ? sub.backward_cycles - sub.weight_grad_cycles
                                : sub.backward_cycles;
    default:
      return 0;
  }
}

inline std::int64_t TaskCosts::host_bytes(const schedules::Task& task) const {
  IPUSIM_CHECK(task.op == schedules::Op::kInfeed || task.op == schedules::Op::kOutfeed);
  return task.op == schedules::Op::kInfeed ? cost_.infeed_bytes : cost_.outfeed_bytes;
}

inline std::int64_t TaskCosts::host_cycles(std::int64_t bytes) const {
  const auto& hw = spec_.hardware;
  return hw.host_sync_cycles +
         core::transfer_cycles(double(bytes), hw.host_link_bandwidth, hw.clock_hz);
}

inline std::int64_t TaskCosts::copy_bytes(const schedules::Task& task) const {
  const bool gradient = task.copy == schedules::CopyKind::kGradient;
  for (const auto& route : routes_[task.stage]) {
    if (route.ipu == task.ipu && route.peer == task.peer_ipu && route.gradient == gradient)
      return route.bytes;
  }
  return 0;
}

}  // namespace ipusim::sim
