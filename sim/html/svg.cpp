#include "sim/html/svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "sim/core/format.hpp"

namespace ipusim::sim::svg {

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string num(double value, int decimals) {
  std::string text = fixed(value, decimals);
  if (text.find('.') != std::string::npos) {
    while (text.back() == '0')
      text.pop_back();
    if (text.back() == '.')
      text.pop_back();
  }
  return text == "-0" ? "0" : text;
}

std::vector<double> ticks(double max, int count) {
  if (!(max > 0) || count < 1)
    return {0.0};
  const double raw = max / count;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (const double factor : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    step = factor * magnitude;
    if (step >= raw)
      break;
  }
  std::vector<double> out;
  for (int i = 0; i * step <= max * (1 + 1e-9); ++i)
    out.push_back(i * step);
  return out;
}

std::string tick_label(double value) {
  if (std::fabs(value) >= 1 && std::fabs(value - std::round(value)) < 1e-9)
    return with_commas(std::llround(value));
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", value);
  return buffer;
}

void Writer::open(const std::string& id, double width, double height, const std::string& label) {
  out_ += "<svg id=\"" + escape(id) + "\" viewBox=\"0 0 " + num(width) + " " + num(height) +
          "\" role=\"img\" aria-label=\"" + escape(label) + "\">";
}

void Writer::rect(double x, double y, double w, double h, const std::string& css_class,
                  const std::string& title, const std::string& attributes) {
  out_ += "<rect class=\"" + css_class + "\" x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" +
          num(w) + "\" height=\"" + num(h) + "\"" + attributes;
  if (title.empty()) {
    out_ += "/>";
    return;
  }
  out_ += "><title>" + escape(title) + "</title></rect>";
}

void Writer::rect_fill(double x, double y, double w, double h, const std::string& fill) {
  out_ += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(w) + "\" height=\"" +
          num(h) + "\" fill=\"" + escape(fill) + "\"/>";
}

void Writer::line(double x1, double y1, double x2, double y2, const std::string& css_class) {
  out_ += "<line class=\"" + css_class + "\" x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" +
          num(x2) + "\" y2=\"" + num(y2) + "\"/>";
}

void Writer::text(double x, double y, const std::string& content, const std::string& css_class,
                  const char* anchor) {
  out_ += "<text class=\"" + css_class + "\" x=\"" + num(x) + "\" y=\"" + num(y) + "\"";
  if (std::string_view(anchor) != "start")
    out_ += std::string(" text-anchor=\"") + anchor + "\"";
  out_ += ">" + escape(content) + "</text>";
}

namespace {
std::string point_list(const std::vector<std::pair<double, double>>& points) {
  std::string out;
  for (const auto& [x, y] : points)
    out += (out.empty() ? "" : " ") + num(x) + "," + num(y);
  return out;
}
}  // namespace

void Writer::polygon(const std::vector<std::pair<double, double>>& points,
                     const std::string& fill) {
  out_ += "<polygon fill=\"" + escape(fill) + "\" points=\"" + point_list(points) + "\"/>";
}

void Writer::polyline(const std::vector<std::pair<double, double>>& points,
                      const std::string& stroke) {
  out_ += "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" + escape(stroke) + "\" points=\"" +
          point_list(points) + "\"/>";
}

void Writer::circle(double x, double y, double r, const std::string& fill,
                    const std::string& title) {
  out_ += "<circle cx=\"" + num(x) + "\" cy=\"" + num(y) + "\" r=\"" + num(r) + "\" fill=\"" +
          escape(fill) + "\"><title>" + escape(title) + "</title></circle>";
}

void Writer::ring(double x, double y, double r, const std::string& stroke,
                  const std::string& title) {
  // Hollow, so that the shading behind shows through; the class keeps the inside hoverable.
  out_ += "<circle class=\"ring\" cx=\"" + num(x) + "\" cy=\"" + num(y) + "\" r=\"" + num(r) +
          "\" fill=\"none\" stroke-width=\"2\" stroke=\"" + escape(stroke) + "\"><title>" +
          escape(title) + "</title></circle>";
}

namespace {

// Colours of the line chart's series, in order.
const std::vector<std::string>& series_colours() {
  static const std::vector<std::string> colours = {"#4c78a8", "#f58518", "#54a24b", "#e45756",
                                                   "#b279a2", "#72b7b2", "#9d755d", "#eeca3b"};
  return colours;
}

constexpr double kLineWidth = 640;
constexpr double kLineHeight = 300;
constexpr double kLineLeft = 72;
constexpr double kLineRight = 20;
constexpr double kLineTop = 30;
constexpr double kLineBottom = 48;

// Maps data x to the plot's horizontal position.
struct XAxis {
  double min = 0;
  double max = 1;
  bool log = false;
  double value(double x) const { return log ? std::log2(x) : x; }
  double operator()(double x) const {
    const double span = max - min;
    return kLineLeft + (value(x) - min) / span * (kLineWidth - kLineLeft - kLineRight);
  }
};

XAxis x_axis(const LineChart& chart, const std::set<double>& xs) {
  XAxis axis;
  axis.log = chart.log_x;
  if (!chart.categories.empty()) {
    axis.min = -0.5;
    axis.max = double(chart.categories.size()) - 0.5;
    return axis;
  }
  if (xs.empty())
    return axis;
  axis.min = axis.value(*xs.begin());
  axis.max = axis.value(*xs.rbegin());
  const double pad = axis.max > axis.min ? (axis.max - axis.min) * 0.04 : 1.0;
  axis.min -= pad;
  axis.max += pad;
  return axis;
}

void x_ticks(Writer& w, const LineChart& chart, const XAxis& axis, const std::set<double>& xs) {
  const double y = kLineHeight - kLineBottom;
  auto tick = [&](double x, const std::string& label) {
    w.line(axis(x), y, axis(x), y + 4, "axis");
    w.text(axis(x), y + 16, label, "tick", "middle");
  };
  if (!chart.categories.empty()) {
    for (std::size_t i = 0; i < chart.categories.size(); ++i)
      tick(double(i), chart.categories[i]);
  } else if (chart.log_x || xs.size() <= 12) {
    for (const double x : xs)
      tick(x, tick_label(x));
  } else {
    for (const double x : ticks(*xs.rbegin(), 6)) {
      if (x >= *xs.begin())
        tick(x, tick_label(x));
    }
  }
}

// Maps data y to the plot's vertical position; the axis ends on the first tick above the
// data.
struct YAxis {
  double top = 1;
  double step = 1;
  double operator()(double y) const {
    return kLineHeight - kLineBottom - y / top * (kLineHeight - kLineTop - kLineBottom);
  }
};

YAxis y_axis(double y_max) {
  const double headroom = y_max > 0 ? y_max * 1.05 : 1.0;
  const auto rough = ticks(headroom, 5);
  const double step = rough.size() > 1 ? rough[1] : headroom;
  return {std::ceil(headroom / step - 1e-9) * step, step};
}

// Each series as a line through its points, sorted by x, with a circle and tooltip at each.
void draw_series(Writer& w, const LineChart& chart, const XAxis& x_of, const YAxis& y_of) {
  const auto& colours = series_colours();
  for (std::size_t s = 0; s < chart.series.size(); ++s) {
    auto points = chart.series[s].points;
    std::stable_sort(points.begin(), points.end());
    std::vector<std::pair<double, double>> drawn;
    for (const auto& [x, y] : points)
      drawn.push_back({x_of(x), y_of(y)});
    const auto& colour = colours[s % colours.size()];
    w.polyline(drawn, colour);
    for (std::size_t i = 0; i < points.size(); ++i) {
      const std::string x_text = chart.categories.empty()
                                     ? tick_label(points[i].first)
                                     : chart.categories.at(std::size_t(points[i].first));
      const auto& hollow = chart.series[s].hollow;
      const std::string title =
          chart.series[s].label + ": " + x_text + " \u2192 " + tick_label(points[i].second);
      if (std::find(hollow.begin(), hollow.end(), points[i]) != hollow.end())
        w.ring(drawn[i].first, drawn[i].second, 4, colour, title + " (" + chart.hollow_note + ")");
      else
        w.circle(drawn[i].first, drawn[i].second, 3.5, colour, title);
    }
  }
}

// The region above the limit, shaded, with its line and label.
void draw_limit(Writer& w, const LineChart& chart, const YAxis& y_of) {
  const double y = y_of(chart.limit);
  w.rect_fill(kLineLeft, kLineTop, kLineWidth - kLineRight - kLineLeft, y - kLineTop, "#f6d5d5");
  w.line(kLineLeft, y, kLineWidth - kLineRight, y, "cap");
  w.text(kLineWidth - kLineRight - 4, y - 4, chart.limit_label, "cap-label", "end");
}

}  // namespace

std::string line_chart(const LineChart& chart) {
  std::set<double> xs;
  double y_max = 0;
  for (const auto& series : chart.series) {
    for (const auto& [x, y] : series.points) {
      xs.insert(x);
      y_max = std::max(y_max, y);
    }
  }
  const YAxis y_of = y_axis(std::max(y_max, chart.limit * 1.1));
  const XAxis axis = x_axis(chart, xs);

  std::string out = "<figure class=\"chart\">";
  Writer w(out);
  w.open(chart.id, kLineWidth, kLineHeight, chart.title);
  if (chart.limit > 0)
    draw_limit(w, chart, y_of);
  w.text(kLineLeft, 18, chart.title, "chart-title");
  for (const double y : ticks(y_of.top, int(std::llround(y_of.top / y_of.step)))) {
    w.line(kLineLeft, y_of(y), kLineWidth - kLineRight, y_of(y), "grid");
    w.text(kLineLeft - 6, y_of(y) + 4, tick_label(y), "tick", "end");
  }
  w.line(kLineLeft, kLineHeight - kLineBottom, kLineWidth - kLineRight, kLineHeight - kLineBottom,
         "axis");
  w.line(kLineLeft, kLineTop, kLineLeft, kLineHeight - kLineBottom, "axis");
  x_ticks(w, chart, axis, xs);
  w.text((kLineLeft + kLineWidth - kLineRight) / 2, kLineHeight - 8, chart.x_label, "axis-label",
         "middle");
  out += "<text class=\"axis-label\" transform=\"translate(16 " +
         num((kLineTop + kLineHeight - kLineBottom) / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" + escape(chart.y_label) + "</text>";
  draw_series(w, chart, axis, y_of);
  w.close();
  out += "<figcaption class=\"legend\">";
  const auto& colours = series_colours();
  for (std::size_t s = 0; s < chart.series.size(); ++s) {
    out += "<span><i style=\"background:" + colours[s % colours.size()] + "\"></i>" +
           escape(chart.series[s].label) + "</span>";
  }
  if (std::any_of(chart.series.begin(), chart.series.end(),
                  [](const Series& series) { return !series.hollow.empty(); }))
    out += "<span><i class=\"ring\"></i>" + escape(chart.hollow_note) + "</span>";
  if (chart.limit > 0)
    out += "<span><i style=\"background:#f6d5d5\"></i>over capacity</span>";
  out += "</figcaption></figure>\n";
  return out;
}

}  // namespace ipusim::sim::svg
