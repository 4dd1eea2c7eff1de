#include "sim/html/memory_chart.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/html/page.hpp"
#include "sim/html/svg.hpp"

namespace ipusim::sim::html {
namespace {

using svg::escape;

// Memory categories from the bottom of the stack up, with their colours; the dynamic ones last.
struct CategoryStyle {
  MemoryCategory category;
  const char* colour;
};

constexpr std::array<CategoryStyle, kMemoryCategories.size()> kCategoryStyles = {{
    {MemoryCategory::kAlwaysLive, "#b9bec5"},
    {MemoryCategory::kWeights, "#4c78a8"},
    {MemoryCategory::kOptimizerState, "#72b7b2"},
    {MemoryCategory::kGradientAccumulators, "#54a24b"},
    {MemoryCategory::kCopyBuffers, "#eeca3b"},
    {MemoryCategory::kStash, "#f58518"},
    {MemoryCategory::kActivations, "#e45756"},
}};

std::string category_colour(MemoryCategory category) {
  for (const auto& style : kCategoryStyles) {
    if (style.category == category)
      return style.colour;
  }
  IPUSIM_CHECK(false);
  return "";
}

// One IPU's memory over the step: static categories as bands, stash and activations as
// step functions on top (the maximum per pixel), and the capacity. Static memory usually
// dwarfs the rest, so a second, shorter chart shows the changing part on its own scale.
class MemoryChart {
 public:
  static constexpr double kWidth = 700;
  static constexpr double kLeft = 70;
  static constexpr double kRight = 16;
  static constexpr double kTop = 26;
  static constexpr double kBottom = 36;

  MemoryChart(const Timeline& timeline, double y_top, std::int64_t capacity, double height)
      : timeline_(timeline), y_top_(y_top), capacity_(capacity), height_(height) {}

  // Only the stash in flight and the running task's activations.
  std::string draw_changing(int ipu) const {
    std::string out;
    svg::Writer w(out);
    const std::string name = "IPU" + std::to_string(ipu);
    w.open("memory-changing-ipu" + std::to_string(ipu), kWidth, height_,
           "Changing memory of " + name);
    w.text(kLeft, 16, name + ": stash in flight and activations (own scale)", "chart-title");
    axes(w);
    dynamic_areas(w, ipu, 0);
    w.close();
    return out;
  }

  std::string draw(int ipu) const {
    std::string out;
    svg::Writer w(out);
    w.open("memory-ipu" + std::to_string(ipu), kWidth, height_,
           "Memory of IPU" + std::to_string(ipu) + " over the step");
    w.text(kLeft, 16, "IPU" + std::to_string(ipu), "chart-title");
    axes(w);
    const auto& statics = timeline_.layout.static_memory.at(ipu);
    double base = 0;
    for (const auto& [category, colour] : kCategoryStyles) {
      const auto found = statics.find(category);
      if (found == statics.end() || found->second == 0)
        continue;
      w.rect_fill(kLeft, y(base + double(found->second)), plot_width(),
                  y(base) - y(base + double(found->second)), colour);
      base += double(found->second);
    }
    dynamic_areas(w, ipu, base);
    capacity_line(w);
    w.close();
    return out;
  }

 private:
  double plot_width() const { return kWidth - kLeft - kRight; }
  double y(double bytes) const {
    return height_ - kBottom - bytes / y_top_ * (height_ - kTop - kBottom);
  }
  double x_of(std::int64_t cycles) const {
    const double end = double(std::max<std::int64_t>(timeline_.end.count, 1));
    return kLeft + double(cycles) / end * plot_width();
  }

  void axes(svg::Writer& w) const {
    for (const double bytes : svg::ticks(y_top_, 4)) {
      w.line(kLeft, y(bytes), kWidth - kRight, y(bytes), "grid");
      w.text(kLeft - 6, y(bytes) + 4, si(bytes, "B"), "tick", "end");
    }
    const double clock = timeline_.clock_hz();
    const double end_ms = double(timeline_.end.count) / clock * 1e3;
    for (const double t : svg::ticks(end_ms, 6)) {
      const double x = kLeft + t / std::max(end_ms, 1e-12) * plot_width();
      w.line(x, height_ - kBottom, x, height_ - kBottom + 4, "axis");
      w.text(x, height_ - kBottom + 16, svg::tick_label(t), "tick", "middle");
    }
    w.text(kWidth - kRight, height_ - 4, "time (ms)", "axis-label", "end");
    w.line(kLeft, height_ - kBottom, kWidth - kRight, height_ - kBottom, "axis");
  }

  // Per pixel column: the point with the most dynamic memory, the value held when the column
  // begins (the last point before it) included.
  std::vector<MemoryPoint> per_pixel(int ipu) const {
    const auto columns = std::size_t(std::ceil(plot_width()));
    std::vector<MemoryPoint> pixels(columns);
    std::vector<MemoryPoint> last(columns);
    std::vector<bool> has(columns, false);
    const auto total = [](const MemoryPoint& p) { return p.stash_bytes + p.live_bytes; };
    for (const auto& point : timeline_.memory.at(ipu)) {
      const double offset = std::max(0.0, x_of(point.at.count) - kLeft);
      const auto column = std::min(columns - 1, std::size_t(offset));
      if (!has[column] || total(point) > total(pixels[column]))
        pixels[column] = point;
      has[column] = true;
      last[column] = point;
    }
    MemoryPoint carried;
    for (std::size_t c = 0; c < columns; ++c) {
      if (!has[c] || total(carried) > total(pixels[c]))
        pixels[c] = carried;
      if (has[c])
        carried = last[c];
    }
    return pixels;
  }

