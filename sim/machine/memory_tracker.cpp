#include "sim/machine/memory_tracker.hpp"

#include <algorithm>
#include <string>

#include "sim/core/checked.hpp"

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/machine/stash_cost.hpp"

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

// "353 MB gradient accumulators, 176 MB weights, ...": the largest first, none of 0 bytes.
std::string category_totals(const MemoryByCategory& memory) {
  std::vector<std::pair<std::int64_t, std::string>> totals;
  for (const auto& [category, bytes] : memory) {
    std::string name(to_string(category));
    std::replace(name.begin(), name.end(), '_', ' ');
    if (bytes > 0)
      totals.emplace_back(bytes, name);
  }
  std::stable_sort(totals.begin(), totals.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string text;
  for (const auto& [bytes, name] : totals)
    text += (text.empty() ? "" : ", ") + si(double(bytes), "B") + " " + name;
  return text;
}

}  // namespace

std::string memory_help(const RunSpec& spec) {
  const auto& p = spec.pipeline;
  std::vector<std::string> help;
  const auto resolved = spec.schedule->recomputation();
  if (p.training && resolved == schedules::RecomputationMode::kNone)
    help.push_back("recomputation (--set pipeline.recomputation_mode=auto)");
  if (resolved == schedules::RecomputationMode::kRecomputeAndBackpropagateInterleaved &&
      !p.recompute_checkpoint_every_layer)
    help.push_back("checkpoints (--set pipeline.recompute_checkpoint_every_layer=true)");
  if (p.training && !p.offload_weight_update_variables)
    help.push_back("--set pipeline.offload_weight_update_variables=true");
  const auto depth = spec.schedule->stash_depth();
  if (spec.schedule->step_based() && !p.offload_activations &&
      std::any_of(depth.begin(), depth.end(), [](std::int64_t d) { return d > 0; }))
    help.push_back("--set pipeline.offload_activations=true");
  if (p.micro_batch_size > 1)
    help.push_back("a smaller micro-batch (--micro-batch " +
                   std::to_string(p.micro_batch_size / 2) + ")");
  help.push_back("more IPUs per replica (ipusim plan CONFIG --ipus-per-replica " +
                 std::to_string(2 * p.ipus_per_replica()) + ")");
  std::string text;
  for (const auto& h : help)
    text += (text.empty() ? "" : ", ") + h;
  return text;
}

std::string OutOfMemory::message() const {
  IPUSIM_CHECK(!ipus.empty());
  std::string text = "out of memory";
  if (ipus.size() > 1)
    text += " on " + std::to_string(ipus.size()) + " IPUs, the worst first";
  text += ": " + overflow_text(ipus.front(), capacity) + ". Largest consumers:";
  for (const auto& item : ipus.front().largest)
    text += "\n  " + si(double(item.bytes), "B") + "  " + item.name;
  text += "\nIn all: " + category_totals(ipus.front().by_category);
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
    add_static_fifos(cost, schedule, offload_fifos);
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

// Each stage's entries: its FIFO's buffers and the micro-batch between its forward and its
// backward, on chip, or the buffers in streaming memory when the FIFOs are offloaded.
void MemoryTracker::add_static_fifos(const CostModel& cost, const schedules::Schedule& schedule,
                                     bool offload_fifos) {
  const auto held = schedule.microbatches_held();
  const auto on_chip = held_on_chip(schedule, offload_fifos);
  const auto add = [&](std::vector<MemoryItem>& items, int stage, std::int64_t entries,
                       std::int64_t entry_bytes, std::string_view what) {
    const std::int64_t bytes = core::checked_mul(entries, entry_bytes, core::kByteCount);
    if (bytes > 0) {
      items.push_back({MemoryCategory::kStash,
                       std::string(what) + " of stage " + std::to_string(stage) + " (" +
                           std::to_string(entries) + " x " + si(double(entry_bytes), "B") + ")",
                       bytes});
    }
  };
  for (int s = 0; s < int(cost.stages.size()); ++s) {
    for (const auto& sub : cost.stages[s]) {
      add(items_[sub.ipu], s, on_chip[s], sub.stash_bytes,
          offload_fifos ? "stash FIFO output" : to_string(MemoryCategory::kStash));
      add(streaming_items_[sub.ipu], s, held[s] - on_chip[s], sub.stash_bytes, "stash FIFO");
    }
  }
}

IpuOverflow MemoryTracker::overflow(int ipu) const {
  const Peak& peak = at_peak_[ipu];
  IpuOverflow oom{ipu,
                  ipu,
                  peak.step,
                  peak.cycle,
                  stats_[ipu].peak_memory_bytes,
                  items_[ipu],
                  static_by_category_[ipu]};
  oom.by_category[MemoryCategory::kStash] += peak.stash;
  oom.by_category[MemoryCategory::kActivations] += peak.live;
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
