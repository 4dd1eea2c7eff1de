// `ipusim compare`: several configs, schedules or what-if variants side by side, one column per
// run, and which is fastest.

#include <algorithm>
#include <cmath>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/html/html_report.hpp"
#include "sim/replay/timeline.hpp"
#include "sim/sweep/sweep.hpp"
#include "tools/ipusim/command.hpp"

namespace ipusim::cli {
namespace {

struct CompareArgs {
  std::vector<std::string> configs;
  ConfigArgs what_if;
  std::vector<std::string> schedules;
  std::vector<std::string> withs;
  std::string json_path;
  std::string csv_path;
  std::string html_path;
  bool quiet = false;
};

// One column of the comparison. The spec is held by pointer because the report points to it.
struct CompareRun {
  std::string config;
  std::string schedule;  // as given to --schedules, or empty
  std::string with;      // as given to --with, or empty
  std::string label;
  std::unique_ptr<sim::RunSpec> spec;
  std::unique_ptr<sim::TimelineRecorder> recorder;  // with --html only
  std::optional<sim::RunReport> report;
  std::string error;
  std::exception_ptr failure;  // why the run did not simulate
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

// The runs that simulated, their charts stacked on one time axis.
std::string to_html(const std::vector<CompareRun>& runs) {
  std::vector<const sim::RunReport*> reports;
  std::vector<const sim::Timeline*> timelines;
  std::vector<std::string> labels;
  for (const auto& run : runs) {
    if (!run.report)
      continue;
    reports.push_back(&*run.report);
    timelines.push_back(&run.recorder->timeline());
    labels.push_back(run.label);
  }
  return sim::compare_html(reports, timelines, labels);
}

void simulate_run(CompareRun& run, const CompareArgs& a) {
  auto overrides = a.what_if.overrides();
  if (!run.schedule.empty()) {
    overrides.push_back(
        {"/pipeline/pipeline_schedule", "\"" + run.schedule + "\"", "--schedules " + run.schedule});
  }
  if (!run.with.empty()) {
    const auto extra = with_overrides(run.with);
    overrides.insert(overrides.end(), extra.begin(), extra.end());
  }
  try {
    run.spec = std::make_unique<sim::RunSpec>(sim::load_run_spec(run.config, overrides));
    sim::SimulateOptions options;
    options.allow_oom = true;
    options.numeric = sim::NumericMode::kOff;
    if (!a.html_path.empty()) {
      run.recorder = std::make_unique<sim::TimelineRecorder>();
      options.observers.push_back(run.recorder.get());
    }
    run.report = sim::simulate(*run.spec, options);
  } catch (const core::ConfigError& error) {
    run.error = error.what();
    run.failure = std::current_exception();
  } catch (const core::SimulationOutcome& outcome) {
    run.error = outcome.what();
    run.failure = std::current_exception();
  }
}

// Labels name only what differs between runs: the model (or the file, when two configs hold
// the same model or no run of a config got far enough to name its model), the schedule and the
// --with text.
void label_runs(std::vector<CompareRun>& runs, const CompareArgs& a) {
  std::map<std::string, std::string> model_of;  // config -> model name
  for (const auto& run : runs) {
    if (run.spec)
      model_of.emplace(run.config, run.spec->model.name);
  }
  std::set<std::string> models;
  bool by_file = model_of.size() < a.configs.size();
  for (const auto& [config, model] : model_of)
    by_file = by_file || !models.insert(model).second;
  for (auto& run : runs) {
    run.label = by_file ? std::filesystem::path(run.config).stem().string() : model_of[run.config];
    if (!a.schedules.empty())
      run.label += " " + run.schedule;
    if (!run.with.empty())
      run.label += " " + run.with;
  }
}

std::string megabytes(std::int64_t bytes) {
  return sim::fixed(double(bytes) / 1e6, 2) + " MB";
}

std::string cycles(std::int64_t value) {
  return sim::with_commas(value) + " cycles";
}

using Row = std::vector<std::string>;

// One table row: the label, then `cell(report)` for each run.
template <typename Cell>
Row table_row(const std::string& label, const std::vector<const CompareRun*>& runs, Cell cell) {
  Row row = {label};
  for (const auto* run : runs)
    row.push_back(cell(*run->report));
  return row;
}

double utilisation_mean(const sim::RunReport& r) {
  double sum = 0;
  for (const auto& ipu : r.replay.ipus)
    sum += double(ipu.busy_cycles) / double(std::max<std::int64_t>(r.replay.step_cycles, 1));
  return r.replay.ipus.empty() ? 0.0 : sum / double(r.replay.ipus.size());
}

std::vector<Row> timing_rows(const std::vector<const CompareRun*>& ran) {
  using sim::RunReport;
  const char* phases[] = {"Ramp-up", "Main", "Ramp-down", "Weight update"};
  std::vector<Row> rows;
  rows.push_back(
      table_row("Step", ran, [](const RunReport& r) { return cycles(r.replay.step_cycles); }));
  rows.push_back(table_row("Step time", ran, [](const RunReport& r) {
    return sim::fixed(r.step_seconds() * 1e3, 4) + " ms";
  }));
  rows.push_back(table_row("Throughput", ran, [](const RunReport& r) {
    return sim::with_commas(std::llround(r.throughput())) + " samples/s";
  }));
  rows.push_back(table_row("Utilisation (mean of IPUs)", ran,
                           [](const RunReport& r) { return sim::percent(utilisation_mean(r)); }));
  for (int phase = 0; phase < 4; ++phase) {
    rows.push_back(table_row(phases[phase], ran, [phase](const RunReport& r) {
      return cycles(r.replay.phase_cycles[std::size_t(phase)]);
    }));
  }
  rows.push_back(table_row("Ramp overhead", ran,
                           [](const RunReport& r) { return sim::percent(r.ramp_overhead()); }));
  rows.push_back(table_row("Bubble", ran,
                           [](const RunReport& r) { return sim::percent(r.bubble_fraction()); }));
  return rows;
}

std::vector<Row> memory_rows(const std::vector<const CompareRun*>& ran) {
  std::size_t ipus = 0;
  for (const auto* run : ran)
    ipus = std::max(ipus, run->report->replay.ipus.size());
  std::vector<Row> rows;
  // IPUn is logical (device_mapping); this row says where selection_order places each.
  rows.push_back(table_row("Physical IPU of each IPU", ran, [](const sim::RunReport& r) {
    std::string physical;
    for (const auto& ipu : r.replay.ipus)
      physical += (physical.empty() ? "" : ", ") + std::to_string(ipu.physical);
    return physical;
  }));
  for (std::size_t i = 0; i < ipus; ++i) {
    auto ipu_cell = [i](const sim::RunReport& r, auto field) {
      return i < r.replay.ipus.size() ? megabytes(field(r.replay.ipus[i])) : std::string("-");
    };
    rows.push_back(
        table_row("IPU" + std::to_string(i) + " peak memory", ran, [&](const sim::RunReport& r) {
          return ipu_cell(r, [](const auto& s) { return s.peak_memory_bytes; });
        }));
    rows.push_back(
        table_row("IPU" + std::to_string(i) + " peak stash", ran, [&](const sim::RunReport& r) {
          return ipu_cell(r, [](const auto& s) { return s.peak_stash_bytes; });
        }));
  }
  rows.push_back(table_row("Fits in memory", ran, [](const sim::RunReport& r) {
    return std::string(r.fits_in_memory() ? "yes" : "NO");
  }));
  return rows;
}

// By throughput, since step times of runs with different batch sizes do not compare.
std::string fastest_text(std::vector<const CompareRun*> ran) {
  std::erase_if(ran, [](const CompareRun* run) { return !run->report->fits_in_memory(); });
  if (ran.empty())
    return "fastest: none (no run fits in memory)\n";
  std::stable_sort(ran.begin(), ran.end(), [](const CompareRun* x, const CompareRun* y) {
    return x->report->throughput() > y->report->throughput();
  });
  const double best = ran.front()->report->throughput();
  auto times = [&](const CompareRun* other) {
    return sim::fixed(best / other->report->throughput(), 2) + "x the throughput of " +
           other->label;
  };
  std::string out = "fastest: " + ran.front()->label;
  if (ran.size() == 2)
    out += " (" + times(ran[1]) + ")";
  if (ran.size() > 2)
    out += " (" + times(ran[1]) + ", the next fastest; " + times(ran.back()) + ", the slowest)";
  return out + "\n";
}

std::string render(const std::vector<CompareRun>& runs) {
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
  if (!ran.empty()) {
    std::vector<Row> rows = {table_row("", ran, [](const sim::RunReport&) { return ""; })};
    for (std::size_t i = 0; i < ran.size(); ++i)
      rows[0][i + 1] = ran[i]->label;
    for (auto& row : timing_rows(ran))
      rows.push_back(std::move(row));
    for (auto& row : memory_rows(ran))
      rows.push_back(std::move(row));
    std::vector<bool> right(ran.size() + 1, true);
    right[0] = false;
    out += sim::render_table(rows, right);
  }
  out += invalid;
  if (ran.size() > 1)
    out += fastest_text(ran);
  return out;
}

std::string to_csv(const std::vector<CompareRun>& runs) {
  std::vector<std::string> columns = {"label", "config", "schedule", "with"};
  columns.insert(columns.end(), sim::metric_columns().begin(), sim::metric_columns().end());
  columns.push_back("error");
  std::string out = sim::csv_line(columns);
  for (const auto& run : runs) {
    std::vector<std::string> cells = {run.label, run.config, run.schedule, run.with};
    const auto metrics = run.report ? sim::metric_cells(*run.report)
                                    : std::vector<std::string>(sim::metric_columns().size());
    cells.insert(cells.end(), metrics.begin(), metrics.end());
    cells.push_back(run.error);
    out += sim::csv_line(cells);
  }
  return out;
}

nlohmann::json to_json(const std::vector<CompareRun>& runs) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& run : runs) {
    nlohmann::json entry = {{"label", run.label}, {"config", run.config}};
    if (run.report) {
      entry["report"] = sim::to_json(*run.report);
    } else {
      entry["error"] = run.error;
    }
    out.push_back(std::move(entry));
  }
  return {{"runs", out}};
}

std::vector<CompareRun> plan_runs(const CompareArgs& a) {
  const std::vector<std::string> schedules =
      a.schedules.empty() ? std::vector<std::string>{""} : a.schedules;
  const std::vector<std::string> withs = a.withs.empty() ? std::vector<std::string>{""} : a.withs;
  std::vector<CompareRun> runs;
  for (const auto& config : a.configs) {
    for (const auto& schedule : schedules) {
      for (const auto& with : withs) {
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

}  // namespace

void add_compare_command(CLI::App& app, std::ostream& out) {
  auto a = std::make_shared<CompareArgs>();
  auto* command =
      app.add_subcommand("compare", "Simulate configs, schedules or what-if variants side by side");
  command->add_option("configs", a->configs, "One or more config files")
      ->required()
      ->check(non_empty_path());
  add_config_options(command, a->what_if, false);
  command
      ->add_option("--schedules", a->schedules,
                   "Run each config with each of these schedules (comma separated)")
      ->delimiter(',')
      ->allow_extra_args(false);
  command
      ->add_option("--with", a->withs,
                   "A variant of each config: PATH=VALUE[;PATH=VALUE...]; repeatable, one "
                   "column each")
      ->type_name("PATH=VALUE[;...]")
      ->allow_extra_args(false);
  command->add_option("--json", a->json_path, "Also write every run's report as JSON")
      ->check(non_empty_path());
  command->add_option("--csv", a->csv_path, "Also write one CSV row per run (sweep's columns)")
      ->check(non_empty_path());
  command
      ->add_option("--html", a->html_path,
                   "Also write an HTML page: the runs' pipeline charts on one time axis")
      ->check(non_empty_path());
  command->add_flag("--quiet", a->quiet, "Print only errors");
  command->footer(
      "Example:\n  ipusim compare configs/tf1_mnist_2ipu.json "
      "--schedules grouped,interleaved,sequential,1f1b");
  command->callback([a, &out] {
    core::OutputSet outputs;
    const std::pair<const char*, std::string> given[] = {
        {"--json", a->json_path}, {"--csv", a->csv_path}, {"--html", a->html_path}};
    for (const auto& [option, path] : given) {
      if (!path.empty())
        outputs.add(path, option);
    }
    auto runs = plan_runs(*a);
    for (auto& run : runs)
      simulate_run(run, *a);
    label_runs(runs, *a);
    // With nothing to compare, the first failure is the command's error and sets the exit code.
    if (std::none_of(runs.begin(), runs.end(),
                     [](const CompareRun& run) { return run.report.has_value(); }))
      std::rethrow_exception(runs.front().failure);
    if (!a->json_path.empty())
      outputs.write(a->json_path, to_json(runs).dump(2) + "\n");
    if (!a->csv_path.empty())
      outputs.write(a->csv_path, to_csv(runs));
    if (!a->html_path.empty())
      outputs.write(a->html_path, to_html(runs));
    outputs.commit();
    if (!a->quiet)
      out << render(runs);
  });
}

}  // namespace ipusim::cli
