#pragma once
// sim/html: self-contained HTML reports, one file each, with inline CSS and SVG, nothing
// fetched from the network, byte-identical for the same input. The one script is the inline
// pan and zoom of the to-scale Gantt charts; the pages read fine without it. The pages read the
// typed report and timeline; they never go through the JSON writer. This room may include
// sim/core, sim/report, sim/replay/timeline and schedules; never sim/sweep or tools.
//  - html_report: one run. The configuration, the headline figures, a Gantt chart of the
//    pipeline (IPUs against time, F/B/R/W boxes with their micro-batch, phase bands, sync and
//    exchange, links and host transfers) and its ramp-up, one main period and ramp-down
//    zoomed, utilisation per IPU and phase, memory over time per
//    IPU by category against the capacity, the stash FIFOs and the numeric check when the
//    run has one.
//  - compare_html: several runs' Gantt charts on one time axis, throughput beside peak memory
//    per IPU, throughput against peak memory, the runs that do not fit, the figures side by
//    side.
//  - sweep_html: ramp overhead, throughput and peak memory against each varied value, and
//    throughput against peak memory.
//  - plan_html: a plan's candidates as throughput against peak memory, with the Pareto front,
//    the ranked table, and how many the estimate put over the capacity, the nearest named.
// Long runs stay small: sub-pixel tasks are drawn as per-pixel shares of each kind of work.

#include <optional>
#include <string>
#include <vector>

#include "sim/replay/timeline.hpp"
#include "sim/report/report.hpp"
#include "sim/report/run_metrics.hpp"

namespace ipusim::sim {

// `timeline` is the recorded step of the run `report` describes.
std::string html_report(const RunReport& report, const Timeline& timeline);

// `labels` name the runs in the chart and the table; all three vectors have the same length.
std::string compare_html(const std::vector<const RunReport*>& reports,
                         const std::vector<const Timeline*>& timelines,
                         const std::vector<std::string>& labels);

// One varied value of a sweep's run: as --vary gave it, and as a number when it is one (a
// numeric axis places runs by it).
struct SweepPlotValue {
  std::string text;
  std::optional<double> number;
};

// One run of a sweep, typed: its varied values and its figures, absent when it did not
// simulate.
struct SweepPlotRun {
  std::vector<SweepPlotValue> values;  // by SweepPlotTable::varied
  std::optional<RunMetrics> metrics;
};

struct SweepPlotTable {
  std::vector<std::string> varied;  // config paths, e.g. "pipeline.gradient_accumulation_count"
  std::vector<SweepPlotRun> runs;
  std::size_t ipus = 0;             // per-IPU columns of the runs' table (the CSV's)
  std::int64_t capacity_bytes = 0;  // per IPU, when every run shares it; else 0
};

std::string sweep_html(const SweepPlotTable& table);

// A plan's replayed candidates: `points` for the Pareto chart of throughput against peak
// memory, `table` (header row first) as the ranked table.
struct PlanPlotPoint {
  std::string label;  // the candidate's key
  int rank = 0;       // 1 is the best
  double throughput = 0;
  std::int64_t peak_bytes = 0;  // of the fullest IPU
  bool fits = false;
  int fullest_ipu = 0;
};
// A candidate the cost model put over the capacity, which was therefore not replayed.
struct PlanEstimate {
  std::string label;  // its split and setting
  int fullest_ipu = 0;
  std::int64_t estimated_peak_bytes = 0;  // of that IPU
};
struct PlanPlot {
  std::string title;
  std::int64_t capacity_bytes = 0;
  std::vector<PlanPlotPoint> points;
  std::vector<std::vector<std::string>> table;
  std::vector<bool> right_aligned;                  // per column of `table`
  std::size_t evaluated = 0;                        // candidates priced on the cost model
  std::size_t over_capacity = 0;                    // of them, over the capacity by the estimate
  std::vector<PlanEstimate> nearest_over_capacity;  // the few of those nearest to fitting
  // When `points` are some of the replayed candidates: how many of how many, and which.
  std::string drawn_note;
};

std::string plan_html(const PlanPlot& plot);

// The numeric check as an HTML section: its figures and the mean loss per weight update;
// empty when the run has no numeric check.
std::string numeric_section(const std::optional<NumericReport>& numeric);

// The Operations Summary: per stage and IPU, each operation's cycles, FLOPs and bound.
std::string operations_section(const RunReport& report);

}  // namespace ipusim::sim
