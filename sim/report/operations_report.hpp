#pragma once
// The Operations Summary of a run: per stage and IPU, each operation's cycles per micro-batch
// (forward, backward, recompute), FLOPs, achieved FLOP/s, tiles, what bounds it and its code
// memory. The rows of a sub-stage sum to the cycles the replay charges its tasks.

#include <string>

#include <nlohmann/json.hpp>

#include "sim/report/report.hpp"

namespace ipusim::sim {

std::string render_operations(const RunReport& report);

// An operation's class ("matmul", ...) or "profiled".
std::string operation_class_name(const OperationCost& op);
// What bounds its passes: "compute" or "overhead/exchange" (forward/backward), "-" if profiled.
std::string operation_bounds(const OperationCost& op);
// For each sub-stage, the operation (summed over the layers that run it) that takes the most of
// its cycles and its share: where a better split or setting would have to save. A heading line,
// then a line a sub-stage.
std::string bounding_operations(const CostModel& cost);
nlohmann::json operations_json(const RunReport& report);

}  // namespace ipusim::sim
