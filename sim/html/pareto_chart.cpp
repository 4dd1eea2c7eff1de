#include "sim/html/pareto_chart.hpp"

#include <algorithm>
#include <cmath>

#include "sim/core/format.hpp"
#include "sim/html/page.hpp"
#include "sim/html/svg.hpp"

namespace ipusim::sim::html {
namespace {

constexpr double kParetoWidth = 720;
constexpr double kParetoHeight = 360;
constexpr double kParetoLeft = 80;
constexpr double kParetoRight = 24;
constexpr double kParetoTop = 30;
constexpr double kParetoBottom = 48;

// Data to drawing coordinates: x is peak memory in MB from x_from, y samples per second from 0.
struct Scale {
  double x_from = 0;
  double x_top = 1;
  double y_top = 1;
  double x(double megabytes) const {
    return kParetoLeft +
           (megabytes - x_from) / (x_top - x_from) * (kParetoWidth - kParetoLeft - kParetoRight);
  }
  double y(double throughput) const {
    return kParetoHeight - kParetoBottom -
           throughput / y_top * (kParetoHeight - kParetoTop - kParetoBottom);
  }
};

double megabytes(std::int64_t bytes) {
  return double(bytes) / 1e6;
}

// Axis ends on the first round tick above `value`.
double pareto_axis_top(double value) {
  const auto rough = svg::ticks(value > 0 ? value * 1.05 : 1.0, 5);
  return rough.back() >= value ? rough.back() : value;
}

// The memory axis starts at 0 unless every point and the capacity lie in the upper half of
// it; then it starts on a round value below them, so that close runs do not pile up.
Scale scale_of(const ParetoChart& chart) {
  double x = megabytes(chart.capacity_bytes) * 1.15;
  double low = chart.capacity_bytes > 0 ? megabytes(chart.capacity_bytes) : 0;
  bool first = chart.capacity_bytes <= 0;
  double y = 0;
  for (const auto& p : chart.points) {
    x = std::max(x, megabytes(p.peak_bytes) * 1.05);
    low = first ? megabytes(p.peak_bytes) : std::min(low, megabytes(p.peak_bytes));
    first = false;
    y = std::max(y, p.throughput);
  }
  const double top = pareto_axis_top(x);
  double from = 0;
  if (low > top / 2) {
    const auto rough = svg::ticks(top - low * 0.9, 5);
    const double step = rough.size() > 1 ? rough[1] : 1.0;
    from = std::floor(low * 0.9 / step) * step;
  }
  return {from, top, pareto_axis_top(y)};
}

// The fitting points no other fitting point beats on both throughput and memory, by memory.
std::vector<const ParetoPoint*> pareto_front(const ParetoChart& chart) {
  std::vector<const ParetoPoint*> fitting;
  for (const auto& p : chart.points)
    if (p.fits)
      fitting.push_back(&p);
  std::stable_sort(fitting.begin(), fitting.end(), [](const auto* a, const auto* b) {
    return a->peak_bytes != b->peak_bytes ? a->peak_bytes < b->peak_bytes
                                          : a->throughput > b->throughput;
  });
  std::vector<const ParetoPoint*> front;
  for (const auto* p : fitting)
    if (front.empty() || p->throughput > front.back()->throughput)
      front.push_back(p);
  return front;
}

void draw_axes(svg::Writer& w, const Scale& s, const std::string& title) {
  const double bottom = kParetoHeight - kParetoBottom;
  w.text(kParetoLeft, 16, title, "chart-title");
  w.line(kParetoLeft, bottom, kParetoWidth - kParetoRight, bottom, "axis");
  w.line(kParetoLeft, kParetoTop, kParetoLeft, bottom, "axis");
  const auto span = svg::ticks(s.x_top - s.x_from, 6);
  const double step = span.size() > 1 ? span[1] : s.x_top;
  for (double v = s.x_from; v <= s.x_top * (1 + 1e-9); v += step) {
    w.line(s.x(v), bottom, s.x(v), bottom + 4, "axis");
    w.text(s.x(v), bottom + 16, svg::tick_label(v), "tick", "middle");
  }
  for (double v : svg::ticks(s.y_top, 5)) {
    w.line(kParetoLeft - 4, s.y(v), kParetoLeft, s.y(v), "axis");
    w.text(kParetoLeft - 6, s.y(v) + 4, svg::tick_label(v), "tick", "end");
  }
  w.text((kParetoLeft + kParetoWidth - kParetoRight) / 2, kParetoHeight - 10,
         "peak memory of the fullest IPU (MB)", "tick", "middle");
  w.text(kParetoLeft - 6, kParetoTop - 10, "samples/s", "tick", "end");
}

void draw_capacity(svg::Writer& w, const Scale& s, std::int64_t capacity) {
  const double x = s.x(megabytes(capacity));
  w.rect_fill(x, kParetoTop, kParetoWidth - kParetoRight - x,
              kParetoHeight - kParetoTop - kParetoBottom, "#f6d5d5");
  w.line(x, kParetoTop, x, kParetoHeight - kParetoBottom, "axis");
  // At the foot of the region: the points that do not fit are near its top.
  const double bottom = kParetoHeight - kParetoBottom;
  w.text(x + 4, bottom - 20, "over capacity (" + memory_figure(double(capacity)) + ")", "tick",
         "start");
  w.text(x + 4, bottom - 6, "does not fit", "tick", "start");
}

std::string point_title(const ParetoPoint& p) {
  return p.label + "\n" + with_commas(std::int64_t(p.throughput + 0.5)) + " samples/s, peak " +
         memory_figure(double(p.peak_bytes)) + (p.fits ? "" : " (does not fit)");
}

// Points drawn closer than this, across and up, share one label, lest their labels overprint.
constexpr double kNearX = 40;
constexpr double kNearY = 12;

// The label of each point that starts a group of nearby ones ("runs 1, 4, 7" when tagged),
// "" for the others.
std::vector<std::string> point_labels(const Scale& s, const ParetoChart& chart) {
  const auto& points = chart.points;
  std::vector<std::string> labels(points.size());
  std::vector<bool> taken(points.size(), false);
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (taken[i])
      continue;
    std::vector<std::string> names;
    for (std::size_t j = i; j < points.size(); ++j) {
      const bool near = std::fabs(s.x(megabytes(points[j].peak_bytes)) -
                                  s.x(megabytes(points[i].peak_bytes))) < kNearX &&
                        std::fabs(s.y(points[j].throughput) - s.y(points[i].throughput)) < kNearY;
      if (!taken[j] && near) {
        taken[j] = true;
        names.push_back(points[j].tag.empty() ? points[j].label : points[j].tag);
      }
    }
    std::string joined;
    for (const auto& name : names)
      joined += (joined.empty() ? "" : ", ") + name;
    const bool tagged = !points[i].tag.empty();
    labels[i] = tagged && names.size() > 1 ? "runs " + joined : joined;
  }
  return labels;
}

void draw_points(svg::Writer& w, const Scale& s, const ParetoChart& chart) {
  // Only labelled charts (a dozen points at most) pay for pairing the points up.
  const auto labels =
      chart.label_points ? point_labels(s, chart) : std::vector<std::string>(chart.points.size());
  for (std::size_t i = 0; i < chart.points.size(); ++i) {
    const auto& p = chart.points[i];
    const double x = s.x(megabytes(p.peak_bytes));
    const double y = s.y(p.throughput);
    if (p.fits)
      w.circle(x, y, p.best ? 6 : 3.5, p.best ? "#f58518" : "#4c78a8", point_title(p));
    else
      w.ring(x, y, 4, "#e45756", point_title(p));
    // Labels go left of points in the right half, so that they stay inside the chart.
    const bool left = x > (kParetoLeft + kParetoWidth) / 2;
    if (chart.label_points && !labels[i].empty())
      w.text(x + (left ? -8 : 8), y - 6, labels[i], "tick", left ? "end" : "start");
    else if (p.best)
      w.text(x + 8, y - 6, "#1", "tick", "start");
  }
}

}  // namespace

