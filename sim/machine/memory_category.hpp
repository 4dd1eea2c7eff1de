#pragma once
// What a byte of IPU memory is for. Every report, trace and chart groups memory by these.

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace ipusim::sim {

// Declared in the order of their keys, so that maps by category list them as before.
enum class MemoryCategory {
  kActivations,           // the running task's activations
  kAlwaysLive,            // code and control
  kCopyBuffers,           // inter-IPU copy buffers
  kGradientAccumulators,  // accumulated gradients
  kOptimizerState,        // optimizer state (momentum, Adam's moments)
  kStash,                 // stash FIFOs and the entries in flight
  kWeights,
};

inline constexpr std::array<MemoryCategory, 7> kMemoryCategories = {
    MemoryCategory::kActivations,    MemoryCategory::kAlwaysLive,
    MemoryCategory::kCopyBuffers,    MemoryCategory::kGradientAccumulators,
    MemoryCategory::kOptimizerState, MemoryCategory::kStash,
    MemoryCategory::kWeights};

// The category's one spelling, as JSON keys and trace counters use it: "activations",
// "always_live", "copy_buffers", "gradient_accumulators", "optimizer_state", "stash", "weights".
std::string_view to_string(MemoryCategory category);

// Bytes by category; a category without bytes may be absent.
using MemoryByCategory = std::map<MemoryCategory, std::int64_t>;

// The bytes of `category`, 0 when absent.
std::int64_t bytes_of(const MemoryByCategory& memory, MemoryCategory category);

}  // namespace ipusim::sim
