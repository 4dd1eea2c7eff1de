#include "sim/html/gantt.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

#include "sim/core/format.hpp"
#include "sim/html/gantt_layout.hpp"
#include "sim/html/gantt_style.hpp"
#include "sim/html/svg.hpp"

namespace ipusim::sim {
namespace {

using gantt::Bin;
using gantt::Kind;
using gantt::kind_style;
using gantt::kinds_of;
using gantt::kKinds;
using gantt::kLevels;
using gantt::kSlot;
using gantt::legend;
using gantt::Levels;
using gantt::levels_of;
using gantt::normalised;
using gantt::phase_style;
using gantt::Row;
using gantt::RowSpan;
using gantt::RunView;
using schedules::Op;

constexpr double kWidth = 1400;
constexpr double kLabelWidth = 118;
constexpr double kPlotWidth = kWidth - kLabelWidth - 14;
constexpr double kRowGap = 4;
constexpr double kPhaseRow = 18;
constexpr double kRunTitle = 22;
constexpr double kAxis = 24;
constexpr double kMinBox = 2;  // a box drawn at all is at least this wide, to stay visible

double text_width(const std::string& text, double font_px) {
  return double(text.size()) * font_px * 0.6 + 4;
}

// The smallest of 1, 2, 5, 10, 20, 50, ... that is at least `n`.
std::int64_t round_up_1_2_5(std::int64_t n) {
  for (std::int64_t scale = 1;; scale *= 10) {
    for (const std::int64_t factor : {1, 2, 5}) {
      if (factor * scale >= n)
        return factor * scale;
    }
  }
}

enum class AxisKind { kTime, kSteps };

// Tick values in [from, to], about `count` of them, on round multiples of the step.
std::vector<double> window_ticks(double from, double to, int count) {
  const auto rough = svg::ticks(to - from, count);
  if (rough.size() < 2)
    return rough;
  const double step = rough[1];
  std::vector<double> out;
  // + 0.0 turns the -0 that ceil gives just below zero into 0, which prints without a sign.
  for (double v = std::ceil(from / step - 1e-9) * step + 0.0; v <= to * (1 + 1e-12); v += step)
    out.push_back(v);
  return out;
}

// Draws runs as one <svg>, stacked on one x axis: seconds for the time view (the longest
// run sets the scale), step columns for the step view. Row labels, run titles and axis units
// stay put; everything else is in a group that the pan and zoom script may stretch.
class GanttWriter {
 public:
  GanttWriter(std::vector<RunView> views, AxisKind axis, std::string id, bool every_box = false)
      : views_(std::move(views)),
        axis_(axis),
        id_(std::move(id)),
        every_box_(every_box),
        bands_w_(bands_),
        grid_w_(grid_),
        w_(plot_),
        ticks_w_(ticks_),
        box_labels_w_(box_labels_),
        labels_(fixed_) {
    double seconds_end = 0;
    double seconds_from = 0;
    for (std::size_t i = 0; i < views_.size(); ++i) {
      const auto& view = views_[i];
      seconds_end = std::max(seconds_end, double(view.end) / view.units_per_second);
      const double from = double(view.begin) / view.units_per_second;
      seconds_from = i == 0 ? from : std::min(seconds_from, from);
      clocks_.insert(view.units_per_second);
    }
    seconds_from_ = seconds_from;
    seconds_end_ = seconds_end > seconds_from ? seconds_end : seconds_from + 1;
  }

  std::string write() {
    const bool top_axis = axis_ == AxisKind::kTime && clocks_.size() == 1;
    double height = top_axis ? kAxis : 4;
    for (const auto& view : views_)
      height += run_height(view);
    height += kAxis + 8;
    if (top_axis)
      cycles_axis(*clocks_.begin());
    double y = top_axis ? kAxis : 4;
    for (const auto& view : views_)
      y = draw_run(view, y);
    if (axis_ == AxisKind::kTime)
      ms_axis(y);
    else
      step_axis(y);
    std::string out;
    svg::Writer svg(out);
    svg.open(id_, kWidth, height,
             axis_ == AxisKind::kTime ? "Pipeline Gantt chart: IPUs against time"
                                      : "Pipeline by step: IPUs against BSP steps");
    // The clip keeps a stretched plot out of the row labels (which end 8 units left of the
    // plot) yet leaves room for half of the first tick label. The bands and the boxes are
    // stretched by pan and zoom (two layers, the grid between them); the grid, the ticks and
    // the box labels are redrawn for the window in view.
    out += "<defs><clipPath id=\"" + id_ + "-clip\"><rect x=\"" + svg::num(kLabelWidth - 6) +
           "\" y=\"0\" width=\"" + svg::num(kWidth - kLabelWidth + 6) + "\" height=\"" +
           svg::num(height) + "\"/></clipPath></defs><g clip-path=\"url(#" + id_ +
           "-clip)\"><g class=\"pz\">" + bands_ + "</g><g class=\"pz-grid\">" + grid_ +
           "</g><g class=\"pz\">" + plot_ + "</g><g class=\"pz-ticks\"" + axis_data(top_axis) +
           ">" + ticks_ + "</g><g class=\"pz-labels\">" + box_labels_ + "</g></g>" + fixed_;
    svg.close();
    return out;
  }

