#include <algorithm>
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

// One chart of each varied value: a metric against it.
struct SweepPlot {
  std::string id;  // the metric's column, in the chart's id
  std::string title;
  std::string y_label;
  double (*value)(const RunMetrics&);
  double scale = 1;  // the metric is divided by it (bytes to MB)
};

// The x axis of one varied value: its distinct values in the order of the rows; numbers
// when every value is one (log-spaced when they span a factor of 16 or more), else
// categories placed at their index.
struct SweepAxis {
  std::vector<std::string> categories;
  bool numeric = true;
  bool log_x = false;

  double x(const SweepPlotValue& value) const {
    return numeric ? *value.number
                   : double(std::find(categories.begin(), categories.end(), value.text) -
                            categories.begin());
  }
};

SweepAxis sweep_axis(const SweepPlotTable& table, std::size_t varied_index) {
  SweepAxis axis;
  for (const auto& run : table.runs) {
    const auto& value = run.values.at(varied_index);
    if (std::find(axis.categories.begin(), axis.categories.end(), value.text) ==
        axis.categories.end())
      axis.categories.push_back(value.text);
    axis.numeric = axis.numeric && value.number.has_value();
  }
  double min_x = 0;
  double max_x = 0;
  if (axis.numeric && !table.runs.empty()) {
    min_x = max_x = *table.runs.front().values[varied_index].number;
    for (const auto& run : table.runs) {
      min_x = std::min(min_x, *run.values[varied_index].number);
      max_x = std::max(max_x, *run.values[varied_index].number);
    }
  }
  axis.log_x = axis.numeric && min_x > 0 && max_x / min_x >= 16;
  return axis;
}

