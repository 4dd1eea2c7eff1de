#pragma once
// The run page's memory section: per IPU, memory over the step stacked by category against
// the capacity, the changing part on its own scale, and a table of peaks.
// Part of sim/html, which may include sim/core, sim/report, sim/replay/timeline and
// schedules; never sim/sweep or tools.

#include <string>

#include "sim/replay/timeline.hpp"
#include "sim/report/report.hpp"

namespace ipusim::sim::html {

// The section as HTML; `timeline` is the recorded step of the run `report` describes.
std::string memory_section(const RunReport& report, const Timeline& timeline);

}  // namespace ipusim::sim::html
