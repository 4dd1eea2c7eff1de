#pragma once
// The figures of one run that sweep, compare and plan report, typed: taken from a RunReport's
// RunFigures, written as the metric cells of their CSVs and JSON, read back by column name from
// a sweep file being resumed or merged, and ranked by throughput to name the fastest run. The
// sweep page (sim/html) plots them as they are. One table, metric_table(), names each figure's
// column, heading and unit: a new figure is a RunMetrics field and a row there.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/report/report.hpp"

namespace ipusim::sim {

// One run's figures, named like the run JSON's keys. Shares are 0..1.
struct RunMetrics {
  std::int64_t step_cycles = 0;
  double step_seconds = 0;
  double throughput = 0;                       // samples per second
  std::array<std::int64_t, 4> phase_cycles{};  // by PhaseIndex
  double ramp_overhead = 0;
  double bubble_fraction = 0;
  double utilisation_mean = 0;  // busy share of the step, mean of the IPUs
  double utilisation_min = 0;   // busy share of the step of the least busy IPU
  std::int64_t peak_memory_bytes_max = 0;
  std::int64_t peak_stash_bytes_max = 0;
  bool fits_in_memory = false;
  // What data parallelism costs as replicas grow: samples/s per IPU, the replicas' collectives
  // in the weight update (reduce-scatter, all-reduce, all-gather) and the wait for the hosts'
  // input.
  double throughput_per_ipu = 0;
  std::int64_t collective_cycles = 0;
  std::int64_t input_wait_cycles = 0;
  std::vector<double> utilisation_per_ipu;              // busy share of the step, by IPU
  std::vector<std::int64_t> peak_memory_bytes_per_ipu;  // by IPU
};

RunMetrics run_metrics(const RunReport& report);

// What a metric column holds, which decides how it is written and whether it is a number.
enum class MetricUnit { kCycles, kSeconds, kSamplesPerSecond, kShare, kBytes, kYesNo };

// Where RunMetrics holds a figure: an integer for cycles and bytes (a phase's cycles by its
// phase), a double for seconds, rates and shares, a bool for yes/no.
using MetricField = std::variant<std::int64_t RunMetrics::*, double RunMetrics::*,
                                 bool RunMetrics::*, schedules::Phase>;

// One metric column: its CSV column and JSON key, its heading in text tables, its unit and
// its field.
struct MetricColumn {
  std::string key;
  std::string heading;
  MetricUnit unit;
  MetricField field;
};

// The metric columns shared by sweep, compare and plan CSVs, their JSON and compare's table, in
// order: step_cycles .. input_wait_cycles.
const std::vector<MetricColumn>& metric_table();
// The column `key` of metric_table(); an unknown key is a bug.
const MetricColumn& metric_column(const std::string& key);

// The keys of metric_table(), and `metrics` as those columns' cells. Integers are exact;
// seconds print with 12 decimals, samples/s with 3 and shares with 6, so equal runs give equal
// bytes.
const std::vector<std::string>& metric_columns();
std::vector<std::string> metric_cells(const RunMetrics& metrics);

// The figure of `column` in words for a text table: "159,151 cycles", "0.1197 ms",
// "2,139,352 samples/s", "15.7%", "104.46 MB", "yes" or "NO".
std::string metric_text(const MetricColumn& column, const RunMetrics& metrics);

// The rows of a table of runs (compare's text and HTML tables): every metric column, but the
// weight update when no run trains.
std::vector<const MetricColumn*> table_columns(bool any_training);
// A run's cell in such a table: metric_text, or "none (inference)" for the weight update of a
// run that does not train.
std::string table_text(const MetricColumn& column, const RunMetrics& metrics, bool training);

// The unit of each of metric_columns(), then of each of per_ipu_columns(ipus).
std::vector<MetricUnit> metric_units(std::size_t ipus);

// The per-IPU columns of sweep and compare CSVs for `ipus` IPUs, after the metric columns:
// utilisation_ipu0 .. utilisation_ipu{ipus-1}, then peak_memory_bytes_ipu0 ..., so that pandas
// users plot the balance between IPUs. A run with fewer IPUs leaves its last cells empty.
std::vector<std::string> per_ipu_columns(std::size_t ipus);
std::vector<std::string> per_ipu_cells(const RunMetrics& metrics, std::size_t ipus);

// The figures as one JSON object, keyed like the CSV columns (the per-IPU ones as the lists
// utilisation_per_ipu and peak_memory_bytes_per_ipu), numbers rounded as the CSV prints them so
// a run read back from a file gives the same object as the run itself.
nlohmann::ordered_json metrics_json(const RunMetrics& metrics);

// Each metric column's figure unrounded, keyed by its column: the run JSON's summary keys.
void add_metric_values(const RunMetrics& metrics, nlohmann::json& out);

// Reads the figures back from the rows of a sweep or plan CSV by the names in its header,
// wherever its columns are: the metric columns, and the per-IPU columns of as many IPUs as the
// header has (an empty cell ends a run's IPUs). The inverse of metric_cells and per_ipu_cells.
class MetricsReader {
 public:
  // A header without one of the metric columns, or with one IPU's utilisation column but not
  // its peak memory, is a core::ConfigError naming `file` and the missing column.
  MetricsReader(const std::vector<std::string>& header, std::string file);

  // A cell that is not a number (or "true"/"false") is a core::ConfigError naming the file,
  // `line` and the column. `row` has a cell for each column of the header.
  RunMetrics read(const std::vector<std::string>& row, std::size_t line) const;

  // The IPUs the header has per-IPU columns for.
  std::size_t ipus() const { return per_ipu_.size(); }

 private:
  // Where an IPU's two columns are, and their names for errors.
  struct IpuColumns {
    std::size_t utilisation_at;
    std::string utilisation_name;
    std::size_t peak_at;
    std::string peak_name;
  };

  std::string file_;
  std::vector<std::size_t> metric_at_;  // by metric_table()
  std::vector<IpuColumns> per_ipu_;
};

// The runs that fit in memory, fastest first, as indices into `runs`. By throughput, since step
// times of runs with different batch sizes do not compare; equal throughputs keep their order,
// so the fastest is the first of them.
std::vector<std::size_t> fastest_first(const std::vector<const RunMetrics*>& runs);

}  // namespace ipusim::sim
