#pragma once
// Pipeline shapes and text helpers that the schedule tests share.

#include <cstdint>
#include <sstream>
#include <string>

#include "schedules/pipeline_shape.hpp"

namespace ipusim::schedules::testing {

// Stage k on IPU k mod ipus (ipus = stages gives one stage per IPU).
inline PipelineShape round_robin(int stages, int ipus, std::int64_t microbatches) {
  PipelineShape shape;
  for (int k = 0; k < stages; ++k)
    shape.device_mapping.push_back({k % ipus});
  shape.microbatches = microbatches;
  return shape;
}

inline PipelineShape one_per_ipu(int stages, std::int64_t microbatches) {
  return round_robin(stages, stages, microbatches);
}

inline PipelineShape relaxed(PipelineShape shape) {
  shape.relaxed_divisibility = true;
  return shape;
}

// The lines of `text` that start with `prefix`, each ending in '\n'.
inline std::string lines_starting(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  std::string line;
  std::string kept;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0)
      kept += line + "\n";
  }
  return kept;
}

}  // namespace ipusim::schedules::testing
