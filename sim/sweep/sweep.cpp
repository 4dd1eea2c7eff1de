#include "sim/sweep/sweep.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/html/html_report.hpp"
#include "sim/sweep/sweep_summary.hpp"

namespace ipusim::sim {
namespace {

// One CSV holds at most this many runs (a row is about 300 bytes), so that it can be read back
// to sort, resume and merge; larger sweeps are sharded.
constexpr std::size_t kMaxRunsPerFile = 10'000'000;

// --- Running one variant ------------------------------------------------------------------

// A run and its CSV cells, as a worker hands it to the writer.
struct FinishedRun {
  SweepRun run;
  std::vector<std::string> cells;  // as the file holds them (one_line)
  std::string line;                // csv_line(cells)
};

// The cells of `run`'s row: index, values, metrics (empty when it did not simulate), error.
std::vector<std::string> row_cells(const SweepPlan& plan, const SweepRun& run) {
  std::vector<std::string> cells = {std::to_string(run.run)};
  for (const auto& value : plan.values(run.run))
    cells.push_back(one_line(value));
  if (run.metrics) {
    for (auto& cell : metric_cells(*run.metrics))
      cells.push_back(std::move(cell));
    for (auto& cell : per_ipu_cells(*run.metrics, plan.ipu_columns()))
      cells.push_back(std::move(cell));
  } else {
    cells.resize(cells.size() + metric_columns().size() + 2 * plan.ipu_columns());
  }
  cells.push_back(one_line(run.error));
  return cells;
}

// Runs variants of one plan. The base config is read once; a variant applies its values to a
// copy of the merged document, which is several times cheaper than reading the files again
// and keeps the origins, so that errors name the `--vary` that caused them.
class VariantRunner {
 public:
  VariantRunner(const std::string& config_path, const SweepPlan& plan,
                const std::vector<core::Override>& base_overrides)
      : plan_(plan), base_(core::ConfigDocument::load(config_path, base_overrides)) {}

  FinishedRun run(std::size_t run) const {
    FinishedRun out;
    out.run.run = run;
    try {
      const RunSpec spec = build_run_spec(base_.with_overrides(plan_.overrides(run)));
      SimulateOptions options;
      options.allow_oom = true;
      options.numeric = NumericMode::kOff;
      out.run.metrics = run_metrics(simulate(spec, options));
    } catch (const core::ConfigError& error) {
      out.run.error = error.what();
    } catch (const core::SimulationOutcome& outcome) {
      out.run.error = outcome.what();
    }
    out.cells = row_cells(plan_, out.run);
    out.line = csv_line(out.cells);
    return out;
  }

  // The IPUs per replica of run `run`, or nullopt when its config is invalid.
  std::optional<std::size_t> ipus_per_replica(std::size_t run) const {
    try {
      return std::size_t(
          build_run_spec(base_.with_overrides(plan_.overrides(run))).pipeline.ipus_per_replica());
    } catch (const core::ConfigError&) {
      return std::nullopt;
    }
  }

