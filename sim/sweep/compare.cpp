#include "sim/sweep/compare.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <set>

#include "schedules/build.hpp"
#include "sim/core/config_file.hpp"
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/html/html_report.hpp"
#include "sim/replay/timeline.hpp"
#include "sim/report/report.hpp"
#include "sim/report/run_metrics.hpp"
#include "sim/run/replay_budget.hpp"
#include "sim/sweep/planner.hpp"
#include "sim/sweep/sweep_csv.hpp"

namespace ipusim::sim {
namespace {

// One column of the comparison.
struct CompareRun {
  std::string config;
  std::string schedule;  // as given to --schedules, or empty
  std::string with;      // as given to --with, or empty
  std::string label;
  std::optional<std::string> model;            // the model's name, once the config is read
  std::shared_ptr<const RunSpec> spec;         // once the config is read and valid
  std::unique_ptr<TimelineRecorder> recorder;  // with a page only
  std::optional<RunReport> report;
  std::optional<RunMetrics> metrics;  // with the report
  std::string error;
  std::exception_ptr failure;  // why the run did not simulate
  // With --relayout, the layout the run's schedule needed, as the flags that set it.
  std::string relayout;
};

// "PATH=VALUE;PATH=VALUE" as overrides named "--with TEXT".
std::vector<core::Override> with_overrides(const std::string& text) {
  std::vector<core::Override> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(';', start);
    if (end == std::string::npos)
      end = text.size();
    auto override_ = core::parse_set_argument(text.substr(start, end - start));
    override_.label = "--with " + text;
    out.push_back(std::move(override_));
    start = end + 1;
  }
  return out;
}

// --schedules sets every run's schedule; a --with that sets it too would run another schedule
// under the label --schedules gives.
void refuse_schedule_twice(const CompareRequest& request) {
  if (request.schedules.empty())
    return;
  for (const auto& with : request.withs) {
    for (const auto& override_ : with_overrides(with)) {
      if (core::to_json_pointer(override_.path) == "/pipeline/pipeline_schedule")
        throw core::ConfigError("--with " + with, "",
                                "sets pipeline.pipeline_schedule, which --schedules sets for "
                                "every run: give the schedules in one place, --schedules or a "
                                "--with each");
    }
  }
}

std::vector<CompareRun> plan_runs(const CompareRequest& request) {
  const auto or_none = [](const std::vector<std::string>& given) {
    return given.empty() ? std::vector<std::string>{""} : given;
  };
  std::vector<CompareRun> runs;
  for (const auto& config : request.configs) {
    for (const auto& schedule : or_none(request.schedules)) {
      for (const auto& with : or_none(request.withs)) {
        CompareRun run;
        run.config = config;
        run.schedule = schedule;
        run.with = with;
        runs.push_back(std::move(run));
      }
    }
  }
  return runs;
}

// The what-if options and the run's --with, without its schedule.
std::vector<core::Override> variant_overrides(const CompareRun& run,
                                              const CompareRequest& request) {
  auto overrides = request.base_overrides;
  if (!run.with.empty()) {
    const auto extra = with_overrides(run.with);
    overrides.insert(overrides.end(), extra.begin(), extra.end());
  }
  return overrides;
}

// The layout the run's schedule needs when it refuses its config's (the config as it stands,
// under its own schedule), or empty.
std::vector<int> needed_mapping(const CompareRun& run, const CompareRequest& request) {
  if (run.schedule.empty())
    return {};
  try {
    const auto own = load_run_spec(run.config, variant_overrides(run, request));
    return schedules::relayout_mapping(run.schedule, own.pipeline_shape());
  } catch (const core::ConfigError&) {
    return {};
  }
}

// "--splits a,b,c --set 'pipeline.device_mapping=[0,1,2,3]'": the flags that give a layout.
std::string layout_flags(const PlanCandidate& layout) {
  std::string splits;
  for (const auto& id : layout.splits)
    splits += (splits.empty() ? "" : ",") + id;
  std::vector<int> mapping;
  for (const auto& stage : layout.spec->pipeline.stages)
    mapping.push_back(stage.ipus.front());
  return "--splits " + splits +
         " --set 'pipeline.device_mapping=" + nlohmann::json(mapping).dump() + "'";
}

// --relayout: plan's best split of the layout the schedule needs, on the config's IPUs.
void relay_out(CompareRun& run, const CompareRequest& request) {
  PlanRequest search;
  search.config_path = run.config;
  search.base_overrides = variant_overrides(run, request);
  search.schedules = {run.schedule};
  search.relayout = true;
  search.fastest_when_none_fits = true;
  search.top = 1;
  const auto found = plan(search);
  if (found.ranked.empty())
    throw core::ConfigError(run.config, "", "--relayout: " + found.replay_refusal);
  const auto& best = found.ranked.front();
  run.spec = best.spec;
  run.relayout = layout_flags(best);
}

// "; --relayout runs it on 4 stages, stage k on IPU k mod 4, ...": what --relayout would do
// with a run its schedule refuses for its layout, or empty.
std::string relayout_hint(const std::vector<int>& mapping) {
  if (mapping.empty())
    return "";
  const int ipus = *std::max_element(mapping.begin(), mapping.end()) + 1;
  return "; --relayout runs it on " + std::to_string(mapping.size()) +
         " stages, stage k on IPU k mod " + std::to_string(ipus) + ", split as plan finds best";
}

// Keeps the error being handled as the run's, with `text` as what it says.
void fail_run(CompareRun& run, const std::string& text) {
  run.error = text;
  run.failure = std::current_exception();
}

// Reads and validates the run's config with its overrides; an invalid one is kept as the run's
// error. A schedule that refuses the config's layout runs on the one it needs with --relayout,
// and says so without.
void load_run(CompareRun& run, const CompareRequest& request) {
  auto overrides = variant_overrides(run, request);
  if (!run.schedule.empty()) {
    overrides.push_back(
        {"/pipeline/pipeline_schedule", "\"" + run.schedule + "\"", "--schedules " + run.schedule});
  }
  try {
    run.spec = std::make_shared<const RunSpec>(load_run_spec(run.config, overrides));
  } catch (const core::ConfigError& error) {
    const auto mapping = needed_mapping(run, request);
    if (mapping.empty() || !request.relayout)
      return fail_run(run, error.what() + relayout_hint(mapping));
    try {
      relay_out(run, request);
    } catch (const core::ConfigError& refused) {
      return fail_run(run, refused.what());
    }
  }
  run.model = run.spec->model.name;
}

// Replays a run that loaded, telling `progress` of its tasks replayed.
void simulate_run(CompareRun& run, const CompareRequest& request,
                  const std::function<void(std::int64_t, std::int64_t)>& progress) {
  try {
    SimulateOptions options;
    options.allow_oom = true;
    options.numeric = NumericMode::kOff;
    options.progress = progress;
    if (!request.html_path.empty()) {
      run.recorder = std::make_unique<TimelineRecorder>();
      options.observers.push_back(run.recorder.get());
    }
    run.report = simulate(run.spec, options);
    run.metrics = run_metrics(*run.report);
  } catch (const core::ConfigError& error) {
    run.error = error.what();
    run.failure = std::current_exception();
  } catch (const core::SimulationOutcome& outcome) {
    run.error = outcome.what();
    run.failure = std::current_exception();
  }
}

// Replays every run that loaded, telling the request's progress of the tasks of all of them.
void simulate_runs(std::vector<CompareRun>& runs, const CompareRequest& request) {
  std::vector<std::int64_t> tasks;  // each run's, 0 for one that did not load
  for (const auto& run : runs)
    tasks.push_back(run.spec ? std::int64_t(replay_tasks(*run.spec, false)) : 0);
  const std::int64_t total = std::accumulate(tasks.begin(), tasks.end(), std::int64_t{0});
  std::int64_t before = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (!runs[i].spec)
      continue;
    std::function<void(std::int64_t, std::int64_t)> progress;
    if (request.progress)
      progress = [&](std::int64_t done, std::int64_t) {
        request.progress(std::size_t(before + done), std::size_t(total));
      };
    simulate_run(runs[i], request, progress);
    before += tasks[i];
  }
}

