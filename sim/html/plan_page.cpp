// `ipusim plan --html`: the replayed candidates as throughput against peak memory, the region
// over the IPU's capacity shaded, the Pareto front of what fits drawn through its points, and
// the ranked table under it.

#include <algorithm>

#include "sim/core/format.hpp"
#include "sim/html/html_report.hpp"
#include "sim/html/page.hpp"
#include "sim/html/svg.hpp"

namespace ipusim::sim {
namespace {

using svg::escape;
using svg::num;

constexpr double kWidth = 720;
constexpr double kHeight = 360;
constexpr double kLeft = 80;
constexpr double kRight = 24;
constexpr double kTop = 24;
constexpr double kBottom = 48;

// Data to drawing coordinates: x is peak memory in MB, y samples per second, both from 0.
struct Scale {
  double x_top = 1;
  double y_top = 1;
  double x(double megabytes) const { return kLeft + megabytes / x_top * (kWidth - kLeft - kRight); }
  double y(double throughput) const {
    return kHeight - kBottom - throughput / y_top * (kHeight - kTop - kBottom);
  }
};

double megabytes(std::int64_t bytes) {
  return double(bytes) / 1e6;
}

// Axis ends on the first round tick above `value`.
double axis_top(double value) {
  const auto rough = svg::ticks(value > 0 ? value * 1.05 : 1.0, 5);
  return rough.back() >= value ? rough.back() : value;
}

Scale scale_of(const PlanPlot& plot) {
  double x = megabytes(plot.capacity_bytes) * 1.15;
  double y = 0;
  for (const auto& p : plot.points) {
    x = std::max(x, megabytes(p.peak_bytes) * 1.05);
    y = std::max(y, p.throughput);
  }
  return {axis_top(x), axis_top(y)};
}

// The fitting points no other fitting point beats on both throughput and memory, by memory.
std::vector<const PlanPlotPoint*> pareto_front(const PlanPlot& plot) {
  std::vector<const PlanPlotPoint*> fitting;
  for (const auto& p : plot.points)
    if (p.fits)
      fitting.push_back(&p);
  std::stable_sort(fitting.begin(), fitting.end(), [](const auto* a, const auto* b) {
    return a->peak_bytes != b->peak_bytes ? a->peak_bytes < b->peak_bytes
                                          : a->throughput > b->throughput;
  });
  std::vector<const PlanPlotPoint*> front;
  for (const auto* p : fitting)
    if (front.empty() || p->throughput > front.back()->throughput)
      front.push_back(p);
  return front;
}

void draw_axes(svg::Writer& w, const Scale& s) {
  const double bottom = kHeight - kBottom;
  w.line(kLeft, bottom, kWidth - kRight, bottom, "axis");
  w.line(kLeft, kTop, kLeft, bottom, "axis");
  for (double v : svg::ticks(s.x_top, 6)) {
    w.line(s.x(v), bottom, s.x(v), bottom + 4, "axis");
    w.text(s.x(v), bottom + 16, svg::tick_label(v), "tick", "middle");
  }
  for (double v : svg::ticks(s.y_top, 5)) {
    w.line(kLeft - 4, s.y(v), kLeft, s.y(v), "axis");
    w.text(kLeft - 6, s.y(v) + 4, svg::tick_label(v), "tick", "end");
  }
  w.text((kLeft + kWidth - kRight) / 2, kHeight - 10, "peak memory of the fullest IPU (MB)", "tick",
         "middle");
  w.text(14, kTop - 8, "samples/s", "tick", "start");
}

void draw_capacity(svg::Writer& w, const Scale& s, std::int64_t capacity) {
  const double x = s.x(megabytes(capacity));
  w.rect_fill(x, kTop, kWidth - kRight - x, kHeight - kTop - kBottom, "#f6d5d5");
  w.line(x, kTop, x, kHeight - kBottom, "axis");
  w.text(x + 4, kTop + 14, "over capacity (" + si(double(capacity), "B") + ")", "tick", "start");
}

std::string point_title(const PlanPlotPoint& p) {
  return p.label + "\n" + with_commas(std::int64_t(p.throughput + 0.5)) + " samples/s, peak " +
         si(double(p.peak_bytes), "B") + (p.fits ? "" : " (does not fit)");
}

std::string chart(const PlanPlot& plot) {
  const Scale s = scale_of(plot);
  std::string out;
  svg::Writer w(out);
  w.open("plan-pareto", kWidth, kHeight, "Throughput against peak memory");
  draw_capacity(w, s, plot.capacity_bytes);
  draw_axes(w, s);
  std::vector<std::pair<double, double>> front;
  for (const auto* p : pareto_front(plot))
    front.push_back({s.x(megabytes(p->peak_bytes)), s.y(p->throughput)});
  if (front.size() > 1)
    w.polyline(front, "#54a24b");
  for (const auto& p : plot.points) {
    const bool best = p.rank == 1;
    if (p.fits)
      w.circle(s.x(megabytes(p.peak_bytes)), s.y(p.throughput), best ? 6 : 3.5,
               best ? "#f58518" : "#4c78a8", point_title(p));
    else
      w.ring(s.x(megabytes(p.peak_bytes)), s.y(p.throughput), 4, "#e45756", point_title(p));
    if (best)
      w.text(s.x(megabytes(p.peak_bytes)) + 8, s.y(p.throughput) - 6, "#1", "tick", "start");
  }
  w.close();
  return out +
         "<div class=\"legend\"><span><i style=\"background:#f58518\"></i>best</span>"
         "<span><i style=\"background:#4c78a8\"></i>fits</span>"
         "<span><i class=\"ring\" style=\"border-color:#e45756\"></i>does not fit</span>"
         "<span><i style=\"background:#54a24b\"></i>Pareto front (no candidate is both "
         "faster and smaller)</span><span><i style=\"background:#f6d5d5\"></i>over "
         "capacity</span></div>\n";
}

std::string table(const PlanPlot& plot) {
  if (plot.table.empty())
    return "";
  std::string out = "<div style=\"overflow-x:auto\"><table>" + html::header_row(plot.table[0]);
  for (std::size_t r = 1; r < plot.table.size(); ++r) {
    out += "<tr>";
    for (std::size_t c = 0; c < plot.table[r].size(); ++c)
      out += html::cell(plot.table[r][c], c >= plot.right_aligned.size() || !plot.right_aligned[c]);
    out += "</tr>\n";
  }
  return out + "</table></div>\n";
}

}  // namespace

std::string plan_html(const PlanPlot& plot) {
  std::string body =
      "<header><h1>ipusim plan</h1><p class=\"sub\">" + escape(plot.title) + "</p></header>\n";
  body += html::section("plan-chart", "Throughput against peak memory",
                        "<p>Every replayed candidate: " + num(double(plot.points.size()), 0) +
                            ". Hover a point for its setting.</p>\n" + chart(plot));
  body += html::section("plan-ranked", "Ranked candidates", table(plot));
  return html::page("ipusim plan", body);
}

}  // namespace ipusim::sim
