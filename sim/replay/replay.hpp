#pragma once
// Replays one schedule on the hardware model and measures it: how long a weight-update step
// takes, how busy each IPU, link and host link is in each phase, and how much memory each IPU
// holds over time, by category. Memory use does not grow with the number of micro-batches:
// tasks come from the schedule on demand and only running totals are kept.
//
// Graphcore's schedules are BSP: in a step every IPU runs its tasks, then all sync and the
// inter-IPU copies of the step are exchanged; the next step starts when the exchange is over
// (step_replay.cpp). The other schedules run each IPU's program order as soon as its
// dependencies are met, on the event queue; copies travel over the links without blocking the
// sending IPU (ordered_replay.cpp). Without observers the same times come from the programs
// alone, without the queue (program_replay.cpp). Both engines take every task from the
// schedule: compute, host transfers, copies (a BSP step's exchange included) and the weight
// update.
//
// Why BSP steps do not run on the event queue: within a step nothing is concurrent in a way
// events would order. Every IPU runs its step program back to back from the step's start,
// the sync waits for the last of them, and the exchange starts after it, so a step's end is a
// maximum over IPUs computed in one pass. Putting each task on the queue would add a heap
// operation per task and change no time; the dependency-ordered engine needs the queue
// because there an IPU's next task waits on another IPU's progress.
//
// IPUs are logical (a stage's device_mapping entry) unless a name says physical.

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "schedules/schedule.hpp"
#include "sim/machine/cost_model.hpp"
#include "sim/machine/memory_tracker.hpp"
#include "sim/machine/topology.hpp"
#include "sim/replay/replay_observer.hpp"
#include "sim/spec/spec.hpp"

namespace ipusim::sim {

// One IPU's figures for one step. Invariant: busy_in_phase sums to busy_cycles.
struct IpuStats : MemoryPeak {
  int physical = 0;              // the physical IPU it is placed on
  std::int64_t busy_cycles = 0;  // compute: F, B, R, W and the weight update
  std::array<std::int64_t, 4> busy_in_phase{};
  std::int64_t host_busy_cycles = 0;
  // The traffic of the step over the IPU's link to streaming memory (stash FIFOs, optimizer
  // state).
  std::int64_t streaming_busy_cycles = 0;
  std::int64_t streaming_bytes = 0;
};

// Where the weight-update phase's cycles go: the parts of the IPU whose update takes longest,
// then the global sync and the host call that end the step, and the wait for the hosts'
// input pipeline when it is slower than the step.
struct WeightUpdateBreakdown {
  int ipu = 0;                      // the longest
  std::int64_t reduce_scatter = 0;  // with a tied word matrix's exchange when sharded
  std::int64_t all_reduce = 0;      // with a tied word matrix's exchange when not sharded
  std::int64_t state_stream = 0;
  std::int64_t update = 0;
  std::int64_t all_gather = 0;
  std::int64_t sync = 0;
  std::int64_t host_call = 0;   // the program's host call, shared by its repeat_count steps
  std::int64_t input_wait = 0;  // for the hosts' input pipeline to prepare the next step
};

// What one replayed repeat measured: its duration, per phase, per IPU and per link; an
// overflow when allow_oom let the replay finish over capacity.
struct ReplayResult {
  std::int64_t step_cycles = 0;  // one repeat: ramp-up .. weight update
  std::array<std::int64_t, 4> phase_cycles{};
  WeightUpdateBreakdown weight_update;
  std::vector<IpuStats> ipus;  // by logical IPU
  std::vector<LinkStats> links;
  std::int64_t tasks = 0;  // tasks replayed in one repeat
  std::optional<OutOfMemory> out_of_memory;
};

// Tasks between two calls of ReplayOptions::progress, at least: a long replay makes about 600
// calls a second, enough for a display, and pays a comparison per step (BSP), per run of an
// IPU's tasks or per event for them.
inline constexpr std::int64_t kReplayProgressTasks = std::int64_t{1} << 16;

// How replay() treats memory overflow and whom it tells of its events and its progress.
struct ReplayOptions {
  bool allow_oom = false;                  // report an overflow in the result instead of throwing
  std::vector<ReplayObserver*> observers;  // told of every event, in order; not owned
  // Told the pipeline's tasks replayed so far once kReplayProgressTasks more have run, at the
  // end of the step or run of tasks that passes them (not at the end: the caller knows when it
  // is). A replay that gives up its fast path starts over and counts from 0 again.
  std::function<void(std::int64_t tasks)> progress;
};

// Replays the whole step even when memory overflows, so that every IPU over its capacity is
// known; then throws core::SimulationOutcome naming them unless options.allow_oom.
ReplayResult replay(const RunSpec& spec, const CostModel& cost, const ReplayOptions& options);

}  // namespace ipusim::sim
