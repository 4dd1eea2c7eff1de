#pragma once
// The plan of a sweep: the `--vary` axes, their cartesian product in a fixed order, and the
// `--shard` slice one process runs. Pure: nothing here reads a config or simulates.
//
// May include sim/core; its .cpp also the room's metrics and CSV, for the header row.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/config_file.hpp"

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

// Looks up an environment variable; nullopt when it is not set.
using EnvironmentLookup = std::function<std::optional<std::string>(const std::string&)>;

// Reads "i/n" with 1 <= i <= n, or "auto": the slice of a Slurm array job, from
// SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT (else SLURM_ARRAY_TASK_MIN..MAX) and
// SLURM_ARRAY_TASK_STEP, so that task k of an array --array=MIN-MAX:STEP runs slice
// (k - MIN) / STEP + 1. Anything else, an array given as a list of IDs, or "auto" outside an
// array job, is a core::ConfigError naming --shard. The one-argument form reads the process
// environment.
SweepShard parse_shard(const std::string& text, const EnvironmentLookup& environment);
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
  std::vector<std::string> values(std::size_t run) const;  // one per axis
  // "--vary PATH=VALUE" overrides for run `run`, one per axis.
  std::vector<core::Override> overrides(std::size_t run) const;
  // "pipeline.gradient_accumulation_count=8 pipeline.pipeline_schedule=grouped"
  std::string key(std::size_t run) const;
  // The CSV header: "run", one column per axis (its path as typed), the metrics, the per-IPU
  // columns for ipu_columns() IPUs, "error".
  std::vector<std::string> columns() const;
  // The IPUs per replica of the run with the most (0 until known): the per-IPU columns.
  std::size_t ipu_columns() const { return ipu_columns_; }
  void set_ipu_columns(std::size_t ipus) { ipu_columns_ = ipus; }

 private:
  std::vector<SweepAxis> axes_;
  std::size_t size_ = 1;
  std::size_t ipu_columns_ = 0;
};

}  // namespace ipusim::sim
