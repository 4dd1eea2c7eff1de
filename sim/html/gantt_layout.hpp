#pragma once
// The Gantt chart's layout, before any drawing: each run as rows of boxes on an x axis of
// cycles (the time view) or of step columns (the step view), with its phase bands.
// Part of sim/html, which may include sim/core, sim/report, sim/replay/timeline and
// schedules; never sim/sweep or tools.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/html/gantt.hpp"

namespace ipusim::sim::gantt {

// What a box is, which decides its colour; the order is the legend's and the share stack's.
enum class Kind {
  kForward,
  kBackward,
  kRecompute,
  kWeightGrad,
  kAllReduce,
  kStateStream,
  kWeightUpdate,
  kInfeed,
  kOutfeed,
  kSync,
  kExchange,
  kActivation,
  kGradient,
  kStashStream,
};
constexpr int kKinds = 14;

// One pixel column of a row when its boxes are narrower than a pixel: the pixels of each kind
// of work whose boxes centre in it, drawn as a stack of shares in kLevels height steps.
constexpr int kLevels = 8;
using Bin = std::array<double, kKinds>;
using Levels = std::array<int, kKinds>;

// A column's time per kind as shares of the column, scaled down when boxes overlap in it.
Bin normalised(const Bin& bin);

// The column's shares in kLevels height steps; work, however little, keeps the lowest level.
Levels levels_of(const Bin& bin);

// The kinds of work present in a column, as bits.
unsigned kinds_of(const Bin& bin);

constexpr double kIpuRow = 28;   // height of an IPU's row
constexpr double kThinRow = 10;  // height of a sync, link, host or streaming row

// Units of one step column in the step view.
constexpr std::int64_t kSlot = 1000;

// One box of a row, from `start` to `end` in the view's units.
struct RowSpan {
  std::int64_t start = 0;
  std::int64_t end = 0;
  Kind kind = Kind::kForward;
  std::string label;        // drawn when it fits
  std::string short_label;  // tried next
  std::string title;        // tooltip
};

// One named row of the chart; its boxes may overlap only when they are sub-pixel.
struct Row {
  std::string name;
  double height = kIpuRow;
  std::vector<RowSpan> spans;
};

// A shaded phase behind the rows, over [from, to) units; `phase` indexes ramp-up, main,
// ramp-down, weight update.
struct PhaseBand {
  schedules::Phase phase = schedules::Phase::kRampUp;
  std::int64_t from = 0;
  std::int64_t to = 0;
};

// A run ready to draw: rows of boxes on an x axis of units (cycles, or step slots).
struct RunView {
  std::string label;
  std::vector<Row> rows;
  std::vector<PhaseBand> bands;
  std::int64_t begin = 0;       // units drawn from: a zoomed view starts past 0
  std::int64_t end = 0;         // units drawn up to
  double units_per_second = 1;  // the clock for cycles
  bool truncated = false;
  std::int64_t steps = 0;  // step view: columns before the weight update's
};

// The run to scale: IPU rows, then sync / exchange, and with `links_and_host` every IPU-Link,
// host link and streaming memory link that carried data.
RunView time_view(const GanttRun& run, bool links_and_host);

// The tutorials' picture of a BSP schedule: every step one column, each IPU's compute tasks
// of the step side by side in program order, the weight update in a last column.
RunView step_view(const GanttRun& run);

}  // namespace ipusim::sim::gantt