// Labels name only what differs between runs: the model when there are several configs (or
// the file, when two configs hold the same model or no run of a config got far enough to name
// its model), the schedule and the --with text; a lone run is named by its model.
void label_runs(std::vector<CompareRun>& runs, const CompareRequest& request) {
  std::map<std::string, std::string> model_of;  // config -> model name
  for (const auto& run : runs) {
    if (run.model)
      model_of.emplace(run.config, *run.model);
  }
  std::set<std::string> models;
  bool by_file = model_of.size() < request.configs.size();
  for (const auto& [config, model] : model_of)
    by_file = by_file || !models.insert(model).second;
  const bool name_config = request.configs.size() > 1 || runs.size() == 1;
  for (auto& run : runs) {
    std::vector<std::string> parts;
    if (name_config)
      parts.push_back(by_file ? std::filesystem::path(run.config).stem().string()
                              : model_of[run.config]);
    if (!request.schedules.empty())
      parts.push_back(run.schedule);
    if (!run.with.empty())
      parts.push_back(run.with);
    run.label.clear();
    for (const auto& part : parts)
      run.label += (run.label.empty() ? "" : " ") + part;
  }
}

// --- The table ----------------------------------------------------------------------------

std::string megabytes(std::int64_t bytes) {
  return fixed(double(bytes) / 1e6, 2) + " MB";
}

