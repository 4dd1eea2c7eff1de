#include "sim/sweep/sweep.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/core/json_text.hpp"
#include "sim/core/output_file.hpp"

namespace ipusim::sim {
namespace {

using nlohmann::json;

// Far beyond what one machine simulates in a day, and small enough that the product of the
// axes cannot overflow on the way.
constexpr std::size_t kMaxRuns = 100'000'000;
// One CSV holds at most this many runs (a row is about 300 bytes), so that it stays under
// kMaxSweepFileBytes and can be read back to sort, resume and merge; larger sweeps are sharded.
constexpr std::size_t kMaxRunsPerFile = 10'000'000;
constexpr std::int64_t kMaxSweepFileBytes = std::int64_t{8} << 30;

// --- Parsing the command-line forms -------------------------------------------------------

// Splits at commas outside quotes, brackets and braces.
std::vector<std::string> split_top_level(const std::string& text) {
  std::vector<std::string> out;
  std::string current;
  int depth = 0;
  bool quoted = false;
  bool escaped = false;
  for (char c : text) {
    if (quoted) {
      quoted = escaped || c != '"';
      escaped = !escaped && c == '\\';
    } else if (c == '"') {
      quoted = true;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (c == ',' && depth == 0) {
      out.push_back(current);
      current.clear();
      continue;
    }
    current += c;
  }
  out.push_back(current);
  return out;
}

// --- CSV ----------------------------------------------------------------------------------

std::string one_line(std::string cell) {
  std::replace(cell.begin(), cell.end(), '\n', ' ');
  std::replace(cell.begin(), cell.end(), '\r', ' ');
  return cell;
}

std::string csv_cell(const std::string& cell) {
  if (cell.find_first_of(",\"") == std::string::npos)
    return cell;
  std::string out = "\"";
  for (char c : cell)
    out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::vector<std::string> parse_csv_line(const std::string& line, const std::string& path,
                                        std::size_t line_number) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      cells.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  if (quoted) {
    throw core::ConfigError(path, "",
                            "line " + std::to_string(line_number) + ": a quote is not closed");
  }
  return cells;
}

std::optional<std::size_t> parse_index(const std::string& text) {
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::size_t(std::stoull(text));
}

// --- Metrics ------------------------------------------------------------------------------

std::string integer(std::int64_t value) {
  return std::to_string(value);
}

// --- Running one variant ------------------------------------------------------------------

// Runs variants of one plan. The base config is read once; a variant applies its values to a
// copy of the merged document, which is several times cheaper than reading the files again
// and keeps the origins, so that errors name the `--vary` that caused them.
class VariantRunner {
 public:
  VariantRunner(const std::string& config_path, const SweepPlan& plan,
                const std::vector<core::Override>& base_overrides)
      : plan_(plan), base_(core::ConfigDocument::load(config_path, base_overrides)) {}

  std::vector<std::string> row(std::size_t run) const {
    std::vector<std::string> cells = {std::to_string(run)};
    for (const auto& value : plan_.values(run))
      cells.push_back(value);
    try {
      const RunSpec spec = build(run);
      SimulateOptions options;
      options.allow_oom = true;
      options.numeric = NumericMode::kOff;
      const auto metrics = metric_cells(simulate(spec, options));
      cells.insert(cells.end(), metrics.begin(), metrics.end());
      cells.emplace_back();
    } catch (const core::ConfigError& error) {
      return error_row(std::move(cells), error.what());
    } catch (const core::SimulationOutcome& outcome) {
      return error_row(std::move(cells), outcome.what());
    }
    return cells;
  }

 private:
  RunSpec build(std::size_t run) const {
    return build_run_spec(base_.with_overrides(plan_.overrides(run)));
  }

  static std::vector<std::string> error_row(std::vector<std::string> cells,
                                            const std::string& error) {
    cells.resize(cells.size() + metric_columns().size());
    cells.push_back(error);
    return cells;
  }

  const SweepPlan& plan_;
  core::ConfigDocument base_;
};

bool is_prefix_pointer(const std::string& prefix, const std::string& pointer) {
  return pointer == prefix || pointer.rfind(prefix + "/", 0) == 0;
}

// A misspelt --vary path would make every row an error; it is refused before anything runs.
// Each axis is tried alone with its first value: an unknown key on its path is the path's fault
// whatever the other axes hold. Other errors may depend on the combination and become rows.
void check_axis_paths(const std::string& config_path, const SweepPlan& plan,
                      const std::vector<core::Override>& base_overrides) {
  for (const auto& axis : plan.axes()) {
    auto overrides = base_overrides;
    overrides.push_back({axis.path, axis.values.front(), axis.label});
    try {
      load_run_spec(config_path, overrides);
    } catch (const core::ConfigError& error) {
      const bool path_error = error.message().rfind("unknown key", 0) == 0 ||
                              error.message().find("is not an index") != std::string::npos;
      if (path_error && is_prefix_pointer(error.pointer(), core::to_json_pointer(axis.path)))
        throw core::ConfigError(axis.label, error.pointer(), error.message());
    }
  }
}

// --- Writing ------------------------------------------------------------------------------

// Rows of `table` by run index, the first of duplicates kept.
std::map<std::size_t, std::vector<std::string>> rows_by_run(const SweepTable& table) {
  std::map<std::size_t, std::vector<std::string>> out;
  for (const auto& row : table.rows)
    out.emplace(run_index(row), row);
  return out;
}

SweepTable sorted(const SweepTable& table) {
  SweepTable out{table.columns, {}};
  for (auto& [run, row] : rows_by_run(table))
    out.rows.push_back(std::move(row));
  return out;
}

// Whether a row's value cells are `values`, as csv_line wrote them.
bool same_values(const std::vector<std::string>& values, const std::vector<std::string>& row) {
  for (std::size_t a = 0; a < values.size(); ++a) {
    if (one_line(values[a]) != row[a + 1])
      return false;
  }
  return true;
}

// The runs `file` already holds, after checking that it is a file of this sweep.
std::vector<bool> done_runs(const SweepFile& file, const SweepPlan& plan, const std::string& path) {
  std::vector<bool> done(plan.size(), false);
  if (file.table.columns.empty())
    return done;
  if (file.table.columns != plan.columns()) {
    throw core::ConfigError(path, "",
                            "the file holds another sweep (its columns differ from this sweep's); "
                            "write to another file or delete it");
  }
  for (const auto& row : file.table.rows) {
    const std::size_t run = run_index(row);
    const std::string advice = "; write to another file or delete it";
    if (run >= plan.size()) {
      throw core::ConfigError(path, "",
                              "run " + std::to_string(run) + " is beyond this sweep's " +
                                  std::to_string(plan.size()) + " runs" + advice);
    }
    if (!same_values(plan.values(run), row)) {
      throw core::ConfigError(path, "",
                              "run " + std::to_string(run) +
                                  " has other values than this sweep's run " + std::to_string(run) +
                                  " (" + plan.key(run) + ")" + advice);
    }
    done[run] = true;
  }
  return done;
}

// Drops a partial last line and writes the header into an empty file.
void prepare_file(core::AppendFile& out, const SweepFile& file, const SweepPlan& plan) {
  out.truncate(file.complete_bytes);
  if (file.table.columns.empty())
    out.append(csv_line(plan.columns()));
}

// Two sweeps appending to one file would each rewrite it sorted at the end without the other's
// rows.
std::string busy_text() {
  return "another ipusim sweep is writing this file; wait for it to finish or write to another "
         "file";
}

// How often the writer collects finished rows. Waking it for every row costs more than a run
// of a small config on a machine whose cores are all busy with workers.
constexpr auto kWriteInterval = std::chrono::milliseconds(10);

// Simulates `runs` on `jobs` threads; the calling thread is the only writer.
void run_pool(const VariantRunner& runner, const std::vector<std::size_t>& runs, int jobs,
              core::AppendFile& file, const std::function<void(std::size_t)>& on_row) {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<std::string> lines;
  std::exception_ptr failure;
  int finished = 0;
  const int workers = int(std::min<std::size_t>(std::size_t(std::max(jobs, 1)), runs.size()));
  auto work = [&] {
    while (!stop) {
      const std::size_t i = next++;
      if (i >= runs.size())
        break;
      try {
        std::string line = csv_line(runner.row(runs[i]));
        const std::lock_guard lock(mutex);
        lines.push_back(std::move(line));
      } catch (...) {
        const std::lock_guard lock(mutex);
        failure = failure ? failure : std::current_exception();
        stop = true;
      }
    }
    const std::lock_guard lock(mutex);
    ++finished;
    ready.notify_one();
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < workers; ++t)
    threads.emplace_back(work);
  try {
    std::size_t written = 0;
    while (true) {
      std::unique_lock lock(mutex);
      ready.wait_for(lock, kWriteInterval, [&] { return finished == workers; });
      std::deque<std::string> batch;
      batch.swap(lines);
      const bool last = finished == workers;
      lock.unlock();
      for (const auto& line : batch) {
        file.append(line);
        on_row(++written);
      }
      if (last)
        break;
    }
  } catch (...) {
    stop = true;
    for (auto& thread : threads)
      thread.join();
    throw;
  }
  for (auto& thread : threads)
    thread.join();
  if (failure)
    std::rethrow_exception(failure);
}

}  // namespace

SweepAxis parse_vary_argument(const std::string& argument) {
  // Long value lists are cut in messages; the path and the first values say which --vary it is.
  const std::string label =
      "--vary " + (argument.size() > 60 ? argument.substr(0, 57) + "..." : argument);
  const auto equals = argument.find('=');
  if (equals == std::string::npos || equals == 0) {
    throw core::ConfigError(label, "",
                            "expected PATH=V1,V2,..., such as "
                            "pipeline.gradient_accumulation_count=8,16,32");
  }
  SweepAxis axis{argument.substr(0, equals), split_top_level(argument.substr(equals + 1)), label};
  for (const auto& value : axis.values) {
    if (value.empty())
      throw core::ConfigError(label, "", "a value is empty (two commas in a row, or none given)");
  }
  return axis;
}

SweepShard parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  const auto index = parse_index(text.substr(0, slash));
  const auto count =
      slash == std::string::npos ? std::nullopt : parse_index(text.substr(slash + 1));
  if (!index || !count || *index < 1 || *index > *count || *count > 1000000) {
    throw core::ConfigError("--shard " + text, "",
                            "expected I/N with 1 <= I <= N, such as 2/8 for the second of 8 "
                            "slices");
  }
  return {int(*index), int(*count)};
}

SweepPlan::SweepPlan(std::vector<SweepAxis> axes) : axes_(std::move(axes)) {
  for (std::size_t a = 0; a < axes_.size(); ++a) {
    IPUSIM_CHECK(!axes_[a].values.empty());
    for (std::size_t b = 0; b < a; ++b) {
      if (core::to_json_pointer(axes_[a].path) == core::to_json_pointer(axes_[b].path)) {
        throw core::ConfigError(axes_[a].label, "",
                                "'" + axes_[a].path + "' is already varied by " + axes_[b].label);
      }
    }
    size_ *= axes_[a].values.size();
    if (size_ > kMaxRuns) {
      throw core::ConfigError(axes_[a].label, "",
                              "the sweep would have more than " +
                                  with_commas(std::int64_t(kMaxRuns)) +
                                  " runs; vary fewer values or split it into several sweeps");
    }
  }
}

std::vector<std::size_t> SweepPlan::indices(std::size_t run) const {
  IPUSIM_CHECK(run < size_);
  std::vector<std::size_t> out(axes_.size());
  for (std::size_t a = axes_.size(); a-- > 0;) {
    out[a] = run % axes_[a].values.size();
    run /= axes_[a].values.size();
  }
  return out;
}

std::vector<std::string> SweepPlan::values(std::size_t run) const {
  const auto chosen = indices(run);
  std::vector<std::string> out;
  for (std::size_t a = 0; a < axes_.size(); ++a)
    out.push_back(axes_[a].values[chosen[a]]);
  return out;
}

std::vector<core::Override> SweepPlan::overrides(std::size_t run) const {
  const auto chosen = values(run);
  std::vector<core::Override> out;
  for (std::size_t a = 0; a < axes_.size(); ++a)
    out.push_back({axes_[a].path, chosen[a], "--vary " + axes_[a].path + "=" + chosen[a]});
  return out;
}

std::string SweepPlan::key(std::size_t run) const {
  const auto chosen = values(run);
  std::string out;
  for (std::size_t a = 0; a < axes_.size(); ++a)
    out += (a ? " " : "") + axes_[a].path + "=" + chosen[a];
  return out;
}

std::vector<std::string> SweepPlan::columns() const {
  std::vector<std::string> out = {"run"};
  for (const auto& axis : axes_)
    out.push_back(one_line(axis.path));
  out.insert(out.end(), metric_columns().begin(), metric_columns().end());
  out.push_back("error");
  return out;
}

const std::vector<std::string>& metric_columns() {
  static const std::vector<std::string> columns = {
      "step_cycles",          "step_seconds",    "throughput_samples_per_second",
      "ramp_up_cycles",       "main_cycles",     "ramp_down_cycles",
      "weight_update_cycles", "ramp_overhead",   "bubble_fraction",
      "utilisation_mean",     "utilisation_min", "peak_memory_bytes_max",
      "peak_stash_bytes_max", "fits_in_memory"};
  return columns;
}

std::vector<std::string> metric_cells(const RunReport& report) {
  const auto& replay = report.replay;
  double utilisation_sum = 0;
  double utilisation_min = replay.ipus.empty() ? 0.0 : 1.0;
  std::int64_t peak_memory = 0;
  std::int64_t peak_stash = 0;
  for (const auto& ipu : replay.ipus) {
    const double utilisation =
        replay.step_cycles > 0 ? double(ipu.busy_cycles) / double(replay.step_cycles) : 0.0;
    utilisation_sum += utilisation;
    utilisation_min = std::min(utilisation_min, utilisation);
    peak_memory = std::max(peak_memory, ipu.peak_memory_bytes);
    peak_stash = std::max(peak_stash, ipu.peak_stash_bytes);
  }
  const double utilisation_mean =
      replay.ipus.empty() ? 0.0 : utilisation_sum / double(replay.ipus.size());
  return {integer(replay.step_cycles),
          fixed(report.step_seconds(), 12),
          fixed(report.throughput(), 3),
          integer(replay.phase_cycles[kRampUp]),
          integer(replay.phase_cycles[kMain]),
          integer(replay.phase_cycles[kRampDown]),
          integer(replay.phase_cycles[kWeightUpdate]),
          fixed(report.ramp_overhead(), 6),
          fixed(report.bubble_fraction(), 6),
          fixed(utilisation_mean, 6),
          fixed(utilisation_min, 6),
          integer(peak_memory),
          integer(peak_stash),
          report.fits_in_memory() ? "true" : "false"};
}

std::optional<std::size_t> SweepTable::column(const std::string& name) const {
  const auto found = std::find(columns.begin(), columns.end(), name);
  if (found == columns.end())
    return std::nullopt;
  return std::size_t(found - columns.begin());
}

std::string SweepTable::to_csv() const {
  std::string out = csv_line(columns);
  for (const auto& row : rows)
    out += csv_line(row);
  return out;
}

std::string csv_line(const std::vector<std::string>& cells) {
  std::string out;
  for (std::size_t i = 0; i < cells.size(); ++i)
    out += (i ? "," : "") + csv_cell(one_line(cells[i]));
  return out + "\n";
}

SweepFile read_sweep_csv(const std::string& path) {
  SweepFile file;
  std::string text;
  if (!std::filesystem::exists(path))
    return file;
  if (const auto problem = core::read_regular_file(path, &text, kMaxSweepFileBytes))
    throw core::ConfigError(path, "", "cannot read the sweep file: " + *problem);
  std::size_t start = 0;
  std::size_t line_number = 0;
  for (std::size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    ++line_number;
    auto cells = parse_csv_line(text.substr(start, end - start), path, line_number);
    if (line_number == 1) {
      file.table.columns = std::move(cells);
      continue;
    }
    if (cells.size() != file.table.columns.size() || !parse_index(cells[0])) {
      throw core::ConfigError(path, "",
                              "line " + std::to_string(line_number) + " is not a sweep row (" +
                                  std::to_string(cells.size()) + " cells for " +
                                  std::to_string(file.table.columns.size()) + " columns)");
    }
    file.table.rows.push_back(std::move(cells));
  }
  file.complete_bytes = start;
  return file;
}

std::size_t run_index(const std::vector<std::string>& row) {
  const auto index = row.empty() ? std::nullopt : parse_index(row[0]);
  IPUSIM_CHECK(index.has_value());
  return *index;
}

namespace {

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

}  // namespace

SweepSummary run_sweep(const std::string& config_path, const SweepPlan& plan,
                       const std::string& csv_path, const SweepOptions& options,
                       core::OutputSet& outputs) {
  const VariantRunner runner(config_path, plan, options.base_overrides);
  check_axis_paths(config_path, plan, options.base_overrides);
  check_runs_per_file(csv_path, plan, options.shard);
  core::AppendFile& file = outputs.open_append(csv_path, busy_text());
  const SweepFile existing = read_sweep_csv(csv_path);
  const auto done = done_runs(existing, plan, csv_path);
  SweepSummary summary;
  std::vector<std::size_t> pending;
  for (std::size_t run = 0; run < plan.size(); ++run) {
    if (!options.shard.contains(run))
      continue;
    ++summary.runs;
    if (done[run]) {
      ++summary.skipped;
    } else {
      pending.push_back(run);
    }
  }
  prepare_file(file, existing, plan);
  auto progress = [&](std::size_t written) {
    summary.written = written;
    if (options.progress)
      options.progress(summary.skipped + written, summary.runs);
  };
  progress(0);
  run_pool(runner, pending, options.jobs, file, progress);
  summary.table = sorted(read_sweep_csv(csv_path).table);
  outputs.write(csv_path, summary.table.to_csv());
  return summary;
}

MergedSweep merge_sweep_csvs(const std::vector<std::string>& paths) {
  MergedSweep merged;
  std::map<std::size_t, std::vector<std::string>> rows;
  std::map<std::size_t, std::string> source;
  std::string first;
  for (const auto& path : paths) {
    if (!std::filesystem::exists(path))
      throw core::ConfigError(path, "", "cannot open the sweep file");
    const auto table = read_sweep_csv(path).table;
    if (table.columns.empty())
      continue;
    if (first.empty()) {
      first = path;
      merged.table.columns = table.columns;
    } else if (table.columns != merged.table.columns) {
      throw core::ConfigError(path, "", "its columns differ from those of " + first);
    }
    for (const auto& row : table.rows) {
      const auto [at, inserted] = rows.emplace(run_index(row), row);
      if (!inserted && at->second != row) {
        throw core::ConfigError(
            path, "", "run " + row[0] + " differs from run " + row[0] + " in " + source[at->first]);
      }
      source.emplace(at->first, path);
    }
  }
  std::size_t expected = 0;
  for (auto& [run, row] : rows) {
    for (; expected < run; ++expected)
      merged.missing.push_back(expected);
    expected = run + 1;
    merged.table.rows.push_back(std::move(row));
  }
  return merged;
}

}  // namespace ipusim::sim
