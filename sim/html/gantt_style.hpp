#pragma once
// How the Gantt charts look: each kind of box's CSS class, colour and legend entry, each
// phase band's, the legend above a chart and the charts' CSS.
// Part of sim/html, which may include sim/core, sim/report, sim/replay/timeline and
// schedules; never sim/sweep or tools.

#include <string>
#include <vector>

#include "sim/html/gantt_layout.hpp"

namespace ipusim::sim::gantt {

// How a kind of box looks: its CSS class, fill and legend entry.
struct KindStyle {
  const char* css;
  const char* colour;
  std::string legend;
  bool dark_text;  // on light fills
};

// How a phase band looks, by phase: its CSS class, fill, text colour and the short name
// that fits a narrow band (the long one is the phase's own).
struct PhaseStyle {
  const char* css;
  const char* fill;
  const char* text;
  const char* short_label;
};

const KindStyle& kind_style(Kind kind);
const PhaseStyle& phase_style(schedules::Phase phase);

// The legend of the kinds of box the views draw and of the phases they have.
std::string legend(const std::vector<RunView>& views);

}  // namespace ipusim::sim::gantt
