#pragma once
// Parameter sweeps: the cartesian product of `--vary PATH=v1,v2,...` over one config, each
// variant simulated without numerics, one CSV row per run.
//
// The CSV is the sweep's only state, locked (flock) against a second sweep while one runs. Rows
// are appended, one write() of a whole line each, as runs complete (collected every 10 ms, in
// completion order); a rerun into the same file reads it, drops a trailing partial line left by
// a kill and runs only what is missing. When every run asked for is in the file it is rewritten
// sorted by run index (temporary file + rename), so a finished sweep is byte-identical from one
// run to the next and `merge` of its shards equals the unsharded file.
//
// May include sim/core, sim/report (run metrics) and the room's plan and CSV headers; its .cpp
// also sim/html, for the page plotting a sweep.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/config_file.hpp"
#include "sim/core/error.hpp"
#include "sim/core/output_file.hpp"
#include "sim/report/run_metrics.hpp"
#include "sim/sweep/plan.hpp"
#include "sim/sweep/sweep_csv.hpp"

namespace ipusim::sim {

// One run of a sweep, typed: its figures, or why it did not simulate.
struct SweepRun {
  std::size_t run = 0;                // index in the plan
  std::optional<RunMetrics> metrics;  // absent when the run did not simulate
  std::string error;                  // why not (its config is invalid), or empty
};

// How run_sweep runs: the overrides every run shares, the threads, the slice, and a progress
// callback for the command line's bar.
struct SweepOptions {
  std::vector<core::Override> base_overrides;  // what-if options applied to every run
  int jobs = 1;                                // worker threads
  SweepShard shard;
  // Called by the writer after each row and once before the first: (rows done, runs in shard).
  std::function<void(std::size_t, std::size_t)> progress;
  // Called with each run of the shard: first those already in the file, by run index, then
  // each new one as its row is written.
  std::function<void(const SweepRun&)> on_run;
};

// What a sweep did, for the command's summary, and the finished file's contents.
struct SweepSummary {
  std::size_t runs = 0;        // runs in the shard
  std::size_t skipped = 0;     // already in the file when the sweep started
  std::size_t written = 0;     // appended by this sweep
  SweepTable table;            // the file's rows at the end, sorted by run index
  std::vector<SweepRun> rows;  // the same rows typed, in the same order
};

// Checks every axis path against the config (an unknown key is a core::ConfigError with "did
// you mean", before anything runs), then simulates the runs of `options.shard` that `csv_path`
// does not hold yet on `options.jobs` threads, appending a row as each completes. A run whose
// config is invalid (say an illegal gradient accumulation count for its schedule) is a row with
// the error text and empty metrics; a run out of memory is a row with fits_in_memory false.
// `outputs` must hold `csv_path`: the file is locked against other sweeps until `outputs` is
// destroyed, and the sorted file is written to it, to be renamed over the CSV at its commit().
// Throws core::ConfigError when another sweep is writing the file, or when the file holds a
// different sweep (another header, or a run index with other values).
SweepSummary run_sweep(const std::string& config_path, const SweepPlan& plan,
                       const std::string& csv_path, const SweepOptions& options,
                       core::OutputSet& outputs);

// What `ipusim sweep` asks for, as typed on its command line.
struct SweepRequest {
  std::string config_path;
  std::vector<core::Override> base_overrides;
  std::vector<std::string> varies;  // "PATH=V1,V2,..." each
  std::string csv_path;
  // No -o: csv_path is a scratch file, not kept, which the summary and errors do not name; the
  // CSV is printed on the output unless the runs stream there as JSON lines.
  bool csv_scratch = false;
  bool csv_printed = false;
  std::string html_path;      // empty: no page
  std::string shard = "1/1";  // "I/N"
  int jobs = 1;
  std::function<void(std::size_t, std::size_t)> progress;  // as SweepOptions::progress
  // Given each run as sweep_json_line writes it, in SweepOptions::on_run's order.
  std::function<void(const std::string&)> on_json_line;
};

// One run as one line of JSON for --json-lines: {"run": r, then each varied path with its value
// (read as JSON when it parses, like --set), the figures of metrics_json, "error": text or
// null}.
std::string sweep_json_line(const SweepPlan& plan, const SweepRun& run);

// What a sweep prints: the counts of runs simulated, skipped, invalid and out of memory, and
// the fastest run; and, when no run of this sweep (or shard) is valid, the error that makes the
// command fail once the file is written (the first run's error, e.g. a mistyped value).
struct SweepOutcome {
  std::string summary;
  std::optional<core::ConfigError> none_valid;
};

// Plans and runs the sweep (run_sweep) and writes the page plotting it when asked (`outputs`
// must hold the CSV and the page).
SweepOutcome sweep(const SweepRequest& request, core::OutputSet& outputs);

}  // namespace ipusim::sim