std::string pareto_chart(const ParetoChart& chart) {
  const Scale s = scale_of(chart);
  std::string out = "<figure class=\"chart pareto\">";
  svg::Writer w(out);
  w.open(chart.id, kParetoWidth, kParetoHeight, chart.title);
  if (chart.capacity_bytes > 0)
    draw_capacity(w, s, chart.capacity_bytes);
  draw_axes(w, s, chart.title);
  std::vector<std::pair<double, double>> front;
  for (const auto* p : pareto_front(chart))
    front.push_back({s.x(megabytes(p->peak_bytes)), s.y(p->throughput)});
  if (front.size() > 1)
    w.polyline(front, "#54a24b");
  draw_points(w, s, chart);
  w.close();
  return out + "<div class=\"legend\">" +
         std::string(std::any_of(chart.points.begin(), chart.points.end(),
                                 [](const ParetoPoint& p) { return p.best; })
                         ? "<span><i style=\"background:#f58518\"></i>best</span>"
                         : "") +
         "<span><i style=\"background:#4c78a8\"></i>fits</span>"
         "<span><i class=\"ring\" style=\"border-color:#e45756\"></i>does not fit</span>"
         "<span><i style=\"background:#54a24b\"></i>Pareto front (no other run that fits is "
         "both faster and smaller)</span>" +
         std::string(chart.capacity_bytes > 0
                         ? "<span><i style=\"background:#f6d5d5\"></i>over capacity</span>"
                         : "") +
         "</div></figure>\n";
}

}  // namespace ipusim::sim::html
