#pragma once
// The numeric check's part of a run report: the losses per micro-batch and whether the pipelined
// run is bit-identical to the reference, as text and as JSON.

#include <nlohmann/json.hpp>
#include <string>

#include "sim/report/report.hpp"

namespace ipusim::sim {

// Empty without a numeric check, or the line saying why it was skipped.
std::string numeric_text(const RunReport& r);
// null without a numeric check.
nlohmann::json numeric_json(const RunReport& r);

}  // namespace ipusim::sim
