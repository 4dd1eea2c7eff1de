#pragma once
// Per-IPU memory over one step: what is allocated for the whole program (weights, optimizer
// state, accumulators, copy buffers, the Graphcore schedules' stash FIFOs) and what changes
// (stash entries in flight, the running task's activations), on chip; and what lives in
// streaming memory. Keeps running totals and each IPU's peak with what it held then, so its
// size does not depend on the number of micro-batches.

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "schedules/schedule.hpp"
#include "sim/core/checked.hpp"
#include "sim/core/time.hpp"
#include "sim/machine/cost_model.hpp"

namespace ipusim::sim {

// An IPU's memory at its peak. Invariant: memory_at_peak sums to peak_memory_bytes.
struct MemoryPeak {
  std::int64_t peak_memory_bytes = 0;  // on chip
  std::int64_t peak_stash_bytes = 0;   // on chip
  MemoryByCategory memory_at_peak;     // on chip, by category
  // Off chip: what lives in streaming memory (stash FIFOs, optimizer state).
  MemoryByCategory streaming_memory;
};

// Memory of one IPU that changes during the step: stash entries in flight (dynamic FIFOs)
// and the activations of the running task.
struct MemorySample {
  int ipu = 0;
  core::Cycles at;
  std::int64_t stash_bytes = 0;
  std::int64_t live_bytes = 0;
};

// One IPU over its capacity, at its peak.
struct IpuOverflow {
  int ipu = 0;  // logical
  int physical = 0;
  std::int64_t step = 0;  // 1-based step (BSP) or 0 when not step-based
  std::int64_t cycle = 0;
  std::int64_t bytes = 0;
  std::vector<MemoryItem> largest;  // the five largest consumers at the peak
  MemoryByCategory by_category;     // everything it held at the peak
};

// Every IPU that overflows, the worst (largest need) first; the message details the worst.
struct OutOfMemory {
  std::int64_t capacity = 0;
  std::vector<IpuOverflow> ipus;
  std::string message() const;
};

// The options that lower a run's peak, as run's --set and short flags write them, leaving out
// what the run already does.
std::string memory_help(const RunSpec& spec);

// Tracks every IPU's memory as the replay runs; see the top of this file. Invariant: an IPU's
// total is its static items plus the stash in flight plus the running task's activations.
class MemoryTracker {
 public:
  // offload_fifos: the stash FIFOs live in streaming memory instead of on chip.
  MemoryTracker(const CostModel& cost, const schedules::Schedule& schedule, int ipus,
                std::int64_t capacity, bool offload_fifos);

  // Called for every task: inline, so that the replay's inner loops pay no call.
  void add_stash(int ipu, std::int64_t bytes) {
    stash_[ipu] = core::checked_add(stash_[ipu], bytes, core::kByteCount);
  }
  void set_live(int ipu, std::int64_t bytes) { live_[ipu] = bytes; }

  // Records the current totals of `ipu`, and when and what it held at its peak.
  void observe(int ipu, std::int64_t step, core::Cycles now) {
    const std::int64_t total = static_total_[ipu] + stash_[ipu] + live_[ipu];
    auto& stats = stats_[ipu];
    stats.peak_stash_bytes = std::max(stats.peak_stash_bytes, stash_[ipu] + fifo_total_[ipu]);
    if (total > stats.peak_memory_bytes) {
      stats.peak_memory_bytes = total;
      at_peak_[ipu] = {stash_[ipu], live_[ipu], step, now.count};
    }
  }

  // The peaks, with what each IPU held at its peak by category.
  std::vector<MemoryPeak> stats() const;
  // Every IPU over capacity at its peak, the largest need first (the lower IPU on a tie).
  std::vector<IpuOverflow> overflows() const;

  const std::vector<MemoryByCategory>& static_memory() const { return static_by_category_; }
  MemorySample sample(int ipu, core::Cycles now) const {
    return {ipu, now, stash_[ipu], live_[ipu]};
  }

 private:
  struct Peak {
    std::int64_t stash = 0;
    std::int64_t live = 0;
    std::int64_t step = 0;
    std::int64_t cycle = 0;
  };

  static std::vector<MemoryByCategory> by_category(
      const std::vector<std::vector<MemoryItem>>& items);
  void add_static_fifos(const CostModel& cost, const schedules::Schedule& schedule,
                        bool offload_fifos);
  IpuOverflow overflow(int ipu) const;

  std::vector<std::vector<MemoryItem>> items_;
  std::vector<std::vector<MemoryItem>> streaming_items_;
  std::vector<MemoryByCategory> static_by_category_;
  std::vector<MemoryByCategory> streaming_by_category_;
  std::vector<std::int64_t> static_total_;
  std::vector<std::int64_t> fifo_total_;  // static FIFOs, part of static_total_
  std::int64_t capacity_;
  std::vector<std::int64_t> stash_;
  std::vector<std::int64_t> live_;
  std::vector<Peak> at_peak_;
  std::vector<MemoryPeak> stats_;
};

}  // namespace ipusim::sim