 private:
  const SweepPlan& plan_;
  core::ConfigDocument base_;
};

bool is_prefix_pointer(const std::string& prefix, const std::string& pointer) {
  return pointer == prefix || pointer.rfind(prefix + "/", 0) == 0;
}

// Whether an axis cannot change the IPUs a replica uses: batching, accumulation, numerics and
// data. Any other path (splits, mapping, schedule, hardware, model) may.
bool keeps_ipu_count(const SweepAxis& axis) {
  const std::string pointer = core::to_json_pointer(axis.path);
  for (const char* prefix :
       {"/pipeline/gradient_accumulation_count", "/pipeline/micro_batch_size",
        "/pipeline/repeat_count", "/pipeline/recomputation_mode", "/pipeline/optimizer",
        "/pipeline/seed", "/pipeline/dtype", "/pipeline/gradient_accumulation_dtype",
        "/pipeline/gradient_accumulation_reduction", "/pipeline/offload_weight_update_variables",
        "/pipeline/offload_activations", "/data"}) {
    if (is_prefix_pointer(prefix, pointer))
      return true;
  }
  return false;
}

// The most IPUs per replica of any valid run of the whole plan (every shard agrees), for the
// per-IPU columns: one valid spec per combination of the axes that may change the count.
// The search stops once every combination has a valid run.
std::size_t most_ipus(const VariantRunner& runner, const SweepPlan& plan) {
  std::vector<bool> keeps;
  std::size_t shapes = 1;
  for (const auto& axis : plan.axes()) {
    keeps.push_back(keeps_ipu_count(axis));
    shapes *= keeps.back() ? 1 : axis.values.size();
  }
  std::map<std::vector<std::string>, std::size_t> ipus_by_shape;
  for (std::size_t run = 0; run < plan.size() && ipus_by_shape.size() < shapes; ++run) {
    std::vector<std::string> shape;
    const auto values = plan.values(run);
    for (std::size_t a = 0; a < values.size(); ++a)
      shape.push_back(keeps[a] ? "" : values[a]);
    if (ipus_by_shape.contains(shape))
      continue;
    if (const auto ipus = runner.ipus_per_replica(run))
      ipus_by_shape.emplace(std::move(shape), *ipus);
  }
  std::size_t most = 0;
  for (const auto& [shape, ipus] : ipus_by_shape)
    most = std::max(most, ipus);
  return most;
}

// A misspelt --vary path would make every row an error; it is refused before anything runs.
// Each axis is tried alone with its first value: a path that names nothing is the path's fault
// whatever the other axes hold. Other errors may depend on the combination and become rows.
void check_axis_paths(const std::string& config_path, const SweepPlan& plan,
                      const std::vector<core::Override>& base_overrides) {
  for (const auto& axis : plan.axes()) {
    auto overrides = base_overrides;
    overrides.push_back({axis.path, axis.values.front(), axis.label});
    try {
      load_run_spec(config_path, overrides);
    } catch (const core::UnknownPathError& error) {
      if (is_prefix_pointer(error.pointer(), core::to_json_pointer(axis.path)))
        throw core::ConfigError(axis.label, error.pointer(), error.message());
    } catch (const core::ConfigError&) {
      // Depends on the value, and so may on the other axes: the run's row says it.
    }
  }
}

// --- The file -----------------------------------------------------------------------------

// Reads the rows of a sweep file by its header's names: each axis's value, the figures and the
// error text.
class RowReader {
 public:
  RowReader(const SweepTable& table, const SweepPlan& plan, const std::string& path)
      : metrics_(table.columns, path), error_at_(*table.column("error")) {
    for (const auto& axis : plan.axes())
      value_at_.push_back(*table.column(one_line(axis.path)));
  }

  // The row's value of each axis, as csv_line wrote it.
  std::vector<std::string> values(const std::vector<std::string>& row) const {
    std::vector<std::string> out;
    for (const std::size_t at : value_at_)
      out.push_back(row[at]);
    return out;
  }

  std::size_t ipus() const { return metrics_.ipus(); }

  // Whether a row's value cells are `values`, as csv_line wrote them.
  bool same_values(const std::vector<std::string>& values,
                   const std::vector<std::string>& row) const {
    for (std::size_t a = 0; a < values.size(); ++a) {
      if (one_line(values[a]) != row[value_at_[a]])
        return false;
    }
    return true;
  }

  // The run a row holds, typed; `line` is its line in the file.
  SweepRun typed(const std::vector<std::string>& row, std::size_t run, std::size_t line) const {
    SweepRun out{run, std::nullopt, row[error_at_]};
    if (out.error.empty())
      out.metrics = metrics_.read(row, line);
    return out;
  }

 private:
  MetricsReader metrics_;
  std::vector<std::size_t> value_at_;  // by axis
  std::size_t error_at_;
};

// Throws unless `row` can be run `run` of `plan`.
void check_row(const std::vector<std::string>& row, std::size_t run, const SweepPlan& plan,
               const RowReader& reader, const std::string& path) {
  const std::string advice = "; write to another file or delete it";
  if (run >= plan.size()) {
    throw core::ConfigError(path, "",
                            "run " + std::to_string(run) + " is beyond this sweep's " +
                                std::to_string(plan.size()) + " runs" + advice);
  }
  if (!reader.same_values(plan.values(run), row)) {
    throw core::ConfigError(path, "",
                            "run " + std::to_string(run) +
                                " has other values than this sweep's run " + std::to_string(run) +
                                " (" + plan.key(run) + ")" + advice);
  }
}

// The runs `file` already holds, typed, after checking that it is a file of this sweep; the
// first of two rows of one run is the one kept.
std::map<std::size_t, SweepRun> done_runs(const SweepFile& file, const SweepPlan& plan,
                                          const std::string& path) {
  std::map<std::size_t, SweepRun> done;
  if (file.table.columns.empty())
    return done;
  if (file.table.columns != plan.columns()) {
    throw core::ConfigError(path, "",
                            "the file holds another sweep (its columns differ from this sweep's); "
                            "write to another file or delete it");
  }
  const RowReader reader(file.table, plan, path);
  for (std::size_t r = 0; r < file.table.rows.size(); ++r) {
    const auto& row = file.table.rows[r];
    const std::size_t run = run_index(row);
    check_row(row, run, plan, reader, path);
    if (!done.contains(run))
      done.emplace(run, reader.typed(row, run, r + 2));
  }
  return done;
}

// Drops a partial last line and writes the header into an empty file.
void prepare_file(core::AppendFile& out, const SweepFile& file, const SweepPlan& plan) {
  out.truncate(file.complete_bytes);
  if (file.table.columns.empty())
    out.append(csv_line(plan.columns()));
}

// Checked before the file is opened, so that a refused sweep leaves nothing behind.
void check_runs_per_file(const std::string& csv_path, const SweepPlan& plan,
                         const SweepShard& shard) {
  std::size_t runs = 0;
  for (std::size_t run = 0; run < plan.size(); ++run)
    runs += shard.contains(run) ? 1 : 0;
  if (runs <= kMaxRunsPerFile)
    return;
  throw core::ConfigError(csv_path, "",
                          "one sweep file holds at most " +
                              with_commas(std::int64_t(kMaxRunsPerFile)) + " runs, and this " +
                              "one would get " + with_commas(std::int64_t(runs)) +
                              "; split the sweep with --shard i/n and join the files with merge");
}

// --- Running many variants ----------------------------------------------------------------

// How often the writer collects finished rows. Waking it for every row costs more than a run
// of a small config on a machine whose cores are all busy with workers.
constexpr auto kWriteInterval = std::chrono::milliseconds(10);

// Simulates runs on worker threads and hands them to one writer, the calling thread, which
// appends each row to the file as it collects it. The first failure of a worker stops the
// others and is thrown again to the caller.
class RunPool {
 public:
  RunPool(const VariantRunner& runner, const std::vector<std::size_t>& runs)
      : runner_(runner), runs_(runs) {}

