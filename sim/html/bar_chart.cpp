#include "sim/html/bar_chart.hpp"

#include <algorithm>

#include "sim/html/svg.hpp"

namespace ipusim::sim::html {
namespace {

constexpr double kWidth = 640;
constexpr double kLeft = 170;
constexpr double kRight = 90;  // room for the value written after the longest bar
constexpr double kTop = 30;
constexpr double kBottom = 40;
constexpr double kBar = 14;
constexpr double kGroupGap = 10;
constexpr double kLabelChars = 26;  // a group label longer than this is cut, whole in the tooltip

double chart_height(const BarChart& chart) {
  double height = kTop + kBottom;
  for (const auto& group : chart.groups)
    height += double(std::max<std::size_t>(group.bars.size(), 1)) * kBar + kGroupGap;
  return height;
}

double axis_top(const BarChart& chart) {
  double top = chart.limit * 1.1;
  for (const auto& group : chart.groups)
    for (const auto& bar : group.bars)
      top = std::max(top, bar.value * 1.05);
  const auto rough = svg::ticks(top > 0 ? top : 1.0, 5);
  return std::max(rough.back(), top > 0 ? top : 1.0);
}

std::string cut(const std::string& label) {
  return label.size() <= std::size_t(kLabelChars) ? label
                                                  : label.substr(0, kLabelChars - 1) + "\u2026";
}

void draw_limit(svg::Writer& w, const BarChart& chart, double x, double bottom) {
  w.rect_fill(x, kTop, kWidth - kRight - x, bottom - kTop, "#f6d5d5");
  w.line(x, kTop, x, bottom, "cap");
  w.text(x + 4, kTop - 4, chart.limit_label, "cap-label", "start");
}

void draw_axis(svg::Writer& w, const BarChart& chart, double top, double bottom) {
  const double span = kWidth - kLeft - kRight;
  w.text(4, 16, chart.title, "chart-title");
  w.line(kLeft, bottom, kWidth - kRight, bottom, "axis");
  for (const double v : svg::ticks(top, 5)) {
    const double x = kLeft + v / top * span;
    w.line(x, kTop, x, bottom, "grid");
    w.text(x, bottom + 14, svg::tick_label(v), "tick", "middle");
  }
  w.text(kLeft + span / 2, bottom + 32, chart.axis_label, "axis-label", "middle");
}

}  // namespace

std::string bar_chart(const BarChart& chart) {
  const double height = chart_height(chart);
  const double top = axis_top(chart);
  const double span = kWidth - kLeft - kRight;
  const double bottom = height - kBottom;
  std::string out = "<figure class=\"chart\">";
  svg::Writer w(out);
  w.open(chart.id, kWidth, height, chart.title);
  if (chart.limit > 0)
    draw_limit(w, chart, kLeft + chart.limit / top * span, bottom);
  draw_axis(w, chart, top, bottom);
  double y = kTop + kGroupGap / 2;
  for (const auto& group : chart.groups) {
    const double group_height = double(std::max<std::size_t>(group.bars.size(), 1)) * kBar;
    w.text(kLeft - 8, y + group_height / 2 + 4, cut(group.label), "tick", "end");
    for (const auto& bar : group.bars) {
      const double length = std::max(1.0, bar.value / top * span);
      const bool over = bar.hollow || (chart.limit > 0 && bar.value > chart.limit);
      // Hollow past the limit or when its run does not fit: an outline, not a result.
      w.rect(kLeft, y + 2, length, kBar - 4, over ? "bar-over" : "bar-fill",
             group.label + (bar.name.empty() ? "" : " " + bar.name) + ": " + bar.title);
      w.text(kLeft + length + 4, y + kBar - 3,
             (bar.name.empty() ? "" : bar.name + " ") + bar.value_text, "tick", "start");
      y += kBar;
    }
    y += group.bars.empty() ? kBar + kGroupGap : kGroupGap;
  }
  w.close();
  return out + "</figure>\n";
}

}  // namespace ipusim::sim::html
