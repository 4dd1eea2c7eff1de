#pragma once
// Throughput against the peak memory of the fullest IPU, one point per run or candidate: the
// plan, compare and sweep pages draw the same chart so that a reader learns it once. Runs
// that do not fit are rings over the shaded region past the capacity; the Pareto front of
// the fitting ones (nothing else both faster and smaller) is drawn through its points.
// Part of sim/html, which may include sim/core, sim/report, sim/replay/timeline and
// schedules; never sim/sweep or tools.

#include <cstdint>
#include <string>
#include <vector>

namespace ipusim::sim::html {

struct ParetoPoint {
  std::string label;      // in the tooltip and, with `ParetoChart::label_points`, beside the point
  std::string tag;        // short text beside the point when set, e.g. the run's number
  double throughput = 0;  // samples/s
  std::int64_t peak_bytes = 0;  // of the fullest IPU
  bool fits = false;
  bool best = false;  // drawn larger, in another colour, marked "#1"
};

struct ParetoChart {
  std::string id;  // of the <svg>
  std::string title;
  std::int64_t capacity_bytes = 0;  // 0: unknown, nothing shaded
  std::vector<ParetoPoint> points;
  bool label_points = false;  // write each label (or tag) beside its point (a few runs only)
};

// The chart as inline SVG with its legend.
std::string pareto_chart(const ParetoChart& chart);

}  // namespace ipusim::sim::html
