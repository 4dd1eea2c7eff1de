#pragma once
// Small pieces the HTML reports draw with: escaping, locale-independent number text, an SVG
// element writer, "nice" axis ticks and a line chart. Everything is deterministic: the same
// input gives the same bytes.
// Part of sim/html, which may include sim/core, sim/report, sim/replay/timeline and
// schedules; never sim/sweep or tools. This file needs only sim/core.

#include <string>
#include <string_view>
#include <vector>

namespace ipusim::sim::svg {

// Escapes &, <, >, " and ' for HTML text and attribute values.
std::string escape(std::string_view text);

// A coordinate or size with at most `decimals` decimals, trailing zeros dropped: 12.50 -> "12.5".
std::string num(double value, int decimals = 2);

// Round tick values covering [0, max]: 0, 2e5, 4e5, ... with about `count` steps.
std::vector<double> ticks(double max, int count);
// A tick value as text with thousands separators or a short decimal: 200000 -> "200,000".
std::string tick_label(double value);

// Appends SVG elements to a string it does not own. Text content and attribute values are
// escaped; CSS class names are written as given.
class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}

  // <svg> scaled to the width of its container, `height` in the same units as `width`.
  void open(const std::string& id, double width, double height, const std::string& label);
  void close() { out_ += "</svg>\n"; }

  // `attributes`, e.g. ` data-l="F1"`, are written as given: the caller escapes them.
  void rect(double x, double y, double w, double h, const std::string& css_class,
            const std::string& title = "", const std::string& attributes = "");
  void rect_fill(double x, double y, double w, double h, const std::string& fill);
  void line(double x1, double y1, double x2, double y2, const std::string& css_class);
  // anchor: "start", "middle" or "end".
  void text(double x, double y, const std::string& content, const std::string& css_class,
            const char* anchor = "start");
  void polygon(const std::vector<std::pair<double, double>>& points, const std::string& fill);
  void polyline(const std::vector<std::pair<double, double>>& points, const std::string& stroke);
  void circle(double x, double y, double r, const std::string& fill, const std::string& title);
  void ring(double x, double y, double r, const std::string& stroke, const std::string& title);

 private:
  std::string& out_;
};

// One series of a line chart; points need not be sorted. Points also in `hollow` are drawn
// as rings (runs that do not fit in memory).
struct Series {
  std::string label;
  std::vector<std::pair<double, double>> points;
  std::vector<std::pair<double, double>> hollow;
};

// A line chart with axes. `categories` non-empty makes x categorical (x = index); `log_x`
// spaces x by log2.
struct LineChart {
  std::string id;
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<std::string> categories;
  bool log_x = false;
  std::vector<Series> series;
  std::string hollow_note;  // the legend's word for a ring, when any series has one
  double limit = 0;         // 0: none; else the region above it is shaded (memory capacity)
  std::string limit_label;
};

// The chart as inline SVG followed by its legend.
std::string line_chart(const LineChart& chart);

}  // namespace ipusim::sim::svg