 private:
  double x(std::int64_t units, const RunView& view) const {
    return plot_x(double(units) / view.units_per_second);
  }

  double run_height(const RunView& view) const {
    double height = (views_.size() > 1 ? kRunTitle : 0) + kPhaseRow + 10;
    for (const auto& row : view.rows)
      height += row.height + kRowGap;
    return height;
  }

  double draw_run(const RunView& view, double y) {
    if (views_.size() > 1) {
      labels_.text(4, y + 15, view.label, "run-title");
      y += kRunTitle;
    }
    const double bottom = y + run_height(view) - 10 - (views_.size() > 1 ? kRunTitle : 0);
    phase_bands(view, y, bottom);
    if (axis_ == AxisKind::kTime)
      grid(y + kPhaseRow, bottom);
    grid_rows_.push_back({y + kPhaseRow, bottom});
    double row_y = y + kPhaseRow;
    for (const auto& row : view.rows) {
      labels_.text(kLabelWidth - 8, row_y + row.height / 2 + (row.height > 14 ? 4 : 3), row.name,
                   row.height > 14 ? "row-label" : "row-label minor", "end");
      draw_row(row, row_y, view);
      row_y += row.height + kRowGap;
    }
    if (view.truncated) {
      const double cut = x(view.end, view);
      w_.line(cut, y, cut, bottom, "cut");
      w_.text(cut - 4, y + 12, "truncated", "cut-label", "end");
    }
    return bottom + 10;
  }

  // Shaded bands behind the rows, the phase names above them and a line where each begins.
  void phase_bands(const RunView& view, double top, double bottom) {
    for (std::size_t i = 0; i < view.bands.size(); ++i) {
      const auto& band = view.bands[i];
      const std::int64_t to = std::min(view.end, band.to);
      const std::int64_t from = std::max(view.begin, band.from);
      if (to <= from)
        continue;
      const auto& phase = phase_style(band.phase);
      const std::string long_label(schedules::to_string(band.phase));
      const double x0 = x(from, view);
      const double x1 = x(to, view);
      bands_w_.rect(x0, top, x1 - x0, bottom - top, phase.css, long_label);
      if (band.from > view.begin)
        bands_w_.line(x0, top, x0, bottom, "phase-edge");
      for (const std::string& label : {long_label, std::string(phase.short_label)}) {
        if (text_width(label, 11) <= x1 - x0) {
          bands_w_.text((x0 + x1) / 2, top + 13, label, phase.css + std::string("-t"), "middle");
          break;
        }
      }
    }
  }

  double plot_x(double seconds) const {
    return kLabelWidth + (seconds - seconds_from_) / (seconds_end_ - seconds_from_) * kPlotWidth;
  }

  std::vector<double> ms_ticks() const {
    return window_ticks(seconds_from_ * 1e3, seconds_end_ * 1e3, 10);
  }

  void grid(double top, double bottom) {
    for (const double ms : ms_ticks())
      grid_w_.line(plot_x(ms / 1e3), top, plot_x(ms / 1e3), bottom, "grid");
  }

  void cycles_axis(double clock) {
    labels_.text(kLabelWidth - 8, 14, "cycles", "axis-unit", "end");
    for (const double c : window_ticks(seconds_from_ * clock, seconds_end_ * clock, 10)) {
      const double at = plot_x(c / clock);
      ticks_w_.line(at, kAxis - 6, at, kAxis, "axis");
      ticks_w_.text(at, 13, svg::tick_label(c), "tick", "middle");
    }
  }

  void ms_axis(double y) {
    ms_axis_y_ = y;
    labels_.line(kLabelWidth, y, kLabelWidth + kPlotWidth, y, "axis");
    labels_.text(kLabelWidth - 8, y + 16, "time (ms)", "axis-unit", "end");
    for (const double ms : ms_ticks()) {
      ticks_w_.line(plot_x(ms / 1e3), y, plot_x(ms / 1e3), y + 5, "axis");
      ticks_w_.text(plot_x(ms / 1e3), y + 17, svg::tick_label(ms), "tick", "middle");
    }
  }

