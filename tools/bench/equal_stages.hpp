#pragma once
// The benchmarks' pipeline: N equal stages of a 16-unit dense layer with fixed cycles (1,000
// forward, 2,000 backward) and a loss, micro-batch 8, on gc200 with 64 IPUs, at any GAC
// (relaxed divisibility), so that a replay's size is set by N and M alone. interleaved_1f1b
// runs them two an IPU (the layout it is relaid out to).

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "schedules/build.hpp"

namespace ipusim::bench {

inline nlohmann::json equal_stages(int stages, std::int64_t microbatches,
                                   const std::string& schedule) {
  nlohmann::json layers = nlohmann::json::array();
  nlohmann::json splits = nlohmann::json::array();
  for (int k = 0; k < stages; ++k) {
    const std::string id = "d" + std::to_string(k);
    layers.push_back({{"id", id},
                      {"type", "dense"},
                      {"units", 16},
                      {"cycles", {{"forward", 1000}, {"backward", 2000}}}});
    if (k > 0)
      splits.push_back(id);
  }
  layers.push_back({{"id", "loss"}, {"type", "softmax_cross_entropy"}});
  nlohmann::json pipeline = {{"splits", splits},
                             {"pipeline_schedule", schedule},
                             {"gradient_accumulation_count", microbatches},
                             {"relaxed_divisibility", true},
                             {"micro_batch_size", 8}};
  // A schedule that refuses one stage per IPU (interleaved_1f1b) gets the stages per IPU it is
  // relaid out to, stage k on IPU k mod the IPUs that leaves.
  schedules::PipelineShape shape;
  for (int k = 0; k < stages; ++k)
    shape.device_mapping.push_back({k});
  shape.microbatches = microbatches;
  const auto relaid = schedules::relayout_mapping(schedule, shape);
  if (!relaid.empty()) {
    const int ipus = stages / int(relaid.size() / std::size_t(stages));
    nlohmann::json mapping = nlohmann::json::array();
    for (int k = 0; k < stages; ++k)
      mapping.push_back(k % ipus);
    pipeline["device_mapping"] = mapping;
  }
  return {{"model", {{"name", "bench"}, {"input", {{"shape", {16}}}}, {"layers", layers}}},
          {"pipeline", pipeline},
          {"hardware", {{"preset", "gc200"}, {"ipus", 64}}}};
}

}  // namespace ipusim::bench
