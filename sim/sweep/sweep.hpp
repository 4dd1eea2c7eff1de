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

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/config_file.hpp"
#include "sim/core/output_file.hpp"
#include "sim/report/report.hpp"

namespace ipusim::sim {

// One `--vary`: a config path and the values it takes, in the order given.
struct SweepAxis {
  std::string path;                 // as typed: dotted (pipeline.x) or a JSON pointer
  std::vector<std::string> values;  // as typed; read like --set values (JSON, else a string)
  std::string label;                // "--vary PATH=v1,v2", how errors name it
};

// Splits "PATH=v1,v2,..." at top-level commas (a JSON list or object value keeps its commas).
// A missing '=', an empty value list or an empty value is a core::ConfigError.
SweepAxis parse_vary_argument(const std::string& argument);

// The slice of a sweep one process runs: run r belongs to shard i of n when r % n == i - 1.
// Round robin rather than contiguous blocks, because neighbouring runs differ only in the last
// axis and so cost about the same: every shard gets a fair share of the expensive runs.
struct SweepShard {
  int index = 1;  // 1 .. count
  int count = 1;
  bool contains(std::size_t run) const { return int(run % std::size_t(count)) == index - 1; }
};

// Reads "i/n" with 1 <= i <= n; anything else is a core::ConfigError naming --shard.
SweepShard parse_shard(const std::string& text);

// The variants of a sweep in a fixed order: the first axis varies slowest. Run r is identified
// by its index and its values; both are in every CSV row, so a file is checked against the
// plan before it is resumed.
class SweepPlan {
 public:
  // Throws core::ConfigError when two axes name the same path.
  explicit SweepPlan(std::vector<SweepAxis> axes);

  std::size_t size() const { return size_; }
  const std::vector<SweepAxis>& axes() const { return axes_; }
  std::vector<std::size_t> indices(std::size_t run) const;  // into each axis's values
  std::vector<std::string> values(std::size_t run) const;   // one per axis
  // "--vary PATH=VALUE" overrides for run `run`, one per axis.
  std::vector<core::Override> overrides(std::size_t run) const;
  // "pipeline.gradient_accumulation_count=8 pipeline.pipeline_schedule=grouped"
  std::string key(std::size_t run) const;
  // The CSV header: "run", one column per axis (its path as typed), the metrics, "error".
  std::vector<std::string> columns() const;

 private:
  std::vector<SweepAxis> axes_;
  std::size_t size_ = 1;
};

// The metric columns shared by sweep and compare CSVs, named like the run JSON's keys:
// step_cycles .. fits_in_memory, in this order. Integers are exact; seconds print with 12
// decimals, throughput with 3 and shares (0..1) with 6, so equal runs give equal bytes.
const std::vector<std::string>& metric_columns();
std::vector<std::string> metric_cells(const RunReport& report);

// A sweep CSV in memory: the header and the rows, each a list of cells. Cell 0 is the run index.
struct SweepTable {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;

  std::optional<std::size_t> column(const std::string& name) const;
  std::string to_csv() const;  // header and rows, each line ending in '\n'
};

// One CSV line with its '\n'. Cells with a comma or a quote are quoted ("" escapes a quote);
// line breaks become spaces so that every row is one line.
std::string csv_line(const std::vector<std::string>& cells);

// The result of reading a CSV: the table and the byte length of its whole lines (a trailing
// line without '\n' was cut by a kill and is not part of the table).
struct SweepFile {
  SweepTable table;
  std::size_t complete_bytes = 0;
};

// Reads a sweep CSV. A missing file reads as empty; a row whose cell count differs from the
// header or whose run index is not a number is a core::ConfigError naming the file and line.
SweepFile read_sweep_csv(const std::string& path);

// The run index of a row (its first cell).
std::size_t run_index(const std::vector<std::string>& row);

// How run_sweep runs: the overrides every run shares, the threads, the slice, and a progress
// callback for the command line's bar.
struct SweepOptions {
  std::vector<core::Override> base_overrides;  // what-if options applied to every run
  int jobs = 1;                                // worker threads
  SweepShard shard;
  // Called by the writer after each row and once before the first: (rows done, runs in shard).
  std::function<void(std::size_t, std::size_t)> progress;
};

// What a sweep did, for the command's summary, and the finished file's contents.
struct SweepSummary {
  std::size_t runs = 0;     // runs in the shard
  std::size_t skipped = 0;  // already in the file when the sweep started
  std::size_t written = 0;  // appended by this sweep
  SweepTable table;         // the file's rows at the end, sorted by run index
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

// Joins sweep CSVs (the shards of one sweep): the same header everywhere, each run once, sorted
// by run index. A run present in two files with different cells is a core::ConfigError.
struct MergedSweep {
  SweepTable table;
  std::vector<std::size_t> missing;  // run indices below the largest present that no file has
};
MergedSweep merge_sweep_csvs(const std::vector<std::string>& paths);

}  // namespace ipusim::sim
