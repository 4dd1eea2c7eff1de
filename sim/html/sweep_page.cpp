#include <algorithm>
#include <charconv>
#include <map>
#include <optional>

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/html/bar_chart.hpp"
#include "sim/html/html_report.hpp"
#include "sim/html/page.hpp"
#include "sim/html/pareto_chart.hpp"
#include "sim/html/svg.hpp"

namespace ipusim::sim {
namespace {

using html::cell;
using html::header_row;
using html::section;
using svg::escape;

// A CSV cell as a number: "12", "0.25", "45.7%" (percent: 45.7) or "1,024".
std::optional<double> parse_number(std::string text) {
  text.erase(std::remove(text.begin(), text.end(), ','), text.end());
  if (!text.empty() && text.back() == '%')
    text.pop_back();
  double value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || ptr != end)
    return std::nullopt;
  return value;
}

int column_of(const std::vector<std::string>& names, const std::string& part, std::size_t offset) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i].find(part) != std::string::npos)
      return int(offset + i);
  }
  return -1;
}

// One chart of each varied value: a metric against it.
struct SweepPlot {
  std::string metric_part;  // matched against the metric names
  std::string title;
  std::string y_label;
  bool as_percent;
  double scale = 1;  // the metric is divided by it (bytes to MB)
};

// The x axis of one varied value: its distinct values in the order of the rows; numbers
// when every value is one (log-spaced when they span a factor of 16 or more), else
// categories placed at their index.
struct SweepAxis {
  std::vector<std::string> categories;
  bool numeric = true;
  bool log_x = false;

  double x(const std::string& value) const {
    return numeric ? *parse_number(value)
                   : double(std::find(categories.begin(), categories.end(), value) -
                            categories.begin());
  }
};

SweepAxis sweep_axis(const SweepPlotTable& table, std::size_t varied_index) {
  SweepAxis axis;
  for (const auto& row : table.rows) {
    const auto& value = row.at(varied_index);
    if (std::find(axis.categories.begin(), axis.categories.end(), value) == axis.categories.end())
      axis.categories.push_back(value);
    axis.numeric = axis.numeric && parse_number(value).has_value();
  }
  double min_x = 0;
  double max_x = 0;
  if (axis.numeric && !axis.categories.empty()) {
    min_x = max_x = *parse_number(axis.categories.front());
    for (const auto& value : axis.categories) {
      min_x = std::min(min_x, *parse_number(value));
      max_x = std::max(max_x, *parse_number(value));
    }
  }
  axis.log_x = axis.numeric && min_x > 0 && max_x / min_x >= 16;
  return axis;
}

// One line per combination of the other varied values (e.g. per schedule), in the order of
// their first rows; rows whose metric is not a number are left out.
std::vector<svg::Series> sweep_series(const SweepPlotTable& table, std::size_t varied_index,
                                      const SweepAxis& axis, const SweepPlot& plot,
                                      std::size_t metric) {
  const std::size_t columns = table.varied.size();
  std::map<std::string, svg::Series> lines;
  std::vector<std::string> order;
  const int fits = column_of(table.metrics, "fits_in_memory", columns);
  for (const auto& row : table.rows) {
    auto y = parse_number(row.at(metric));
    if (!y)
      continue;
    if (plot.as_percent && row.at(metric).find('%') == std::string::npos)
      *y *= 100;
    *y /= plot.scale;
    std::string key;
    for (std::size_t v = 0; v < columns; ++v) {
      if (v == varied_index)
        continue;
      const auto& path = table.varied[v];
      key += (key.empty() ? "" : ", ") +
             (columns == 2 ? row[v] : path.substr(path.rfind('.') + 1) + "=" + row[v]);
    }
    if (!lines.count(key))
      order.push_back(key);
    auto& series = lines[key];
    series.label = key.empty() ? plot.title : key;
    series.points.push_back({axis.x(row[varied_index]), *y});
    if (fits >= 0 && row.at(std::size_t(fits)) == "false")
      series.hollow.push_back(series.points.back());
  }
  std::vector<svg::Series> series;
  for (const auto& key : order)
    series.push_back(lines[key]);
  return series;
}

std::string sweep_plots(const SweepPlotTable& table, std::size_t varied_index) {
  const SweepAxis axis = sweep_axis(table, varied_index);
  const std::string name = table.varied[varied_index];
  std::string out;
  for (const SweepPlot& plot :
       {SweepPlot{"ramp_overhead", "Ramp overhead", "ramp overhead (% of step)", true},
        SweepPlot{"throughput", "Throughput", "throughput (samples/s)", false},
        SweepPlot{"peak_memory_bytes_max", "Peak memory", "peak memory of the fullest IPU (MB)",
                  false, 1e6}}) {
    const int metric = column_of(table.metrics, plot.metric_part, table.varied.size());
    if (metric < 0)
      continue;
    svg::LineChart chart{"sweep-" + plot.metric_part + "-" + std::to_string(varied_index),
                         plot.title + " against " + name,
                         name + (axis.log_x ? " (log scale)" : ""),
                         plot.y_label,
                         axis.numeric ? std::vector<std::string>{} : axis.categories,
                         axis.log_x,
                         sweep_series(table, varied_index, axis, plot, std::size_t(metric)),
                         "does not fit in memory",
                         0,
                         ""};
    if (plot.scale != 1 && table.capacity_bytes > 0) {  // the memory chart
      chart.limit = double(table.capacity_bytes) / plot.scale;
      chart.limit_label = "capacity " + memory_figure(double(table.capacity_bytes));
    }
    out += "<div>" + svg::line_chart(chart) + "</div>\n";
  }
  return out;
}

