#pragma once
// Replays one schedule on the hardware model and measures it: how long a weight-update step
// takes, how busy each IPU, link and host link is in each phase, and how much memory each IPU
// holds over time, by category. Memory use does not grow with the number of micro-batches:
// tasks come from the schedule on demand and only running totals are kept.
//
// Graphcore's schedules are BSP: in a step every IPU runs its tasks, then all sync and the
// inter-IPU copies of the step are exchanged; the next step starts when the exchange is over.
// The other schedules run each IPU's program order as soon as its dependencies are met, on
// the event queue; copies travel over the links without blocking the sending IPU.
//
// IPUs are logical (a stage's device_mapping entry) unless a name says physical.

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "schedules/schedule.hpp"
#include "sim/machine/cost_model.hpp"
#include "sim/replay/replay_observer.hpp"
#include "sim/spec/spec.hpp"

namespace ipusim::sim {

enum PhaseIndex { kRampUp = 0, kMain = 1, kRampDown = 2, kWeightUpdate = 3 };
inline constexpr std::array<const char*, 4> kPhaseNames = {"ramp_up", "main", "ramp_down",
                                                           "weight_update"};

struct IpuStats {
  int physical = 0;              // the physical IPU it is placed on
  std::int64_t busy_cycles = 0;  // compute: F, B, R, W and the weight update
  std::array<std::int64_t, 4> busy_in_phase{};
  std::int64_t host_busy_cycles = 0;
  std::int64_t peak_memory_bytes = 0;                  // on chip
  std::int64_t peak_stash_bytes = 0;                   // on chip
  std::map<std::string, std::int64_t> memory_at_peak;  // on chip, by category
  // Off chip: what lives in streaming memory by category ("stash", "optimizer_state"), and
  // the traffic of the step over the IPU's link to it (stash FIFOs, optimizer state).
  std::map<std::string, std::int64_t> streaming_memory;
  std::int64_t streaming_busy_cycles = 0;
  std::int64_t streaming_bytes = 0;
};

// The copies from one IPU to another over the links joining their physical IPUs.
struct LinkStats {
  int from_ipu = 0;  // logical
  int to_ipu = 0;
  int from_physical = 0;
  int to_physical = 0;
  std::int64_t busy_cycles = 0;
  std::int64_t bytes = 0;
};

// One IPU over its capacity, at its peak.
struct IpuOverflow {
  int ipu = 0;  // logical
  int physical = 0;
  std::int64_t step = 0;  // 1-based step (BSP) or 0 when not step-based
  std::int64_t cycle = 0;
  std::int64_t bytes = 0;
  std::vector<MemoryItem> largest;  // the five largest consumers at the peak
};

// Every IPU that overflows, the worst (largest need) first; the message details the worst.
struct OutOfMemory {
  std::int64_t capacity = 0;
  std::vector<IpuOverflow> ipus;
  std::string message() const;
};

struct ReplayResult {
  std::int64_t step_cycles = 0;  // one repeat: ramp-up .. weight update
  std::array<std::int64_t, 4> phase_cycles{};
  std::vector<IpuStats> ipus;  // by logical IPU
  std::vector<LinkStats> links;
  std::int64_t tasks = 0;  // tasks replayed in one repeat
  std::optional<OutOfMemory> out_of_memory;
};

struct ReplayOptions {
  bool allow_oom = false;                  // report an overflow in the result instead of throwing
  std::vector<ReplayObserver*> observers;  // told of every event, in order; not owned
};

// Replays the whole step even when memory overflows, so that every IPU over its capacity is
// known; then throws core::SimulationOutcome naming them unless options.allow_oom.
ReplayResult replay(const RunSpec& spec, const schedules::Schedule& schedule, const CostModel& cost,
                    const ReplayOptions& options);

}  // namespace ipusim::sim
