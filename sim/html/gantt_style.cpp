#include "sim/html/gantt_style.hpp"

#include <array>

#include "sim/html/gantt.hpp"
#include "sim/html/svg.hpp"

namespace ipusim::sim {
namespace gantt {
namespace {

using schedules::Op;

// "F forward" for compute, the task kind's name for the rest.
std::string op_legend(Op op) {
  const std::string name(schedules::to_string(op));
  return schedules::is_compute(op) ? std::string(1, schedules::op_letter(op)) + " " + name : name;
}

const std::array<KindStyle, kKinds> kStyles = {{
    {"k-f", "#4c78a8", op_legend(Op::kForward), false},
    {"k-b", "#f58518", op_legend(Op::kBackward), false},
    {"k-r", "#b279a2", op_legend(Op::kRecompute), false},
    {"k-w", "#54a24b", op_legend(Op::kWeightGrad), false},
    {"k-ar", "#9d755d", op_legend(Op::kAllReduce), false},
    {"k-st", "#c9c2bf", "optimizer state stream", true},
    {"k-wu", "#d64545", op_legend(Op::kWeightUpdate), false},
    {"k-in", "#72b7b2", op_legend(Op::kInfeed), true},
    {"k-out", "#3a8f8a", op_legend(Op::kOutfeed), false},
    {"k-sy", "#8c8c8c", "sync", false},
    {"k-ex", "#e6b800", "exchange", true},
    {"k-act", "#9ecae9", "activation copy", true},
    {"k-gr", "#ffbf79", "gradient copy", true},
    {"k-ss", "#8f6bb3", "stash FIFO to or from streaming memory", false},
}};

constexpr std::array<PhaseStyle, 4> kPhaseStyles = {{
    {"ph-up", "#fdf0e1", "#9a5b13", "up"},
    {"ph-main", "#e7f3e7", "#2e6b2e", "main"},
    {"ph-down", "#efe9f7", "#5b3f8c", "down"},
    {"ph-wu", "#fbe3e3", "#9b2c2c", "WU"},
}};

std::string phase_label(std::size_t index) {
  return std::string(schedules::to_string(schedules::kPhases[index]));
}

}  // namespace

const KindStyle& kind_style(Kind kind) {
  return kStyles[std::size_t(kind)];
}

const PhaseStyle& phase_style(schedules::Phase phase) {
  return kPhaseStyles.at(schedules::index(phase));
}

std::string legend(const std::vector<RunView>& views) {
  std::array<bool, kKinds> present{};
  for (const auto& view : views) {
    for (const auto& row : view.rows) {
      for (const auto& span : row.spans)
        present[std::size_t(span.kind)] = true;
    }
  }
  std::string out = "<div class=\"legend\">";
  for (int k = 0; k < kKinds; ++k) {
    if (present[k]) {
      out += "<span><i style=\"background:" + std::string(kStyles[k].colour) + "\"></i>" +
             svg::escape(kStyles[k].legend) + "</span>";
    }
  }
  // The phases the runs have: an inference pass has no weight update.
  std::array<bool, kPhaseStyles.size()> phases{};
  for (const auto& view : views) {
    for (const auto& band : view.bands)
      phases[schedules::index(band.phase)] |= band.to > band.from;
  }
  for (std::size_t i = 0; i < kPhaseStyles.size(); ++i) {
    if (phases[i]) {
      out += "<span><i class=\"band\" style=\"background:" + std::string(kPhaseStyles[i].fill) +
             "\"></i>" + phase_label(i) + "</span>";
    }
  }
  return out + "</div>\n";
}

}  // namespace gantt

std::string gantt_css() {
  std::string css =
      ".box{stroke:#fff;stroke-width:.6}"
      ".lbl{font-size:11px;fill:#fff;font-weight:600;pointer-events:none}"
      ".lbl.dark{fill:#222}"
      ".row-label{font-size:12px;font-weight:600;fill:#333}"
      ".row-label.minor{font-size:9.5px;font-weight:400;fill:#666}"
      ".run-title{font-size:13px;font-weight:700;fill:#222}"
      ".grid{stroke:#000;stroke-opacity:.07}"
      ".axis{stroke:#888}"
      ".tick{font-size:10.5px;fill:#555}"
      ".axis-unit{font-size:10.5px;fill:#555;font-style:italic}"
      ".phase-edge{stroke:#999;stroke-dasharray:3 3}"
      ".cut{stroke:#c00;stroke-width:1.5;stroke-dasharray:5 3}"
      ".cut-label{font-size:11px;fill:#c00}"
      // Lines keep their width when the plot is stretched sideways.
      ".pz *{vector-effect:non-scaling-stroke}"
      ".pz-bar{display:flex;gap:6px;align-items:center;font-size:12px;color:#555;"
      "margin:0 0 4px}"
      ".pz-bar button{font:inherit;min-width:28px;padding:1px 8px;border:1px solid #c8ccd0;"
      "border-radius:4px;background:#f6f8fa;cursor:pointer}"
      ".gantt-frame svg g.pz{cursor:grab}";
  for (const auto& kind : gantt::kStyles)
    css += "." + std::string(kind.css) + "{fill:" + kind.colour + "}";
  for (const auto& phase : gantt::kPhaseStyles) {
    css += "." + std::string(phase.css) + "{fill:" + phase.fill + "}." + phase.css +
           "-t{font-size:11px;font-weight:600;fill:" + phase.text + "}";
  }
  return css + "\n";
}

}  // namespace ipusim::sim