  void dynamic_areas(svg::Writer& w, int ipu, double base) const {
    const auto pixels = per_pixel(ipu);
    std::vector<double> stash_top(pixels.size());
    std::vector<double> live_top(pixels.size());
    for (std::size_t c = 0; c < pixels.size(); ++c) {
      stash_top[c] = base + double(pixels[c].stash_bytes);
      live_top[c] = stash_top[c] + double(pixels[c].live_bytes);
    }
    const std::vector<double> flat(pixels.size(), base);
    area(w, flat, stash_top, category_colour(MemoryCategory::kStash));
    area(w, stash_top, live_top, category_colour(MemoryCategory::kActivations));
  }

  // The region between two step functions; runs of equal columns share vertices.
  void area(svg::Writer& w, const std::vector<double>& bottom, const std::vector<double>& top,
            const std::string& colour) const {
    bool any = false;
    for (std::size_t c = 0; c < top.size(); ++c)
      any = any || top[c] > bottom[c];
    if (!any)
      return;
    std::vector<std::pair<double, double>> points;
    auto edge = [&](const std::vector<double>& values, bool forward) {
      const std::size_t n = values.size();
      for (std::size_t k = 0; k < n; ++k) {
        const std::size_t c = forward ? k : n - 1 - k;
        const bool changes = k == 0 || values[c] != values[forward ? c - 1 : c + 1];
        if (!changes)
          continue;
        const double x = kLeft + double(forward ? c : c + 1);
        if (k > 0)
          points.push_back({x, y(values[forward ? c - 1 : c + 1])});
        points.push_back({x, y(values[c])});
      }
      points.push_back({kLeft + (forward ? double(n) : 0.0), y(values[forward ? n - 1 : 0])});
    };
    edge(top, true);
    edge(bottom, false);
    w.polygon(points, colour);
  }

  void capacity_line(svg::Writer& w) const {
    if (double(capacity_) <= y_top_) {
      w.line(kLeft, y(double(capacity_)), kWidth - kRight, y(double(capacity_)), "cap");
      w.text(kWidth - kRight - 4, y(double(capacity_)) - 4,
             "capacity " + memory_figure(double(capacity_)), "cap-label", "end");
      return;
    }
    w.text(kWidth - kRight - 4, kTop - 8,
           "\u2191 capacity " + memory_figure(double(capacity_)) + " is above the scale",
           "cap-label", "end");
  }

  const Timeline& timeline_;
  double y_top_;
  std::int64_t capacity_;
  double height_;
};

// The top of a memory axis: `top` rounded up to a whole tick.
double axis_top(double top) {
  const auto steps = svg::ticks(top, 4);
  const double step = steps.size() > 1 ? steps[1] : top;
  return std::ceil(top / step - 1e-9) * step;
}

std::int64_t changing_peak(const Timeline& timeline) {
  std::int64_t peak = 0;
  for (const auto& points : timeline.memory) {
    for (const auto& point : points)
      peak = std::max(peak, point.stash_bytes + point.live_bytes);
  }
  return peak;
}

}  // namespace

std::string memory_section(const RunReport& r, const Timeline& timeline) {
  const auto capacity = r.spec->hardware.memory_per_ipu_bytes;
  const double peak = double(r.figures.peak_memory_bytes_max);
  // Draw to the capacity when it is in the same range as the peak; otherwise the data would
  // be a sliver at the bottom, and the chart says where the capacity is instead.
  const double top =
      peak >= 0.25 * double(capacity) ? double(capacity) * 1.05 : std::max(peak * 1.15, 1.0);
  const double y_top = axis_top(top);
  std::string out = "<div class=\"legend\">";
  for (const auto& [category, colour] : kCategoryStyles) {
    out += "<span><i style=\"background:" + std::string(colour) + "\"></i>" +
           escape(std::string(to_string(category))) + "</span>";
  }
  out +=
      "<span><i style=\"background:#c62828;height:2px;vertical-align:3px\"></i>capacity</span>"
      "</div>\n<div class=\"grid2\">";
  const MemoryChart chart(timeline, y_top, capacity, 230);
  const auto changing = changing_peak(timeline);
  const MemoryChart changing_chart(timeline, axis_top(double(std::max<std::int64_t>(changing, 1))),
                                   capacity, 150);
  for (int ipu = 0; ipu < timeline.layout.ipus; ++ipu) {
    out += "<div>" + chart.draw(ipu);
    if (changing > 0)
      out += changing_chart.draw_changing(ipu);
    out += "</div>\n";
  }
  out += "</div>\n<div class=\"table-wrap\" style=\"margin-top:10px\"><table>" +
         header_row({"IPU", "Peak memory", "Share of capacity", "Peak stash", "In streaming memory",
                     "Fits"});
  for (std::size_t i = 0; i < r.replay.ipus.size(); ++i) {
    const auto& ipu = r.replay.ipus[i];
    const auto& figures = r.figures.ipus[i];
    const bool fits = figures.fits_in_memory;
    out += "<tr>" + cell("IPU" + std::to_string(i)) +
           cell(memory_figure(double(ipu.peak_memory_bytes))) +
           bar_cell(figures.capacity_share, !fits) +
           cell(memory_figure(double(ipu.peak_stash_bytes))) +
           cell(memory_figure(double(figures.streaming_memory_bytes))) +
           (fits ? "<td class=\"ok\">yes</td>" : "<td class=\"bad\">no</td>") + "</tr>\n";
  }
  out += "</table></div>\n";
  if (r.replay.out_of_memory)
    out += "<p class=\"note error\">" + escape(r.replay.out_of_memory->message()) + "</p>\n";
  return section("memory", "Memory per IPU over the step", out);
}

}  // namespace ipusim::sim::html