// One line per combination of the other varied values (e.g. per schedule), in the order of
// their first runs; runs that did not simulate are left out.
std::vector<svg::Series> sweep_series(const SweepPlotTable& table, std::size_t varied_index,
                                      const SweepAxis& axis, const SweepPlot& plot) {
  const std::size_t columns = table.varied.size();
  std::map<std::string, svg::Series> lines;
  std::vector<std::string> order;
  for (const auto& run : table.runs) {
    if (!run.metrics)
      continue;
    const double y = plot.value(*run.metrics) / plot.scale;
    std::string key;
    for (std::size_t v = 0; v < columns; ++v) {
      if (v == varied_index)
        continue;
      const auto& path = table.varied[v];
      const auto& text = run.values[v].text;
      key += (key.empty() ? "" : ", ") +
             (columns == 2 ? text : path.substr(path.rfind('.') + 1) + "=" + text);
    }
    if (!lines.count(key))
      order.push_back(key);
    auto& series = lines[key];
    series.label = key.empty() ? plot.title : key;
    series.points.push_back({axis.x(run.values[varied_index]), y});
    if (!run.metrics->fits_in_memory)
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
       {SweepPlot{"ramp_overhead", "Ramp overhead", "ramp overhead (% of IPU time)",
                  [](const RunMetrics& m) { return m.ramp_overhead * 100; }},
        SweepPlot{"throughput", "Throughput", "throughput (samples/s)",
                  [](const RunMetrics& m) { return m.throughput; }},
        SweepPlot{"bubble_fraction", "Bubble", "bubble (% of IPU time in the pipeline phases)",
                  [](const RunMetrics& m) { return m.bubble_fraction * 100; }},
        SweepPlot{"weight_update_share", "Weight update", "weight update (% of the step)",
                  [](const RunMetrics& m) {
                    const auto update =
                        m.phase_cycles[schedules::index(schedules::Phase::kWeightUpdate)];
                    return m.step_cycles > 0 ? 100.0 * double(update) / double(m.step_cycles) : 0.0;
                  }},
        SweepPlot{"peak_memory_bytes_max", "Peak memory", "peak memory of the fullest IPU (MB)",
                  [](const RunMetrics& m) { return double(m.peak_memory_bytes_max); }, 1e6}}) {
    svg::LineChart chart{"sweep-" + plot.id + "-" + std::to_string(varied_index),
                         plot.title + " against " + name,
                         name + (axis.log_x ? " (log scale)" : ""),
                         plot.y_label,
                         axis.numeric ? std::vector<std::string>{} : axis.categories,
                         axis.log_x,
                         sweep_series(table, varied_index, axis, plot),
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

// A CSV column's name with its unit when the name does not already say it.
std::string with_unit(const std::string& metric, MetricUnit unit) {
  return unit == MetricUnit::kShare ? metric + " (share, 0..1)" : metric;
}

// The CSV column names broken after each underscore, so that a long header wraps.
std::string breakable(const std::string& name) {
  std::string out;
  for (const char c : name)
    out += c == '_' ? std::string("_\u200b") : std::string(1, c);
  return out;
}

// A run's row of the table: its values, then its figures as the CSV writes them, each flagged
// when it is text (a value that is not a number, a yes/no, an empty cell) to align it left.
std::vector<std::pair<std::string, bool>> run_cells(const SweepPlotTable& table,
                                                    const SweepPlotRun& run,
                                                    const std::vector<MetricUnit>& units) {
  std::vector<std::pair<std::string, bool>> cells;
  for (const auto& value : run.values)
    cells.push_back({value.text, !value.number});
  if (!run.metrics) {
    cells.resize(cells.size() + units.size(), {"", true});
    return cells;
  }
  auto texts = metric_cells(*run.metrics);
  for (auto& text : per_ipu_cells(*run.metrics, table.ipus))
    texts.push_back(std::move(text));
  for (std::size_t c = 0; c < texts.size(); ++c)
    cells.push_back({texts[c], texts[c].empty() || units[c] == MetricUnit::kYesNo});
  return cells;
}

std::string sweep_rows(const SweepPlotTable& table) {
  const auto units = metric_units(table.ipus);
  auto names = metric_columns();
  for (auto& name : per_ipu_columns(table.ipus))
    names.push_back(std::move(name));
  std::vector<std::string> header;
  for (const auto& name : table.varied)
    header.push_back(breakable(name));
  for (std::size_t m = 0; m < names.size(); ++m)
    header.push_back(breakable(with_unit(names[m], units[m])));
  // A column is text when its first value is (a schedule's name), its header aligned to it.
  std::vector<bool> text;
  if (!table.runs.empty()) {
    for (const auto& [value, is_text] : run_cells(table, table.runs.front(), units))
      text.push_back(is_text);
  }
  std::string out = header_row(header, text);
  for (const auto& run : table.runs) {
    out += "<tr>";
    for (const auto& [value, is_text] : run_cells(table, run, units))
      out += cell(value, is_text);
    out += "</tr>\n";
  }
  return html::scroll_table(out);
}

// The runs a per-IPU chart draws at most: beyond, its bars would be too thin to read and the
// CSV's per-IPU columns serve better.
constexpr std::size_t kMostRunsPerIpuChart = 48;

// The varied values of a run, e.g. "gradient_accumulation_count=8 pipeline_schedule=grouped".
std::string run_label(const SweepPlotTable& table, const SweepPlotRun& run) {
  std::string label;
  for (std::size_t v = 0; v < table.varied.size(); ++v) {
    const auto& path = table.varied[v];
    label +=
        (label.empty() ? "" : " ") + path.substr(path.rfind('.') + 1) + "=" + run.values[v].text;
  }
  return label;
}

// A run's varied values, e.g. "8, grouped": short enough for a chart's group label.
std::string values_label(const SweepPlotRun& run) {
  std::string label;
  for (std::size_t v = 0; v < run.values.size(); ++v)
    label += (v ? ", " : "") + run.values[v].text;
  return label;
}

// Peak memory of every IPU of every run against the capacity, from the runs' per-IPU figures;
// a run with fewer IPUs has fewer bars.
std::string sweep_memory_per_ipu(const SweepPlotTable& table) {
  if (table.ipus == 0)
    return "";
  if (table.runs.size() > kMostRunsPerIpuChart)
    return section("sweep-memory-ipus", "Peak memory per IPU",
                   "<p class=\"note\">" + with_commas(std::int64_t(table.runs.size())) +
                       " runs are too many to draw per IPU (at most " +
                       std::to_string(kMostRunsPerIpuChart) +
                       "); the CSV's peak_memory_bytes_ipuK columns hold them.</p>\n");
  html::BarChart chart{"sweep-memory-ipus", "Peak memory per IPU", "MB (10^6 bytes)", {}, 0, ""};
  if (table.capacity_bytes > 0) {
    chart.limit = double(table.capacity_bytes) / 1e6;
    chart.limit_label = "capacity " + memory_figure(double(table.capacity_bytes));
  }
  for (const auto& run : table.runs) {
    html::BarGroup group{values_label(run), {}};
    // Every bar of a run that does not fit is hollow, as its rings are in the other charts; a
    // run that failed has none.
    const bool hollow = run.metrics && !run.metrics->fits_in_memory;
    const auto& peaks =
        run.metrics ? run.metrics->peak_memory_bytes_per_ipu : std::vector<std::int64_t>{};
    for (std::size_t k = 0; k < peaks.size(); ++k) {
      const double bytes = double(peaks[k]);
      group.bars.push_back(
          {"IPU" + std::to_string(k), bytes / 1e6, memory_figure(bytes),
           with_commas(peaks[k]) + " bytes at peak (" + run_label(table, run) + ")", hollow});
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

// The runs that do not fit: each IPU over the capacity and by how much when the runs have
// per-IPU figures, the fullest otherwise; without a common capacity, only the fullest's peak.
std::string sweep_overflow(const SweepPlotTable& table) {
  std::string items;
  for (const auto& run : table.runs) {
    if (!run.metrics || run.metrics->fits_in_memory)
      continue;
    const std::string label = run_label(table, run);
    const auto peak = run.metrics->peak_memory_bytes_max;
    if (table.capacity_bytes <= 0) {
      items += "<li><b>" + escape(label) + "</b>: does not fit; its fullest IPU peaks at " +
               memory_figure(double(peak)) + "</li>\n";
      continue;
    }
    const auto& peaks = run.metrics->peak_memory_bytes_per_ipu;
    for (std::size_t k = 0; k < peaks.size(); ++k) {
      if (peaks[k] > table.capacity_bytes)
        items +=
            html::overflow_item(label, "IPU" + std::to_string(k), peaks[k], table.capacity_bytes);
    }
    if (peaks.empty())
      items += html::overflow_item(label, "its fullest IPU", peak, table.capacity_bytes);
  }
  return html::overflow_list(items);
}

// Throughput against the fullest IPU's peak memory, one point per run that simulated.
std::string sweep_pareto(const SweepPlotTable& table) {
  // Sweep labels are long: they are in the tooltips only.
  html::ParetoChart chart{
      "sweep-pareto", "Throughput against peak memory", table.capacity_bytes, {}, false};
  for (const auto& run : table.runs) {
    if (!run.metrics)
      continue;
    chart.points.push_back({run_label(table, run), "", run.metrics->throughput,
                            run.metrics->peak_memory_bytes_max, run.metrics->fits_in_memory,
                            false});
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
  for (const auto& run : table.runs)
    IPUSIM_CHECK(run.values.size() == table.varied.size());
  std::string body = "<header><h1>ipusim sweep</h1><p class=\"sub\">" +
                     with_commas(std::int64_t(table.runs.size())) + " runs varying ";
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
