#pragma once
// The pipeline Gantt chart of the HTML reports, as the Graphcore tutorials draw it: one row
// per IPU, time across, F/B/R/W boxes labelled with their micro-batch, the phases shaded
// behind and named above; then thin rows for the BSP sync and exchange, every IPU-Link (named
// by logical IPUs), every host link and, when used, each IPU's link to streaming memory.
// Several runs stack on one time axis (in ms; in cycles too when they share a clock).
//
// Boxes narrower than a pixel are not drawn one by one: each pixel column shows the share of
// its time spent on each kind of work, and equal neighbouring columns merge, so the chart's
// size is bounded by its width, not by the number of tasks.
// Part of sim/html, which may include sim/core, sim/report, sim/replay/timeline and
// schedules; never sim/sweep or tools.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/replay/timeline.hpp"
#include "sim/report/report.hpp"

namespace ipusim::sim {

// One run to chart; the report and the timeline are of the same run and outlive the call.
struct GanttRun {
  const RunReport* report = nullptr;
  const Timeline* timeline = nullptr;
  std::string label;  // drawn above the run's rows when there are several runs
};

// What the time chart holds besides the IPU rows, and the id of its <svg>.
struct GanttOptions {
  std::string id = "gantt";    // of the <svg> element
  bool links_and_host = true;  // the IPU-Link, host link and streaming memory rows
  bool pan_zoom = false;       // +/- buttons, drag and Ctrl+wheel: a small inline script
  // Cycles [first, second) of a single run drawn across the whole width, every task a box
  // (none aggregated); none: the whole recorded step.
  std::optional<std::pair<std::int64_t, std::int64_t>> window;
};

// The legend (HTML) and the chart (inline SVG).
std::string gantt_html(const std::vector<GanttRun>& runs, const GanttOptions& options);

// Step-based schedules only (empty otherwise): the picture the Graphcore tutorials draw, one
// column per BSP step with each IPU's F/B/R boxes of the step side by side and the weight
// update in a last column; the <svg> element has id `id`.
std::string step_chart_html(const GanttRun& run, const std::string& id);

// Zoomed views of one run, as PopVision's execution trace shows them: ramp-up, one period of
// the main phase and ramp-down, each across the whole width, with a line on what each shows.
// Empty windows (a schedule without ramps) are left out.
std::string zoomed_views_html(const GanttRun& run);

// The inline script behind GanttOptions::pan_zoom, for the chart frame just before it.
std::string pan_zoom_script();

// CSS rules for the chart's classes.
std::string gantt_css();

}  // namespace ipusim::sim
