#pragma once
// The figures users read after a run, derived from the replay result alone: step time,
// throughput, phases, ramp overhead, bubble share, utilisation per IPU and phase, link use and
// memory. Written as a terminal report or as JSON (keys documented in the README).

#include <string>

#include <nlohmann/json.hpp>

#include "sim/run/run.hpp"

namespace ipusim::sim {

std::string render_text(const RunReport& report);
nlohmann::json to_json(const RunReport& report);

}  // namespace ipusim::sim
