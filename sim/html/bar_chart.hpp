#pragma once
// A horizontal bar chart with groups of bars: the compare page's throughput per run and peak
// memory per IPU of each run, against the capacity. A bar past the limit, and every bar of a
// run that does not fit, is drawn hollow, so that such a run never looks like a solid result.
// Part of sim/html, which may include sim/core, sim/report, sim/replay/timeline and
// schedules; never sim/sweep or tools.

#include <string>
#include <vector>

namespace ipusim::sim::html {

struct Bar {
  std::string name;  // beside the bar, e.g. "IPU1"; may be empty
  double value = 0;
  std::string value_text;  // written at the end of the bar, with its unit
  std::string title;       // tooltip
  bool hollow = false;     // its run does not fit in memory; bars past the limit are hollow too
};

struct BarGroup {
  std::string label;  // left of the group
  std::vector<Bar> bars;
};

struct BarChart {
  std::string id;  // of the <svg>
  std::string title;
  std::string axis_label;  // with its unit
  std::vector<BarGroup> groups;
  double limit = 0;  // 0: none; else bars over it are hollow and the region past it shaded
  std::string limit_label;
};

// The chart as inline SVG.
std::string bar_chart(const BarChart& chart);

}  // namespace ipusim::sim::html