// The unit of a CSV column whose name does not already say it.
std::string with_unit(const std::string& metric) {
  for (const char* share : {"ramp_overhead", "bubble_fraction", "utilisation_"}) {
    if (metric.find(share) == 0)
      return metric + " (share, 0..1)";
  }
  return metric;
}

// The CSV column names broken after each underscore, so that a long header wraps.
std::string breakable(const std::string& name) {
  std::string out;
  for (const char c : name)
    out += c == '_' ? std::string("_\u200b") : std::string(1, c);
  return out;
}

std::string sweep_rows(const SweepPlotTable& table) {
  std::vector<std::string> header;
  for (const auto& name : table.varied)
    header.push_back(breakable(name));
  for (const auto& name : table.metrics)
    header.push_back(breakable(with_unit(name)));
  // A column is text when its first value is (a schedule's name), its header aligned to it.
  std::vector<bool> text;
  for (std::size_t c = 0; c < header.size(); ++c)
    text.push_back(!table.rows.empty() && !parse_number(table.rows.front().at(c)).has_value());
  std::string out = header_row(header, text);
  for (const auto& row : table.rows) {
    out += "<tr>";
    for (const auto& value : row)
      out += cell(value, !parse_number(value).has_value());
    out += "</tr>\n";
  }
  return html::scroll_table(out);
}

// The runs a per-IPU chart draws at most: beyond, its bars would be too thin to read and the
// CSV's per-IPU columns serve better.
constexpr std::size_t kMostRunsPerIpuChart = 48;

// The varied values of a row, e.g. "gradient_accumulation_count=8 pipeline_schedule=grouped".
std::string run_label(const SweepPlotTable& table, const std::vector<std::string>& row) {
  std::string label;
  for (std::size_t v = 0; v < table.varied.size(); ++v) {
    const auto& path = table.varied[v];
    label += (label.empty() ? "" : " ") + path.substr(path.rfind('.') + 1) + "=" + row[v];
  }
  return label;
}

// A row's varied values, e.g. "8, grouped": short enough for a chart's group label.
std::string values_label(const SweepPlotTable& table, const std::vector<std::string>& row) {
  std::string label;
  for (std::size_t v = 0; v < table.varied.size(); ++v)
    label += (v ? ", " : "") + row[v];
  return label;
}

// Peak memory of every IPU of every run against the capacity, from the CSV's
// peak_memory_bytes_ipuK columns; a run with fewer IPUs has fewer bars.
std::string sweep_memory_per_ipu(const SweepPlotTable& table) {
  std::vector<std::size_t> ipu_columns;
  for (std::size_t m = 0; m < table.metrics.size(); ++m) {
    if (table.metrics[m].rfind("peak_memory_bytes_ipu", 0) == 0)
      ipu_columns.push_back(table.varied.size() + m);
  }
  if (ipu_columns.empty())
    return "";
  if (table.rows.size() > kMostRunsPerIpuChart)
    return section("sweep-memory-ipus", "Peak memory per IPU",
                   "<p class=\"note\">" + with_commas(std::int64_t(table.rows.size())) +
                       " runs are too many to draw per IPU (at most " +
                       std::to_string(kMostRunsPerIpuChart) +
                       "); the CSV's peak_memory_bytes_ipuK columns hold them.</p>\n");
  html::BarChart chart{"sweep-memory-ipus", "Peak memory per IPU", "MB (10^6 bytes)", {}, 0, ""};
  if (table.capacity_bytes > 0) {
    chart.limit = double(table.capacity_bytes) / 1e6;
    chart.limit_label = "capacity " + memory_figure(double(table.capacity_bytes));
  }
  const int fits = column_of(table.metrics, "fits_in_memory", table.varied.size());
  for (const auto& row : table.rows) {
    html::BarGroup group{values_label(table, row), {}};
    // Every bar of a run that does not fit is hollow, as its rings are in the other charts.
    const bool hollow = fits >= 0 && row.at(std::size_t(fits)) == "false";
    for (std::size_t k = 0; k < ipu_columns.size(); ++k) {
      const auto bytes = parse_number(row.at(ipu_columns[k]));
      if (!bytes)
        continue;  // the run has fewer IPUs, or failed
      group.bars.push_back(
          {"IPU" + std::to_string(k), *bytes / 1e6, memory_figure(*bytes),
           with_commas(std::int64_t(*bytes)) + " bytes at peak (" + run_label(table, row) + ")",
           hollow});
    }
    chart.groups.push_back(std::move(group));
  }
  std::string varied;
  for (const auto& path : table.varied)
    varied += (varied.empty() ? "" : ", ") + escape(path);
  return section("sweep-memory-ipus", "Peak memory per IPU",
                 "<div class=\"grid2\"><div>" + html::bar_chart(chart) + "</div><div>" +
                     html::explain("One group per run, labelled by its " + varied +
                                   ", and one bar per IPU. A run that does not fit is hollow, "
                                   "as in the other charts; its IPU past the capacity line is "
                                   "the one that overflows. Unequal bars show where moving a "
                                   "layer to another stage would even them out.") +
                     "</div></div>");
}

