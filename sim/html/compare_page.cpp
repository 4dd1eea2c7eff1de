// `ipusim compare --html`: the runs' Gantt charts on one time axis; throughput beside the
// peak memory of each IPU; throughput against peak memory with the region past the capacity
// shaded; the runs that do not fit, named with the IPU and the bytes it overflows by; then
// the figures side by side.

#include <algorithm>
#include <cmath>

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/html/bar_chart.hpp"
#include "sim/html/gantt.hpp"
#include "sim/html/html_report.hpp"
#include "sim/html/page.hpp"
#include "sim/html/pareto_chart.hpp"
#include "sim/html/svg.hpp"
#include "sim/report/run_metrics.hpp"

namespace ipusim::sim {
namespace {

using html::cell;
using html::explain;
using html::header_row;
using html::section;
using svg::escape;

using Runs = std::vector<const RunReport*>;
using Labels = std::vector<std::string>;

bool any_training(const Runs& reports) {
  return std::any_of(reports.begin(), reports.end(),
                     [](const RunReport* r) { return r->spec->pipeline.training; });
}

std::string compare_table(const Runs& reports, const Labels& labels) {
  std::vector<std::string> header = {"Figure"};
  header.insert(header.end(), labels.begin(), labels.end());
  std::string out = header_row(header);
  auto row = [&](const std::string& name, const auto& value) {
    out += "<tr>" + cell(name);
    for (const auto* r : reports)
      out += cell(value(*r));
    out += "</tr>\n";
  };
  row("Config", [](const RunReport& r) { return r.spec->config_path; });
  row("Schedule", [](const RunReport& r) { return r.schedule; });
  row("IPUs x replicas", [](const RunReport& r) {
    return std::to_string(r.spec->pipeline.ipus_per_replica()) + " x " +
           std::to_string(r.spec->pipeline.replication_factor);
  });
  row("Gradient accumulation M (micro-batches)",
      [](const RunReport& r) { return with_commas(r.spec->pipeline.gradient_accumulation_count); });
  // The metric columns as compare's text table shows them, so a figure added there shows here.
  std::vector<RunMetrics> metrics;
  for (const auto* r : reports)
    metrics.push_back(run_metrics(*r));
  for (const MetricColumn* column : table_columns(any_training(reports))) {
    out += "<tr>" + cell(column->heading);
    for (std::size_t i = 0; i < reports.size(); ++i)
      out += cell(table_text(*column, metrics[i], reports[i]->spec->pipeline.training));
    out += "</tr>\n";
  }
  row("Memory per IPU (capacity)", [](const RunReport& r) {
    return memory_figure(double(r.spec->hardware.memory_per_ipu_bytes));
  });
  row("Peak stash per IPU", [](const RunReport& r) {
    std::string text;
    for (const auto& ipu : r.replay.ipus)
      text += (text.empty() ? "" : ", ") + memory_figure(double(ipu.peak_stash_bytes));
    return text;
  });
  return html::scroll_table(out);
}

// Each run that does not fit, with every IPU over its capacity and by how many bytes.
std::string overflow_list(const Runs& reports, const Labels& labels) {
  std::string items;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const auto capacity = reports[i]->spec->hardware.memory_per_ipu_bytes;
    for (std::size_t ipu = 0; ipu < reports[i]->replay.ipus.size(); ++ipu) {
      const auto peak = reports[i]->replay.ipus[ipu].peak_memory_bytes;
      if (peak > capacity)
        items += html::overflow_item(labels[i], "IPU" + std::to_string(ipu), peak, capacity);
    }
  }
  return items.empty() ? "<p>Every run fits in memory.</p>\n" : html::overflow_list(items);
}

std::string run_key(const Labels& labels) {
  std::string out = "<ol class=\"run-key\">";
  for (const auto& label : labels)
    out += "<li>" + escape(label) + "</li>";
  return out + "</ol>\n";
}

std::int64_t common_capacity(const Runs& reports) {
  const auto capacity = reports.front()->spec->hardware.memory_per_ipu_bytes;
  for (const auto* r : reports) {
    if (r->spec->hardware.memory_per_ipu_bytes != capacity)
      return 0;  // no one line to draw
  }
  return capacity;
}

std::string memory_charts(const Runs& reports, const Labels& labels) {
  html::BarChart speed{"compare-throughput", "Throughput", "samples/s", {}, 0, ""};
  const auto capacity = common_capacity(reports);
  html::BarChart memory{"compare-memory", "Peak memory per IPU", "MB (10^6 bytes)", {}, 0, ""};
  if (capacity > 0) {
    memory.limit = double(capacity) / 1e6;
    memory.limit_label = "capacity " + memory_figure(double(capacity));
  }
  html::ParetoChart pareto{
      "compare-pareto", "Throughput against peak memory", capacity, {}, reports.size() <= 12};
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const auto& r = *reports[i];
    const auto& f = r.figures;
    const std::string samples = with_commas(std::llround(f.throughput)) + " samples/s";
    const bool hollow = !f.fits_in_memory;
    speed.groups.push_back({labels[i], {{"", f.throughput, samples, samples, hollow}}});
    html::BarGroup group{labels[i], {}};
    for (std::size_t ipu = 0; ipu < r.replay.ipus.size(); ++ipu) {
      const auto peak = r.replay.ipus[ipu].peak_memory_bytes;
      group.bars.push_back({"IPU" + std::to_string(ipu), double(peak) / 1e6,
                            memory_figure(double(peak)), with_commas(peak) + " bytes at peak",
                            hollow});
    }
    memory.groups.push_back(std::move(group));
    pareto.points.push_back({labels[i], std::to_string(i + 1), f.throughput,
                             f.peak_memory_bytes_max, f.fits_in_memory, false});
  }
  return "<div class=\"grid2\"><div>" + html::bar_chart(speed) + "</div><div>" +
         html::bar_chart(memory) + "</div></div>\n" +
         explain(
             "A run that does not fit is hollow in every chart, its bars outlined and its "
             "point a ring: its throughput is what it would reach with more memory. Its IPU "
             "past the capacity line is the one that overflows.") +
         "<div class=\"grid2\"><div>" + html::pareto_chart(pareto) + "</div><div>" +
         explain(
             "Each run is a point, numbered as in the list below; runs drawn close together share "
             "one label (runs 1, 4, 7). Up and to the left is better; the throughput axis "
             "starts at 0, so that heights compare as ratios. The green line joins the runs that "
             "fit and that no other fitting run "
             "beats on both throughput and memory.") +
         run_key(labels) + overflow_list(reports, labels) + "</div></div>\n";
}

}  // namespace

