#pragma once
// What the replay tells its listeners while it runs: every task with its start and end, every
// transfer on a link, the BSP sync and exchange spans, the phase boundaries, memory changes and
// the weight update. The numeric pipeline, the trace and the HTML report listen to it; with no
// observer the replay pays nothing for them.
//
// Tasks are reported when they start, in an order that respects their dependencies: in a BSP
// step IPU by IPU in program order, otherwise in simulated time. A listener that runs real
// kernels can therefore run each task when it is told of it.

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "schedules/task.hpp"
#include "sim/core/time.hpp"
#include "sim/machine/memory_tracker.hpp"

namespace ipusim::sim {

struct CostModel;

// The machine one replica runs on, told before the first event. IPUs are numbered logically
// (a stage's device_mapping entry) everywhere; `physical` maps them onto the device.
struct ReplayLayout {
  int ipus = 0;               // pipeline IPUs of one replica
  std::vector<int> physical;  // physical IPU of each pipeline IPU (hardware.selection_order)
  int replicas = 1;
  double clock_hz = 0;
  std::int64_t memory_capacity = 0;  // bytes per IPU
  bool step_based = false;           // BSP steps (Graphcore schedules)
  // Memory that does not change during the step, per IPU by category; FIFOs are here when the
  // schedule allocates them for the whole program (Graphcore schedules).
  std::vector<MemoryByCategory> static_memory;
  // What each stage's tasks cost, operation by operation; lives as long as the replay.
  const CostModel* cost = nullptr;
};

// A compute task (F, B, R, W) or a host transfer (infeed, outfeed) on one IPU.
struct TaskSpan {
  schedules::Task task;
  core::Cycles start;
  core::Cycles end;
  schedules::Phase phase = schedules::Phase::kRampUp;  // the phase the time counts towards
  double flops = 0;
  std::int64_t bytes = 0;  // host transfers: bytes moved; compute: live activation bytes
};

// An inter-IPU copy from logical IPU task.ipu to task.peer_ipu, on the link between their
// physical IPUs.
struct TransferSpan {
  schedules::Task task;
  int from_physical = 0;
  int to_physical = 0;
  std::int64_t bytes = 0;
  core::Cycles start;
  core::Cycles end;
};

// A stash FIFO's traffic with streaming memory under offload_activations. Each time the FIFO
// of `stage` runs (in the stage's forward slot of a BSP step) it reads its oldest entry back
// onto the IPU, then writes the newest out; the IPU waits for both.
struct StreamSpan {
  enum class Kind { kStashRead, kStashWrite };
  Kind kind = Kind::kStashRead;
  int ipu = 0;
  int stage = 0;
  std::int64_t step = 0;                               // 0-based
  schedules::Phase phase = schedules::Phase::kRampUp;  // the phase the time counts towards
  std::int64_t bytes = 0;
  core::Cycles start;
  core::Cycles end;
};

// A span every pipeline IPU spends together: the BSP sync and the exchange after it.
struct BarrierSpan {
  enum class Kind { kSync, kExchange };
  Kind kind = Kind::kSync;
  std::int64_t step = 0;  // 0-based
  core::Cycles start;
  core::Cycles end;
};

// One IPU's weight update, back to back: a tied word matrix's exchange, the replicas'
// gradient reduction, streaming the offloaded optimizer state in and out, the on-chip update,
// then (sharded state only) the all-gather of the updated weights. Without sharded state the
// reduce-scatter is empty and the exchange counts as part of the all-reduce.
struct WeightUpdateSpan {
  int ipu = 0;
  core::Cycles start;
  core::Cycles reduce_scatter_end;  // sharded: after the exchange and the reduce-scatter
  core::Cycles all_reduce_end;      // after the all-reduce (sharded: of the shard between ILDs)
  core::Cycles offload_end;
  core::Cycles update_end;
  core::Cycles end;  // after the all-gather
};

// Told of a replay's events in the order they happen; every hook does nothing unless
// overridden.
class ReplayObserver {
 public:
  virtual ~ReplayObserver() = default;
  virtual void on_begin(const ReplayLayout&) {}
  virtual void on_task(const TaskSpan&) {}
  virtual void on_transfer(const TransferSpan&) {}
  virtual void on_stream(const StreamSpan&) {}
  virtual void on_barrier(const BarrierSpan&) {}
  virtual void on_phase(schedules::Phase /*phase*/, core::Cycles /*start*/) {}
  virtual void on_memory(const MemorySample&) {}
  virtual void on_weight_update(const WeightUpdateSpan&) {}
  virtual void on_end(core::Cycles /*end*/) {}
};

}  // namespace ipusim::sim