using Row = std::vector<std::string>;

// One table row: the label, then `cell(run)` for each run.
template <typename Cell>
Row table_row(const std::string& label, const std::vector<const CompareRun*>& runs, Cell cell) {
  Row row = {label};
  for (const auto* run : runs)
    row.push_back(cell(*run));
  return row;
}

// Every column of metric_table() (table_columns), in its order, with each run's figure in
// words: a figure added to the table shows here too.
std::vector<Row> metric_rows(const std::vector<const CompareRun*>& ran) {
  const auto trains = [](const CompareRun* r) { return r->report->spec->pipeline.training; };
  std::vector<Row> rows;
  for (const MetricColumn* column : table_columns(std::any_of(ran.begin(), ran.end(), trains))) {
    rows.push_back(table_row(column->heading, ran, [&](const CompareRun& r) {
      return table_text(*column, *r.metrics, trains(&r));
    }));
  }
  return rows;
}

// Where each IPU is, and its peak memory and stash: the per-IPU detail of the metric rows.
std::vector<Row> per_ipu_rows(const std::vector<const CompareRun*>& ran) {
  std::size_t ipus = 0;
  for (const auto* run : ran)
    ipus = std::max(ipus, run->report->replay.ipus.size());
  std::vector<Row> rows;
  // IPUn is logical (device_mapping); this row says where selection_order places each.
  rows.push_back(table_row("Physical IPU of each IPU", ran, [](const CompareRun& r) {
    std::string physical;
    for (const auto& ipu : r.report->replay.ipus)
      physical += (physical.empty() ? "" : ", ") + std::to_string(ipu.physical);
    return physical;
  }));
  for (std::size_t i = 0; i < ipus; ++i) {
    auto ipu_cell = [i](const CompareRun& r, auto field) {
      const auto& stats = r.report->replay.ipus;
      return i < stats.size() ? megabytes(field(stats[i])) : std::string("-");
    };
    rows.push_back(table_row("IPU" + std::to_string(i) + " peak memory", ran, [&](const auto& r) {
      return ipu_cell(r, [](const auto& s) { return s.peak_memory_bytes; });
    }));
    rows.push_back(table_row("IPU" + std::to_string(i) + " peak stash", ran, [&](const auto& r) {
      return ipu_cell(r, [](const auto& s) { return s.peak_stash_bytes; });
    }));
  }
  return rows;
}

// `names` are the runs' names in the table: their labels, or their numbers.
std::string fastest_text(const std::vector<const CompareRun*>& ran,
                         const std::vector<std::string>& names) {
  std::vector<const RunMetrics*> metrics;
  for (const auto* run : ran)
    metrics.push_back(&*run->metrics);
  const auto order = fastest_first(metrics);
  if (order.empty())
    return "fastest: none (no run fits in memory)\n";
  const double best = metrics[order.front()]->throughput;
  auto times = [&](std::size_t other) {
    return fixed(best / metrics[other]->throughput, 2) + "x the throughput of " + names[other];
  };
  std::string out = "fastest: " + names[order.front()];
  if (order.size() == 2)
    out += " (" + times(order[1]) + ")";
  if (order.size() > 2)
    out += " (" + times(order[1]) + ", the next fastest; " + times(order.back()) + ", the slowest)";
  return out + "\n";
}

// The longest label a column of the table is headed by; a figure such as "1,227,062 cycles"
// or "554,952 samples/s" is about as wide.
constexpr std::size_t kLongestColumnLabel = 24;

