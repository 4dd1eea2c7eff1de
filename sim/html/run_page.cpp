#include "sim/html/html_report.hpp"

#include <algorithm>
#include <cmath>

#include "sim/core/format.hpp"
#include "sim/html/gantt.hpp"
#include "sim/html/memory_chart.hpp"
#include "sim/html/page.hpp"
#include "sim/html/svg.hpp"
#include "sim/report/run_metrics.hpp"

namespace ipusim::sim {
namespace {

using html::bar_cell;
using html::cell;
using html::header_row;
using html::ms;
using html::section;
using svg::escape;

// ---- configuration and headline figures ----

// "recompute then backpropagate": the config's name, in words.
std::string recomputation_name(schedules::RecomputationMode mode) {
  std::string name = schedules::to_string(mode);
  std::replace(name.begin(), name.end(), '_', ' ');
  return name;
}

std::string optimizer_name(const models::OptimizerConfig& optimizer) {
  switch (optimizer.kind) {
    case models::OptimizerConfig::Kind::kSgd:
      return "SGD";
    case models::OptimizerConfig::Kind::kMomentum:
      return "SGD with momentum";
    case models::OptimizerConfig::Kind::kAdam:
      return "Adam";
    case models::OptimizerConfig::Kind::kLamb:
      return "LAMB";
    case models::OptimizerConfig::Kind::kLars:
      return "LARS";
  }
  return "";
}

// "flatten-dense256" or, for long stages, "encoder4 … encoder10 (7 layers)".
std::string stage_layers(const RunSpec& spec, int stage) {
  const auto layers = spec.pipeline.stages[stage].layers();
  if (layers.size() <= 4)
    return spec.pipeline.stages[stage].name(spec.model);
  return spec.model.layers[layers.front()].id + " \u2026 " + spec.model.layers[layers.back()].id +
         " (" + std::to_string(layers.size()) + " layers)";
}

std::string ipu_list(const std::vector<int>& ipus) {
  std::string out;
  for (const int ipu : ipus)
    out += (out.empty() ? "IPU" : ", IPU") + std::to_string(ipu);
  return out;
}

// "logical (device_mapping); on physical IPUs 0, 1, 3, 2 (selection order snake)".
std::string ipu_numbering(const RunReport& r) {
  std::string physical;
  for (const auto& ipu : r.replay.ipus)
    physical += (physical.empty() ? "" : ", ") + std::to_string(ipu.physical);
  return "IPUn is logical (device_mapping); on physical IPUs " + physical + " (selection order " +
         selection_order_name(r.spec->hardware.selection_order) + ")";
}

using Items = std::vector<std::pair<std::string, std::string>>;

// What a step is made of: a training step accumulates M micro-batches into one weight update,
// an inference pass just runs M micro-batches (the text report words it the same way).
Items step_items(const PipelineSpec& p) {
  if (!p.training) {
    return {{"Micro-batches per pass (M)", with_commas(p.gradient_accumulation_count)},
            {"Micro-batch size", with_commas(p.micro_batch_size)},
            {"Samples per pass", with_commas(p.samples_per_weight_update())}};
  }
  return {{"Gradient accumulation (M)", with_commas(p.gradient_accumulation_count)},
          {"Micro-batch size", with_commas(p.micro_batch_size)},
          {"Effective batch", with_commas(p.samples_per_weight_update())}};
}

// The data type, and for training the accumulators and the optimizer, which inference has none
// of.
Items arithmetic_items(const PipelineSpec& p) {
  if (!p.training)
    return {{"Data type", models::dtype_name(p.dtype)}};
  return {{"Data type", models::dtype_name(p.dtype) + " (accumulators " +
                            models::dtype_name(p.gradient_accumulation_dtype) + ")"},
          {"Optimizer", optimizer_name(p.optimizer) +
                            (p.offload_weight_update_variables ? ", state offloaded" : "")}};
}

std::string config_section(const RunReport& r) {
  const auto& spec = *r.spec;
  const auto& p = spec.pipeline;
  const auto& hw = spec.hardware;
  Items items = {
      {"Model", spec.model.name + " (" + with_commas(spec.model.total_params()) + " parameters)"},
      {"Config", spec.config_path},
      {"Schedule", r.schedule + (r.relaxed ? " (relaxed divisibility)" : "")},
      {"Stages", std::to_string(p.stages.size())},
      {"IPUs per replica", std::to_string(p.ipus_per_replica())},
      {"Replicas", std::to_string(p.replication_factor)}};
  for (auto& item : step_items(p))
    items.push_back(std::move(item));
  items.push_back({"Repeat count", with_commas(p.repeat_count)});
  items.push_back({"Recomputation", recomputation_name(spec.schedule->recomputation())});
  for (auto& item : arithmetic_items(p))
    items.push_back(std::move(item));
  items.insert(items.end(),
               {{"Stash FIFOs", p.offload_activations ? "in streaming memory (offload_activations)"
                                                      : "in IPU memory"},
                {"Hardware", hw.preset + ", " + std::to_string(hw.ipus) + " IPUs at " +
                                 fixed(hw.clock_hz / 1e9, 3) + " GHz"},
                {"IPU numbering", ipu_numbering(r)},
                {"Memory per IPU", memory_figure(double(hw.memory_per_ipu_bytes))},
                {"Training", p.training ? "yes" : "no (inference)"}});
  std::string out = "<dl class=\"config\">";
  for (const auto& [name, value] : items)
    out += "<div><dt>" + escape(name) + "</dt><dd>" + escape(value) + "</dd></div>";
  out += "</dl>\n";
  for (const auto& note : spec.notes)
    out += "<p class=\"note\">" + escape(note) + "</p>\n";
  return section("config", "Configuration", out);
}

std::string card(const std::string& value, const std::string& label) {
  return "<div class=\"card\"><b>" + escape(value) + "</b><span>" + escape(label) + "</span></div>";
}

std::string headline(const RunReport& r) {
  const double clock = r.spec->hardware.clock_hz;
  const auto capacity = r.spec->hardware.memory_per_ipu_bytes;
  const auto& f = r.figures;
  std::string out = "<div class=\"cards\">";
  out += card(ms(r.replay.step_cycles, clock),
              std::string(r.spec->pipeline.training ? "step (one weight update), "
                                                    : "step (one inference pass), ") +
                  with_commas(r.replay.step_cycles) + " cycles");
  out += card(with_commas(std::llround(f.throughput)), "samples/s throughput");
  out += card(percent(f.ramp_overhead), "ramp overhead (idle in ramp-up and ramp-down)");
  out += card(percent(f.bubble_fraction), "bubble: idle IPU time in the pipeline");
  out += card(memory_figure(double(f.peak_memory_bytes_max)),
              "peak memory of an IPU (" + percent(f.peak_memory_capacity_share) + " of " +
                  memory_figure(double(capacity)) + ")");
  out += card(f.fits_in_memory ? "fits" : "out of memory", "memory check");
  return out + "</div>\n" + html::derived_figures_note(r.spec->pipeline.training);
}

// Every metric column of sweep's and compare's CSV (metric_table), as compare's table shows it,
// with its CSV key: what this run adds to a sweep.
std::string figures_table(const RunReport& r) {
  const RunMetrics metrics = run_metrics(r);
  const bool training = r.spec->pipeline.training;
  std::string out = header_row({"Figure", "Value", "CSV column"});
  for (const MetricColumn* column : table_columns(training)) {
    out += "<tr>" + cell(column->heading) + cell(table_text(*column, metrics, training)) +
           "<td><code>" + escape(column->key) + "</code></td></tr>\n";
  }
  return html::scroll_table(out);
}

// ---- timing and utilisation ----

std::string phases_table(const RunReport& r) {
  const double clock = r.spec->hardware.clock_hz;
  std::string out = header_row({"Phase", "Cycles", "Time (ms)", "Share of step"});
  for (const auto phase : schedules::phases_of_run(r.spec->pipeline.training)) {
    const auto cycles = r.replay.phase_cycles[schedules::index(phase)];
    out += "<tr>" + cell(std::string(schedules::to_string(phase))) + cell(with_commas(cycles)) +
           cell(ms(cycles, clock)) + bar_cell(r.figures.phase_share[schedules::index(phase)]) +
           "</tr>\n";
  }
  return html::scroll_table(out);
}

std::string utilisation_table(const RunReport& r) {
  std::vector<std::string> heading = {"IPU", "Whole step"};
  const auto phases = schedules::phases_of_run(r.spec->pipeline.training);
  for (const auto phase : phases)
    heading.push_back(schedules::phase_heading(phase));
  heading.insert(heading.end(), {"Busy cycles", "Host link", "Streaming memory link"});
  std::string out = header_row(heading);
  for (std::size_t i = 0; i < r.replay.ipus.size(); ++i) {
    const auto& figures = r.figures.ipus[i];
    out += "<tr>" + cell("IPU" + std::to_string(i)) + bar_cell(figures.utilisation);
    for (const auto phase : phases)
      out += bar_cell(figures.utilisation_by_phase[schedules::index(phase)]);
    out += cell(with_commas(r.replay.ipus[i].busy_cycles)) +
           bar_cell(figures.host_link_utilisation) + bar_cell(figures.streaming_link_utilisation) +
           "</tr>\n";
  }
  out = html::scroll_table(out);
  if (r.replay.links.empty())
    return out;
  std::string links = header_row({"Link", "Physical IPUs", "Bytes per step", "Busy"});
  for (std::size_t k = 0; k < r.replay.links.size(); ++k) {
    const auto& link = r.replay.links[k];
    links +=
        "<tr>" +
        cell("IPU" + std::to_string(link.from_ipu) + " \u2192 IPU" + std::to_string(link.to_ipu)) +
        cell("IPU" + std::to_string(link.from_physical) + " \u2192 IPU" +
             std::to_string(link.to_physical)) +
        cell(si(double(link.bytes), "B")) + bar_cell(r.figures.link_utilisation[k]) + "</tr>\n";
  }
  return out + "<h3 style=\"margin-top:12px\">IPU-Links</h3>" + html::scroll_table(links);
}

// ---- stash FIFOs ----

std::string stash_section(const RunReport& r) {
  const auto& spec = *r.spec;
  const auto kinds = spec.schedule->stash_kind();
  // Text columns are left-aligned in the header too, so that each name sits over its values.
  std::string out = header_row(
      {"Stage", "Layers", "IPUs", "Stash holds", "FIFO depth (micro-batches)", "Kept in"},
      {true, true, true, true, false, true});
  const bool offloaded = spec.pipeline.offload_activations;
  for (std::size_t k = 0; k < r.stash_depth.size(); ++k) {
    out += "<tr>" + cell("s" + std::to_string(k)) + cell(stage_layers(spec, int(k)), true) +
           cell(ipu_list(spec.pipeline.stages[k].ipus), true) +
           cell(k < kinds.size() ? std::string(schedules::to_string(kinds[k])) : "", true) +
           cell(with_commas(r.stash_depth[k])) +
           cell(r.stash_depth[k] == 0 ? ""
                : offloaded           ? "streaming memory"
                                      : "IPU memory",
                true) +
           "</tr>\n";
  }
  return section(std::string(to_string(MemoryCategory::kStash)), "Stash FIFOs",
                 html::scroll_table(out));
}

// The what-if overrides of the run, under the config's own description, which they may make
// stale.
std::string overrides_note(const RunSpec& spec) {
  if (!spec.document || spec.document->override_labels().empty())
    return "";
  std::string list;
  for (const auto& label : spec.document->override_labels())
    list += (list.empty() ? "" : ", ") + label;
  return "<p class=\"sub\">Run with overrides of the config (the description above is the "
         "file's): " +
         escape(list) + "</p>\n";
}

}  // namespace

std::string html_report(const RunReport& report, const Timeline& timeline) {
  const auto& spec = *report.spec;
  std::string body = "<header><h1>" + escape(spec.model.name) + " \u00b7 " +
                     escape(report.schedule) + " schedule</h1>\n";
  if (!spec.description.empty())
    body += "<p class=\"sub\">" + escape(spec.description) + "</p>\n";
  body += overrides_note(spec);
  body += headline(report) + "</header>\n";
  body += config_section(report);
  body += section("figures", "Figures (the columns of sweep's and compare's CSV)",
                  figures_table(report));
  std::string gantt;
  if (timeline.truncated) {
    gantt += "<p class=\"note\">Long run: " + escape(timeline.truncation_note()) +
             ". The figures and tables cover the whole step.</p>\n";
  }
  const GanttRun run{&report, &timeline, report.schedule};
  const std::string steps = step_chart_html(run, "steps");
  if (!steps.empty()) {
    body += section("pipeline-steps", "Pipeline by step (BSP steps as columns, not to scale)",
                    gantt + steps);
  }
  body += section("pipeline", "Pipeline over time (one step, to scale)",
                  (steps.empty() ? gantt : "") + html::phases_note() +
                      gantt_html({run}, {"gantt", true, true, std::nullopt}));
  const std::string zoomed = zoomed_views_html(run);
  if (!zoomed.empty())
    body +=
        section("pipeline-zoom", "Pipeline zoomed: ramp-up, one main period, ramp-down", zoomed);
  body += section("timing", "Phases", html::phases_note() + phases_table(report));
  body += section("utilisation", "Utilisation (compute busy / phase length)",
                  html::explain("Compute-busy cycles of each IPU over the length of the step or "
                                "phase (utilisation phases, as the chart's bands); copies, syncs "
                                "and host transfers are not busy.") +
                      utilisation_table(report));
  body += html::memory_section(report, timeline);
  body += stash_section(report);
  body += operations_section(report);
  body += numeric_section(report.numeric);
  return html::page("ipusim: " + spec.model.name + " (" + report.schedule + ")", body);
}

}  // namespace ipusim::sim