std::string compare_html(const std::vector<const RunReport*>& reports,
                         const std::vector<const Timeline*>& timelines,
                         const std::vector<std::string>& labels) {
  IPUSIM_CHECK(reports.size() == timelines.size() && reports.size() == labels.size());
  IPUSIM_CHECK(!reports.empty());
  std::vector<GanttRun> runs;
  std::string notes;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    runs.push_back({reports[i], timelines[i], labels[i]});
    if (timelines[i]->truncated) {
      notes += "<p class=\"note\">" + escape(labels[i]) + ": " +
               escape(timelines[i]->truncation_note()) + ".</p>\n";
    }
  }
  std::string body = "<header><h1>ipusim comparison of " + std::to_string(reports.size()) +
                     " runs</h1><p class=\"sub\">The Gantt charts share one time axis.</p>"
                     "</header>\n";
  body += section("pipeline", "Pipelines on one time axis",
                  notes + gantt_html(runs, {"gantt", false, true, std::nullopt}));
  body += section("memory-speed", "Throughput and peak memory", memory_charts(reports, labels));
  body +=
      section("figures", "Figures side by side",
              html::derived_figures_note(any_training(reports)) + compare_table(reports, labels));
  return html::page("ipusim comparison", body);
}

}  // namespace ipusim::sim