std::string comparison_text(const std::vector<CompareRun>& runs) {
  std::vector<const CompareRun*> ran;
  std::string invalid;
  for (const auto& run : runs) {
    if (run.report) {
      ran.push_back(&run);
    } else {
      invalid += "invalid: " + run.label + ": " + run.error + "\n";
    }
  }
  std::string out;
  std::vector<std::string> headings;
  if (!ran.empty()) {
    // Labels longer than a figure's column (a --with's overrides) become run numbers, each
    // named in a legend above the table.
    const bool numbered = std::any_of(ran.begin(), ran.end(), [](const CompareRun* r) {
      return r->label.size() > kLongestColumnLabel;
    });
    for (std::size_t i = 0; i < ran.size(); ++i) {
      headings.push_back(numbered ? "run " + std::to_string(i + 1) : ran[i]->label);
      if (numbered)
        out += headings.back() + ": " + ran[i]->label + "\n";
    }
    Row heading = {""};
    heading.insert(heading.end(), headings.begin(), headings.end());
    std::vector<Row> rows = {heading};
    for (auto& row : metric_rows(ran))
      rows.push_back(std::move(row));
    for (auto& row : per_ipu_rows(ran))
      rows.push_back(std::move(row));
    std::vector<bool> right(ran.size() + 1, true);
    right[0] = false;
    out += render_table(rows, right);
  }
  out += invalid;
  for (std::size_t i = 0; i < ran.size(); ++i) {
    if (!ran[i]->relayout.empty())
      out += "relaid out: " + headings[i] + ": " + ran[i]->relayout + "\n";
  }
  if (ran.size() > 1)
    out += fastest_text(ran, headings);
  return out;
}

// --- The files ----------------------------------------------------------------------------

std::string comparison_csv(const std::vector<CompareRun>& runs) {
  std::size_t ipus = 0;
  for (const auto& run : runs)
    ipus = std::max(ipus, run.metrics ? run.metrics->utilisation_per_ipu.size() : 0);
  std::vector<std::string> columns = {"label", "config", "schedule", "with"};
  columns.insert(columns.end(), metric_columns().begin(), metric_columns().end());
  const auto ipu_columns = per_ipu_columns(ipus);
  columns.insert(columns.end(), ipu_columns.begin(), ipu_columns.end());
  columns.push_back("error");
  std::string out = csv_line(columns);
  for (const auto& run : runs) {
    std::vector<std::string> cells = {run.label, run.config, run.schedule, run.with};
    const auto metrics = run.metrics ? metric_cells(*run.metrics)
                                     : std::vector<std::string>(metric_columns().size());
    cells.insert(cells.end(), metrics.begin(), metrics.end());
    const auto per_ipu =
        run.metrics ? per_ipu_cells(*run.metrics, ipus) : std::vector<std::string>(2 * ipus);
    cells.insert(cells.end(), per_ipu.begin(), per_ipu.end());
    cells.push_back(run.error);
    out += csv_line(cells);
  }
  return out;
}

nlohmann::json comparison_json(const std::vector<CompareRun>& runs) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& run : runs) {
    nlohmann::json entry = {{"label", run.label}, {"config", run.config}};
    if (!run.relayout.empty())
      entry["relayout"] = run.relayout;
    if (run.report) {
      entry["report"] = to_json(*run.report);
    } else {
      entry["error"] = run.error;
    }
    out.push_back(std::move(entry));
  }
  return {{"runs", out}};
}

// The runs that simulated, their charts stacked on one time axis.
std::string comparison_html(const std::vector<CompareRun>& runs) {
  std::vector<const RunReport*> reports;
  std::vector<const Timeline*> timelines;
  std::vector<std::string> labels;
  for (const auto& run : runs) {
    if (!run.report)
      continue;
    reports.push_back(&*run.report);
    timelines.push_back(&run.recorder->timeline());
    labels.push_back(run.label);
  }
  return compare_html(reports, timelines, labels);
}

}  // namespace

std::string compare(const CompareRequest& request, core::OutputSet& outputs) {
  for (const auto& config : request.configs)
    core::check_config_readable(config);
  refuse_schedule_twice(request);
  auto runs = plan_runs(request);
  for (auto& run : runs)
    load_run(run, request);
  simulate_runs(runs, request);
  label_runs(runs, request);
  // With nothing to compare, the first failure is the command's error and sets the exit code.
  if (std::none_of(runs.begin(), runs.end(),
                   [](const CompareRun& run) { return run.report.has_value(); }))
    std::rethrow_exception(runs.front().failure);
  if (!request.json_path.empty())
    outputs.write(request.json_path, comparison_json(runs).dump(2) + "\n");
  if (!request.csv_path.empty())
    outputs.write(request.csv_path, comparison_csv(runs));
  if (!request.html_path.empty())
    outputs.write(request.html_path, comparison_html(runs));
  return comparison_text(runs);
}

}  // namespace ipusim::sim
