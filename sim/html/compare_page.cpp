#include <cmath>

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/html/gantt.hpp"
#include "sim/html/html_report.hpp"
#include "sim/html/page.hpp"
#include "sim/html/svg.hpp"

namespace ipusim::sim {
namespace {

using html::cell;
using html::header_row;
using html::ms;
using html::peak_memory;
using html::section;
using html::share;
using svg::escape;

std::string compare_table(const std::vector<const RunReport*>& reports,
                          const std::vector<std::string>& labels) {
  std::vector<std::string> header = {""};
  header.insert(header.end(), labels.begin(), labels.end());
  std::string out = "<table>" + header_row(header);
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
  row("Gradient accumulation (M)",
      [](const RunReport& r) { return with_commas(r.spec->pipeline.gradient_accumulation_count); });
  row("Step (cycles)", [](const RunReport& r) { return with_commas(r.replay.step_cycles); });
  row("Step (time)",
      [](const RunReport& r) { return ms(r.replay.step_cycles, r.spec->hardware.clock_hz); });
  row("Throughput (samples/s)",
      [](const RunReport& r) { return with_commas(std::llround(r.throughput())); });
  for (const auto phase : schedules::kPhases) {
    row(std::string(schedules::to_string(phase)) + " (cycles)", [phase](const RunReport& r) {
      return with_commas(r.replay.phase_cycles[schedules::index(phase)]);
    });
  }
  row("Ramp overhead", [](const RunReport& r) { return percent(r.ramp_overhead()); });
  row("Bubble", [](const RunReport& r) { return percent(r.bubble_fraction()); });
  row("Mean utilisation", [](const RunReport& r) {
    double sum = 0;
    for (const auto& ipu : r.replay.ipus)
      sum += share(double(ipu.busy_cycles), double(r.replay.step_cycles));
    return percent(r.replay.ipus.empty() ? 0.0 : sum / double(r.replay.ipus.size()));
  });
  row("Peak memory (largest IPU)",
      [](const RunReport& r) { return si(double(peak_memory(r)), "B"); });
  row("Peak stash per IPU", [](const RunReport& r) {
    std::string text;
    for (const auto& ipu : r.replay.ipus)
      text += (text.empty() ? "" : ", ") + si(double(ipu.peak_stash_bytes), "B");
    return text;
  });
  row("Fits in memory", [](const RunReport& r) { return r.fits_in_memory() ? "yes" : "no"; });
  return out + "</table>\n";
}

}  // namespace

std::string compare_html(const std::vector<const RunReport*>& reports,
                         const std::vector<const Timeline*>& timelines,
                         const std::vector<std::string>& labels) {
  IPUSIM_CHECK(reports.size() == timelines.size() && reports.size() == labels.size());
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
  body +=
      section("pipeline", "Pipelines on one time axis", notes + gantt_html(runs, {"gantt", false}));
  body += section("figures", "Figures side by side", compare_table(reports, labels));
  return html::page("ipusim comparison", body);
}

}  // namespace ipusim::sim