// The runs that do not fit: each IPU over the capacity and by how much when the CSV has
// per-IPU columns, the fullest otherwise; without a common capacity, only the fullest's peak.
std::string sweep_overflow(const SweepPlotTable& table) {
  const std::size_t columns = table.varied.size();
  const int fits = column_of(table.metrics, "fits_in_memory", columns);
  const int fullest = column_of(table.metrics, "peak_memory_bytes_max", columns);
  if (fits < 0 || fullest < 0)
    return "";
  std::string items;
  for (const auto& row : table.rows) {
    if (row.at(std::size_t(fits)) != "false")
      continue;
    const std::string label = run_label(table, row);
    const auto peak = parse_number(row.at(std::size_t(fullest))).value_or(0);
    if (table.capacity_bytes <= 0) {
      items += "<li><b>" + escape(label) + "</b>: does not fit; its fullest IPU peaks at " +
               memory_figure(peak) + "</li>\n";
      continue;
    }
    bool per_ipu = false;
    for (std::size_t m = 0; m < table.metrics.size(); ++m) {
      const auto bytes = parse_number(row.at(columns + m));
      if (table.metrics[m].rfind("peak_memory_bytes_ipu", 0) != 0 || !bytes)
        continue;
      per_ipu = true;
      if (*bytes > double(table.capacity_bytes))
        items += html::overflow_item(label, "IPU" + table.metrics[m].substr(21),
                                     std::int64_t(*bytes), table.capacity_bytes);
    }
    if (!per_ipu)
      items +=
          html::overflow_item(label, "its fullest IPU", std::int64_t(peak), table.capacity_bytes);
  }
  return html::overflow_list(items);
}

// Throughput against the fullest IPU's peak memory, one point per run, when the CSV has both.
std::string sweep_pareto(const SweepPlotTable& table) {
  const std::size_t columns = table.varied.size();
  const int speed = column_of(table.metrics, "throughput", columns);
  const int peak = column_of(table.metrics, "peak_memory_bytes_max", columns);
  const int fits = column_of(table.metrics, "fits_in_memory", columns);
  if (speed < 0 || peak < 0)
    return "";
  // Sweep labels are long: they are in the tooltips only.
  html::ParetoChart chart{
      "sweep-pareto", "Throughput against peak memory", table.capacity_bytes, {}, false};
  for (const auto& row : table.rows) {
    const auto y = parse_number(row.at(std::size_t(speed)));
    const auto x = parse_number(row.at(std::size_t(peak)));
    if (!x || !y)
      continue;
    chart.points.push_back({run_label(table, row), "", *y, std::int64_t(*x),
                            fits < 0 || row.at(std::size_t(fits)) != "false", false});
  }
  return section(
      "sweep-pareto", "Throughput against peak memory",
      "<div class=\"grid2\"><div>" + html::pareto_chart(chart) + "</div></div>" +
          html::explain("One point per run. Up and to the left is better (the throughput "
                        "axis starts at 0, so that heights compare as ratios); a ring does "
                        "not fit in memory. The green line joins the runs that fit "
                        "and that no other run beats on both throughput and memory.") +
          sweep_overflow(table));
}

}  // namespace

std::string sweep_html(const SweepPlotTable& table) {
  for (const auto& row : table.rows)
    IPUSIM_CHECK(row.size() == table.varied.size() + table.metrics.size());
  std::string body = "<header><h1>ipusim sweep</h1><p class=\"sub\">" +
                     with_commas(std::int64_t(table.rows.size())) + " runs varying ";
  for (std::size_t v = 0; v < table.varied.size(); ++v)
    body += (v ? ", " : "") + escape(table.varied[v]);
  body += "</p>" + html::derived_figures_note() + "</header>\n";
  for (std::size_t v = 0; v < table.varied.size(); ++v) {
    if (table.varied[v] == "pipeline.pipeline_schedule" && table.varied.size() > 1)
      continue;
    body += section("sweep-" + std::to_string(v), "Against " + table.varied[v],
                    "<div class=\"grid2\">" + sweep_plots(table, v) + "</div>");
  }
  body += sweep_memory_per_ipu(table);
  body += sweep_pareto(table);
  body += section("runs", "Runs", sweep_rows(table));
  return html::page("ipusim sweep", body);
}

}  // namespace ipusim::sim