  // What the pan and zoom script needs to redraw the axes: the ms at the plot's two ends, the
  // clock (cycles per ms) when there is a cycles axis, where the axes are and the rows'
  // extents for the grid.
  std::string axis_data(bool top_axis) const {
    if (axis_ != AxisKind::kTime)
      return "";
    std::string grid;
    for (const auto& [top, bottom] : grid_rows_)
      grid += (grid.empty() ? "" : " ") + svg::num(top) + "," + svg::num(bottom);
    return " data-ms=\"" + svg::num(seconds_from_ * 1e3, 9) + " " +
           svg::num(seconds_end_ * 1e3, 9) + "\" data-clock=\"" +
           (top_axis ? svg::num(*clocks_.begin() / 1e3, 3) : "0") + "\" data-axis-y=\"" +
           svg::num(kAxis) + " " + svg::num(ms_axis_y_) + "\" data-grid=\"" + grid + "\"";
  }

  // Step numbers under the columns, thinned out to keep them apart.
  void step_axis(double y) {
    labels_.line(kLabelWidth, y, kLabelWidth + kPlotWidth, y, "axis");
    labels_.text(kLabelWidth - 8, y + 16, "step", "axis-unit", "end");
    const auto columns = std::int64_t(std::llround(seconds_end_)) / kSlot;
    const double column_width = kPlotWidth / double(std::max<std::int64_t>(columns, 1));
    const std::int64_t steps = views_.front().steps;
    const double label_width = text_width(std::to_string(steps), 10.5) + 10;
    const auto every = round_up_1_2_5(std::int64_t(std::ceil(label_width / column_width)));
    for (std::int64_t step = 0; step < columns; ++step) {
      const double at = plot_x(double((step * 2 + 1) * kSlot / 2));
      if (step >= steps) {
        ticks_w_.text(at, y + 17, "WU", "tick", "middle");
      } else if ((step + 1) % every == 0 || (step == 0 && every > 2)) {
        ticks_w_.line(at, y, at, y + 4, "axis");
        ticks_w_.text(at, y + 17, std::to_string(step + 1), "tick", "middle");
      }
    }
  }

  void draw_row(const Row& row, double y, const RunView& view) {
    std::vector<Bin> bins(std::size_t(std::ceil(kPlotWidth)) + 1);
    for (const auto& span : row.spans) {
      if (span.start >= view.end || span.end <= std::max(span.start, view.begin))
        continue;
      const double x0 = x(std::max(span.start, view.begin), view);
      const double x1 = x(std::min(span.end, view.end), view);
      if (every_box_ || x1 - x0 >= 1.0) {
        box(span, x0, x1, y, row.height);
        continue;
      }
      const auto bin = std::size_t(std::clamp((x0 + x1) / 2 - kLabelWidth, 0.0, kPlotWidth));
      bins[bin][std::size_t(span.kind)] += x1 - x0;
    }
    shares(bins, y, row.height, view);
  }

  void box(const RowSpan& span, double x0, double x1, double y, double height) {
    const auto& kind = kind_style(span.kind);
    const bool labelled = height >= 14 && !span.label.empty();
    // A thin slice keeps kMinBox; its tooltip has the exact cycles. The labels ride along for
    // pan and zoom to write once the box is wide enough.
    w_.rect(x0, y, std::max(x1 - x0, kMinBox), height, std::string("box ") + kind.css, span.title,
            labelled
                ? " data-l=\"" + svg::escape(span.label) + "\" data-s=\"" +
                      svg::escape(span.short_label) + "\"" + (kind.dark_text ? " data-d=\"1\"" : "")
                : "");
    if (!labelled)
      return;
    for (const auto* label : {&span.label, &span.short_label}) {
      if (!label->empty() && text_width(*label, 11) <= x1 - x0) {
        box_labels_w_.text((x0 + x1) / 2, y + height / 2 + 4, *label,
                           kind.dark_text ? "lbl dark" : "lbl", "middle");
        return;
      }
    }
  }

  // What columns [from, to) of an IPU row hold, for their tooltip: their cycles and the share
  // of that time per kind of work.
  std::string columns_title(const std::vector<Bin>& bins, std::size_t from, std::size_t to,
                            const RunView& view) const {
    const double span = seconds_end_ - seconds_from_;
    auto cycles = [&](std::size_t px) {
      return std::llround((seconds_from_ + double(px) / kPlotWidth * span) * view.units_per_second);
    };
    std::array<double, kKinds> sums{};
    for (std::size_t c = from; c < to; ++c) {
      const auto shares = normalised(bins[c]);
      for (int k = 0; k < kKinds; ++k)
        sums[k] += shares[k];
    }
    std::string text = "cycles " + with_commas(cycles(from)) + " \u2013 " + with_commas(cycles(to));
    for (int k = 0; k < kKinds; ++k) {
      if (sums[k] > 0)
        text += ", " + kind_style(Kind(k)).legend + " " + percent(sums[k] / double(to - from));
    }
    return text;
  }