  // Returns the finished runs in the order they were written.
  std::vector<FinishedRun> run(int jobs, core::AppendFile& file,
                               const std::function<void(const SweepRun&, std::size_t)>& on_row) {
    workers_ = int(std::min<std::size_t>(std::size_t(std::max(jobs, 1)), runs_.size()));
    std::vector<std::thread> threads;
    for (int t = 0; t < workers_; ++t)
      threads.emplace_back([this] { work(); });
    std::vector<FinishedRun> written;
    try {
      write(file, on_row, written);
    } catch (...) {
      stop_ = true;
      for (auto& thread : threads)
        thread.join();
      throw;
    }
    for (auto& thread : threads)
      thread.join();
    if (failure_)
      std::rethrow_exception(failure_);
    return written;
  }

 private:
  void work() {
    while (!stop_) {
      const std::size_t i = next_++;
      if (i >= runs_.size())
        break;
      try {
        FinishedRun done = runner_.run(runs_[i]);
        const std::lock_guard lock(mutex_);
        finished_runs_.push_back(std::move(done));
      } catch (...) {
        const std::lock_guard lock(mutex_);
        failure_ = failure_ ? failure_ : std::current_exception();
        stop_ = true;
      }
    }
    const std::lock_guard lock(mutex_);
    ++finished_workers_;
    ready_.notify_one();
  }

  void write(core::AppendFile& file,
             const std::function<void(const SweepRun&, std::size_t)>& on_row,
             std::vector<FinishedRun>& written) {
    while (true) {
      std::unique_lock lock(mutex_);
      ready_.wait_for(lock, kWriteInterval, [&] { return finished_workers_ == workers_; });
      std::deque<FinishedRun> batch;
      batch.swap(finished_runs_);
      const bool last = finished_workers_ == workers_;
      lock.unlock();
      for (auto& done : batch) {
        file.append(done.line);
        written.push_back(std::move(done));
        on_row(written.back().run, written.size());
      }
      if (last)
        break;
    }
  }

