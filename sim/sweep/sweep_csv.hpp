#pragma once
// Sweep CSV files as text: one line per run, read back to resume a sweep and to merge the files
// of a sweep's shards. Nothing here knows what a run computes; the metric cells are
// sim/report/run_metrics.hpp's.
//
// May include sim/core only.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ipusim::sim {

// The most runs a sweep has; a run index in a file is below it.
constexpr std::size_t kMaxSweepRuns = 100'000'000;

// A file this large would not fit in memory to be sorted or resumed; sweeps stay below it by
// holding at most kMaxRunsPerFile runs (sim/sweep/sweep.cpp). A merge streams, but keeps the
// bound.
constexpr std::int64_t kMaxSweepFileBytes = std::int64_t{8} << 30;

// What a sweep or a merge says when another sweep holds the lock on its file: two writers would
// each rewrite it sorted at the end without the other's rows.
std::string sweep_file_busy_text();

// A sweep CSV in memory: the header and the rows, each a list of cells. Cell 0 is the run index.
struct SweepTable {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;

  std::optional<std::size_t> column(const std::string& name) const;
  std::string to_csv() const;  // header and rows, each line ending in '\n'
};

// A cell as csv_line writes it, before quoting: line breaks become spaces.
std::string one_line(std::string cell);

// One CSV line with its '\n', each cell through core::csv_cell (guarded against spreadsheet
// formulas, quoted when it holds a comma or a quote); line breaks become spaces so that every
// row is one line.
std::string csv_line(const std::vector<std::string>& cells);

// The result of reading a CSV: the table and the byte length of its whole lines (a trailing
// line without '\n' was cut by a kill and is not part of the table).
struct SweepFile {
  SweepTable table;
  std::size_t complete_bytes = 0;
};

// What becomes of a last line without its '\n': a resumed sweep drops it (a kill may have cut
// it, and the run is simply run again); merge keeps it when it holds a whole row (an editor may
// have saved the file so), and drops it otherwise.
enum class LastLine { kDropped, kKept };

// Reads a sweep CSV. A missing file reads as empty; a NUL byte, a row whose cell count differs
// from the header or whose run index is not a number below kMaxSweepRuns is a core::ConfigError
// naming the file and line.
SweepFile read_sweep_csv(const std::string& path, LastLine last_line = LastLine::kDropped);

// The cells of row `line_number` of sweep file `path` with `columns` columns, checked as
// read_sweep_csv checks a row (a core::ConfigError naming the file and line).
std::vector<std::string> sweep_row_cells(const std::string& path, std::string_view line,
                                         std::size_t line_number, std::size_t columns);
// Whether `line` holds `columns` cells with every quote closed: a row that lacks only its '\n',
// not one a kill cut short.
bool whole_sweep_row(std::string_view line, std::size_t columns);
// Refuses what is not a sweep file's header: empty, a first column other than `run`, a column
// named twice.
void check_sweep_header(const std::string& path, const std::vector<std::string>& columns);

// Reads sweep CSV `path` a megabyte at a time, with read_sweep_csv's checks and errors (but a
// missing file is the caller's to refuse), never holding it whole: `visit` gets the cells of
// each line, the header first, with the line's number, byte offset and length without its '\n'.
using SweepLineVisitor = std::function<void(std::vector<std::string>&& cells, std::size_t number,
                                            std::uint64_t offset, std::size_t bytes)>;
void scan_sweep_csv(const std::string& path, LastLine last_line, const SweepLineVisitor& visit);

// The run index of a row (its first cell).
std::size_t run_index(const std::vector<std::string>& row);

// Reads a run index or a shard number: decimal digits only, at most 18 of them.
std::optional<std::size_t> parse_index(const std::string& text);

// `table`'s rows by run index, the first of duplicates kept.
SweepTable sorted_by_run(const SweepTable& table);

// Joins sweep CSVs (the shards of one sweep): the same header everywhere, each run once, sorted
// by run index. A file that is not a sweep file (empty, an empty header, a first column other
// than `run`, a column named twice) or a run present in two files with different cells is a
// core::ConfigError. A last row that lacks only its '\n' is kept.
struct MergedSweep {
  SweepTable table;  // the header; the rows only from merge_sweep_csvs
  std::size_t runs = 0;
  // Run indices below the largest present that no file has: how many, and the first ten.
  std::size_t missing_count = 0;
  std::vector<std::size_t> missing;
};

// A merge that streams (sim/sweep/sweep_merge.cpp): reading the files keeps 24 bytes per row
// (its run, file and place) and writing reads each row again from its file, so a merge of a
// file of a million rows takes tens of megabytes, not the file's size several times over.
class SweepMerge {
 public:
  // Reads and checks every file; throws core::ConfigError as merge_sweep_csvs does.
  explicit SweepMerge(const std::vector<std::string>& paths);
  ~SweepMerge();
  SweepMerge(const SweepMerge&) = delete;
  SweepMerge& operator=(const SweepMerge&) = delete;

  const MergedSweep& summary() const { return summary_; }
  // The joined CSV, handed to `put` a piece at a time.
  void write(const std::function<void(std::string_view)>& put) const;

  struct Row;  // one row of one file, where it lies

 private:
  void add_file(std::vector<Row>& rows);

  std::vector<std::string> paths_;
  std::vector<int> files_;  // open for reading rows again
  std::vector<Row> rows_;   // by run, one per run
  MergedSweep summary_;
};

// The same held in memory, rows and all: for small files.
MergedSweep merge_sweep_csvs(const std::vector<std::string>& paths);

// "warning: 2 run(s) missing below the last one present ...: 1 4" naming the first ten, or
// empty when none is missing.
std::string missing_runs_warning(const MergedSweep& merged);

}  // namespace ipusim::sim