  // Sub-pixel boxes: each column stacks the shares of its time per kind. On IPU rows, each run
  // of columns with the same kinds of work has one tooltip with its cycles and shares.
  void shares(const std::vector<Bin>& bins, double y, double height, const RunView& view) {
    std::size_t i = 0;
    while (i < bins.size()) {
      const unsigned kinds = kinds_of(bins[i]);
      std::size_t end = i + 1;
      while (end < bins.size() && kinds_of(bins[end]) == kinds)
        ++end;
      const bool titled = height > 14 && kinds != 0;
      if (titled)
        plot_ += "<g><title>" + svg::escape(columns_title(bins, i, end, view)) + "</title>";
      stack_columns(bins, i, end, y, height);
      if (titled)
        plot_ += "</g>";
      i = end;
    }
  }

  // Columns [from, to), each a stack of its shares in kLevels steps; equal neighbours merge.
  void stack_columns(const std::vector<Bin>& bins, std::size_t from, std::size_t to, double y,
                     double height) {
    std::size_t i = from;
    while (i < to) {
      const Levels levels = levels_of(bins[i]);
      std::size_t j = i + 1;
      while (j < to && levels_of(bins[j]) == levels)
        ++j;
      double top = y + height;
      for (int k = 0; k < kKinds; ++k) {
        if (levels[k] == 0)
          continue;
        const double h = std::min(top - y, height * levels[k] / kLevels);
        top -= h;
        w_.rect(kLabelWidth + double(i), top, double(j - i), h,
                std::string("agg ") + kind_style(Kind(k)).css);
      }
      i = j;
    }
  }

  std::vector<RunView> views_;
  AxisKind axis_;
  std::string id_;
  bool every_box_;
  std::string bands_;       // stretched by pan and zoom
  std::string grid_;        // redrawn by pan and zoom
  std::string plot_;        // the boxes, stretched by pan and zoom
  std::string ticks_;       // redrawn by pan and zoom
  std::string box_labels_;  // redrawn by pan and zoom
  std::string fixed_;       // row labels, run titles, axis lines and units
  svg::Writer bands_w_;
  svg::Writer grid_w_;
  svg::Writer w_;
  svg::Writer ticks_w_;
  svg::Writer box_labels_w_;
  svg::Writer labels_;
  std::vector<std::pair<double, double>> grid_rows_;  // top and bottom of each run's rows
  double ms_axis_y_ = 0;
  double seconds_from_ = 0;
  double seconds_end_ = 1;
  std::set<double> clocks_;
};

}  // namespace

std::string gantt_html(const std::vector<GanttRun>& runs, const GanttOptions& options) {
  std::vector<RunView> views;
  for (const auto& run : runs) {
    views.push_back(gantt::time_view(run, options.links_and_host));
    if (options.window) {
      views.back().begin = options.window->first;
      views.back().end = std::min(views.back().end, options.window->second);
    }
  }
  const std::string chart =
      GanttWriter(views, AxisKind::kTime, options.id, options.window.has_value()).write();
  if (!options.pan_zoom)
    return legend(views) + "<div class=\"gantt-frame\">" + chart + "</div>\n";
  return legend(views) +
         "<div class=\"gantt-frame\" tabindex=\"0\" aria-label=\"pipeline chart: +/- zoom, "
         "arrows pan, 0 whole step\" data-plot-x=\"" +
         svg::num(kLabelWidth) + "\" data-plot-width=\"" + svg::num(kPlotWidth) +
         "\"><div class=\"pz-bar\"><button type=\"button\" "
         "class=\"pz-out\" title=\"zoom out\">\u2212</button><button type=\"button\" "
         "class=\"pz-in\" title=\"zoom in\">+</button><button type=\"button\" "
         "class=\"pz-reset\">whole step</button><span class=\"pz-k\">1.0x</span><span>drag to "
         "pan, Ctrl+wheel to zoom at the pointer; with the chart focused, + and - zoom, the "
         "arrows pan, 0 shows the whole step</span></div>" +
         chart + "</div>\n" + pan_zoom_script();
}

std::string step_chart_html(const GanttRun& run, const std::string& id) {
  if (!run.report->spec->schedule->step_based())
    return "";
  std::vector<RunView> views = {gantt::step_view(run)};
  return legend(views) + "<div class=\"gantt-frame\">" +
         GanttWriter(views, AxisKind::kSteps, id).write() + "</div>\n";
}

}  // namespace ipusim::sim