  const VariantRunner& runner_;
  const std::vector<std::size_t>& runs_;
  int workers_ = 0;
  std::atomic<std::size_t> next_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<FinishedRun> finished_runs_;
  std::exception_ptr failure_;
  int finished_workers_ = 0;
};

// The file's rows and the runs they hold once the sweep is done, sorted by run index: those it
// held before and those just written.
void gather_rows(const SweepFile& existing, std::map<std::size_t, SweepRun> done,
                 std::vector<FinishedRun> written, SweepSummary& summary) {
  SweepTable table = existing.table;
  for (auto& finished : written) {
    table.rows.push_back(std::move(finished.cells));
    done.emplace(finished.run.run, std::move(finished.run));
  }
  summary.table = sorted_by_run(table);
  for (auto& [run, typed] : done)
    summary.rows.push_back(std::move(typed));
}

// A varied value as the page places it: a number when the text is a JSON one ("8", "0.5").
SweepPlotValue plot_value(const std::string& text) {
  const auto json = nlohmann::json::parse(text, nullptr, false);
  return {text, json.is_number() ? std::optional<double>(json.get<double>()) : std::nullopt};
}

// The page's runs are the file's rows, read as a resumed sweep reads them, so that the page is
// the same whether or not the sweep was resumed.
SweepPlotTable plot_table(const SweepTable& table, const SweepPlan& plan, const std::string& path) {
  SweepPlotTable plot;
  for (const auto& axis : plan.axes())
    plot.varied.push_back(one_line(axis.path));
  const RowReader reader(table, plan, path);
  plot.ipus = reader.ipus();
  for (std::size_t r = 0; r < table.rows.size(); ++r) {
    const auto& row = table.rows[r];
    SweepPlotRun run;
    for (const auto& text : reader.values(row))
      run.values.push_back(plot_value(text));
    run.metrics = reader.typed(row, run_index(row), r + 2).metrics;
    plot.runs.push_back(std::move(run));
  }
  return plot;
}

// The memory per IPU every run has, or 0 when an axis varies the hardware.
std::int64_t common_capacity(const SweepRequest& request, const SweepPlan& plan) {
  for (const auto& axis : plan.axes()) {
    if (axis.path.rfind("hardware", 0) == 0)
      return 0;
  }
  return load_run_spec(request.config_path, request.base_overrides).hardware.memory_per_ipu_bytes;
}

}  // namespace

std::string sweep_json_line(const SweepPlan& plan, const SweepRun& run) {
  nlohmann::ordered_json line = {{"run", run.run}};
  const auto values = plan.values(run.run);
  for (std::size_t a = 0; a < values.size(); ++a) {
    auto value = nlohmann::ordered_json::parse(values[a], nullptr, false);
    line[plan.axes()[a].path] = value.is_discarded() ? nlohmann::ordered_json(values[a]) : value;
  }
  if (run.metrics)
    line.update(metrics_json(*run.metrics));
  line["error"] =
      run.error.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(run.error);
  return line.dump() + "\n";
}

SweepSummary run_sweep(const std::string& config_path, const SweepPlan& axes_plan,
                       const std::string& csv_path, const SweepOptions& options,
                       core::OutputSet& outputs) {
  SweepPlan plan = axes_plan;
  const VariantRunner runner(config_path, plan, options.base_overrides);
  check_axis_paths(config_path, plan, options.base_overrides);
  check_runs_per_file(csv_path, plan, options.shard);
  plan.set_ipu_columns(most_ipus(runner, plan));
  core::AppendFile& file = outputs.open_append(csv_path, sweep_file_busy_text());
  SweepFile existing = read_sweep_csv(csv_path);
  auto done = done_runs(existing, plan, csv_path);
  SweepSummary summary;
  std::vector<std::size_t> pending;
  for (std::size_t run = 0; run < plan.size(); ++run) {
    if (!options.shard.contains(run))
      continue;
    ++summary.runs;
    if (done.contains(run)) {
      ++summary.skipped;
    } else {
      pending.push_back(run);
    }
  }
  prepare_file(file, existing, plan);
  if (existing.table.columns.empty())
    existing.table.columns = plan.columns();
  auto progress = [&](std::size_t written) {
    summary.written = written;
    if (options.progress)
      options.progress(summary.skipped + written, summary.runs);
  };
  if (options.on_run) {
    for (const auto& [run, typed] : done) {
      if (options.shard.contains(run))
        options.on_run(typed);
    }
  }
  progress(0);
  auto written =
      RunPool(runner, pending).run(options.jobs, file, [&](const SweepRun& run, std::size_t count) {
        if (options.on_run)
          options.on_run(run);
        progress(count);
      });
  gather_rows(existing, std::move(done), std::move(written), summary);
  outputs.write(csv_path, summary.table.to_csv());
  return summary;
}

SweepOutcome sweep(const SweepRequest& request, core::OutputSet& outputs) {
  std::vector<SweepAxis> axes;
  for (const auto& vary : request.varies)
    axes.push_back(parse_vary_argument(vary));
  const SweepPlan plan(std::move(axes));
  SweepOptions options;
  options.base_overrides = request.base_overrides;
  options.jobs = request.jobs;
  options.shard = parse_shard(request.shard);
  options.progress = request.progress;
  if (request.on_json_line)
    options.on_run = [&](const SweepRun& run) { request.on_json_line(sweep_json_line(plan, run)); };
  // Without -o the CSV is a private scratch file: a refusal names the options, not its path.
  if (request.csv_scratch)
    check_runs_per_file("--vary", plan, options.shard);
  const auto summary = run_sweep(request.config_path, plan, request.csv_path, options, outputs);
  if (!request.html_path.empty()) {
    auto plot = plot_table(summary.table, plan, request.csv_path);
    plot.capacity_bytes = common_capacity(request, plan);
    outputs.write(request.html_path, sweep_html(plot));
  }
  return {summary_text(request, plan, summary), none_valid(request, summary)};
}

}  // namespace ipusim::sim
