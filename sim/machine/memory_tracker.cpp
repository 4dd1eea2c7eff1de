#include "sim/machine/memory_tracker.hpp"

#include <algorithm>
#include <string>

#include "sim/core/checked.hpp"

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"

namespace ipusim::sim {
namespace {

// "IPU2 (physical IPU3) needs 1.2 GB but has 941 MB at step 4 (cycle 1,234)".
std::string overflow_text(const IpuOverflow& overflow, std::int64_t capacity) {
  return "IPU" + std::to_string(overflow.ipu) + " (physical IPU" +
         std::to_string(overflow.physical) + ") needs " + si(double(overflow.bytes), "B") +
         " but has " + si(double(capacity), "B") +
         (overflow.step > 0 ? " at step " + std::to_string(overflow.step) : "") + " (cycle " +
         with_commas(overflow.cycle) + ")";
}

}  // namespace

std::string OutOfMemory::message() const {
  IPUSIM_CHECK(!ipus.empty());
  std::string text = "out of memory";
  if (ipus.size() > 1)
    text += " on " + std::to_string(ipus.size()) + " IPUs, the worst first";
  text += ": " + overflow_text(ipus.front(), capacity) + ". Largest consumers:";
  for (const auto& item : ipus.front().largest)
    text += "\n  " + si(double(item.bytes), "B") + "  " + item.name;
  for (std::size_t i = 1; i < ipus.size(); ++i)
    text += "\n" + overflow_text(ipus[i], capacity);
  return text;
}

MemoryTracker::MemoryTracker(const CostModel& cost, const schedules::Schedule& schedule, int ipus,
                             std::int64_t capacity, bool offload_fifos)
    : items_(cost.static_memory),
      streaming_items_(cost.streaming_memory),
      capacity_(capacity),
      stash_(ipus, 0),
      live_(ipus, 0),
      at_peak_(ipus),
      stats_(ipus) {
  items_.resize(ipus);
  streaming_items_.resize(ipus);
  if (schedule.step_based())
    add_static_fifos(cost, schedule, offload_fifos ? streaming_items_ : items_);
  static_by_category_ = by_category(items_);
  streaming_by_category_ = by_category(streaming_items_);
  static_total_.assign(ipus, 0);
  fifo_total_.assign(ipus, 0);
  for (int ipu = 0; ipu < ipus; ++ipu) {
    for (const auto& [category, bytes] : static_by_category_[ipu])
      static_total_[ipu] = core::checked_add(static_total_[ipu], bytes, core::kByteCount);
    const auto fifos = static_by_category_[ipu].find(MemoryCategory::kStash);
    fifo_total_[ipu] = fifos == static_by_category_[ipu].end() ? 0 : fifos->second;
  }
}

std::vector<MemoryPeak> MemoryTracker::stats() const {
  auto stats = stats_;
  for (std::size_t ipu = 0; ipu < stats.size(); ++ipu) {
    auto& breakdown = stats[ipu].memory_at_peak;
    breakdown = static_by_category_[ipu];
    if (at_peak_[ipu].stash > 0)
      breakdown[MemoryCategory::kStash] += at_peak_[ipu].stash;
    if (at_peak_[ipu].live > 0)
      breakdown[MemoryCategory::kActivations] += at_peak_[ipu].live;
    stats[ipu].streaming_memory = streaming_by_category_[ipu];
  }
  return stats;
}

std::vector<IpuOverflow> MemoryTracker::overflows() const {
  std::vector<IpuOverflow> out;
  for (int ipu = 0; ipu < int(stats_.size()); ++ipu) {
    if (stats_[ipu].peak_memory_bytes > capacity_)
      out.push_back(overflow(ipu));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const IpuOverflow& a, const IpuOverflow& b) { return a.bytes > b.bytes; });
  return out;
}

std::vector<MemoryByCategory> MemoryTracker::by_category(
    const std::vector<std::vector<MemoryItem>>& items) {
  std::vector<MemoryByCategory> out(items.size());
  for (std::size_t ipu = 0; ipu < items.size(); ++ipu) {
    for (const auto& item : items[ipu]) {
      auto& total = out[ipu][item.category];
      total = core::checked_add(total, item.bytes, core::kByteCount);
    }
  }
  return out;
}

void MemoryTracker::add_static_fifos(const CostModel& cost, const schedules::Schedule& schedule,
                                     std::vector<std::vector<MemoryItem>>& items) {
  const auto depth = schedule.stash_depth();
  for (int s = 0; s < int(cost.stages.size()); ++s) {
    for (const auto& sub : cost.stages[s]) {
      const std::int64_t bytes = core::checked_mul(depth[s], sub.stash_bytes, core::kByteCount);
      if (bytes == 0)
        continue;
      items[sub.ipu].push_back({MemoryCategory::kStash,
                                "stash FIFO of stage " + std::to_string(s) + " (" +
                                    std::to_string(depth[s]) + " x " +
                                    si(double(sub.stash_bytes), "B") + ")",
                                bytes});
    }
  }
}

IpuOverflow MemoryTracker::overflow(int ipu) const {
  const Peak& peak = at_peak_[ipu];
  IpuOverflow oom{ipu, ipu, peak.step, peak.cycle, stats_[ipu].peak_memory_bytes, items_[ipu]};
  if (peak.stash > 0)
    oom.largest.push_back({MemoryCategory::kStash, "stashed activations in flight", peak.stash});
  if (peak.live > 0)
    oom.largest.push_back(
        {MemoryCategory::kActivations, "activations of the running task", peak.live});
  std::stable_sort(oom.largest.begin(), oom.largest.end(),
                   [](const MemoryItem& a, const MemoryItem& b) { return a.bytes > b.bytes; });
  if (oom.largest.size() > 5)
    oom.largest.resize(5);
  return oom;
}

}  // namespace ipusim::sim
