#pragma once
// What a schedule builder needs to know about a pipeline, and nothing more: how many
// computational stages there are, which IPU runs each, how many micro-batches make one
// weight update, and how activations are kept for the backward pass. No layers, no hardware.

#include <cstdint>
#include <string>
#include <vector>

namespace ipusim::schedules {

enum class RecomputationMode {
  kNone,
  kAuto,  // resolved by the schedule as Graphcore does (see resolve_recomputation)
  kRecomputeThenBackpropagate,
  kRecomputeAndBackpropagateInterleaved,
};

// The config's names of the modes, in RecomputationMode order: "none", "auto",
// "recompute_then_backpropagate" (Graphcore's RecomputeThenBackpropagate) and
// "recompute_and_backpropagate_interleaved". Spelled here only.
const std::vector<std::string>& recomputation_mode_names();
const std::string& to_string(RecomputationMode mode);
// The mode a name gives; the name is one of recomputation_mode_names().
RecomputationMode recomputation_mode_of(const std::string& name);

struct PipelineShape {
  // device_mapping[k] lists the IPUs of computational stage k. One entry is an ordinary stage;
  // several entries make a concurrent stage whose sub-stages run at once on those IPUs and
  // together take one slot of the schedule.
  std::vector<std::vector<int>> device_mapping;
  std::int64_t microbatches = 1;  // M = gradient_accumulation_count
  std::int64_t repeat_count = 1;  // the whole program (ramp-up .. weight update) repeats
  RecomputationMode recomputation = RecomputationMode::kNone;
  bool training = true;
  bool relaxed_divisibility = false;  // accept M that Graphcore rejects; outputs say so
  int replicas = 1;                   // > 1 adds a gradient all-reduce to the weight update

  int stages() const { return static_cast<int>(device_mapping.size()); }
  int ipus() const {
    int count = 0;
    for (const auto& ipus : device_mapping) {
      for (int ipu : ipus)
        count = ipu + 1 > count ? ipu + 1 : count;
    }
    return count;
  }
};

}  // namespace ipusim::schedules
