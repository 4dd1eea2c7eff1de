#include "sim/sweep/sweep_csv.hpp"

#include <algorithm>
#include <filesystem>
#include <map>

#include "sim/core/csv.hpp"
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/core/json_text.hpp"

namespace ipusim::sim {
namespace {

// A file this large would not fit in memory to be sorted, resumed or merged; sweeps stay below
// it by holding at most kMaxRunsPerFile runs (sim/sweep/sweep.cpp).
constexpr std::int64_t kMaxSweepFileBytes = std::int64_t{8} << 30;

// How many missing runs a merge names.
constexpr std::size_t kListedMissing = 10;

}  // namespace

std::string sweep_file_busy_text() {
  return "another ipusim sweep is writing this file; wait for it to finish or write to another "
         "file";
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

std::string one_line(std::string cell) {
  std::replace(cell.begin(), cell.end(), '\n', ' ');
  std::replace(cell.begin(), cell.end(), '\r', ' ');
  return cell;
}

std::string csv_line(const std::vector<std::string>& cells) {
  std::string out;
  for (std::size_t i = 0; i < cells.size(); ++i)
    out += (i ? "," : "") + core::csv_cell(one_line(cells[i]));
  return out + "\n";
}

SweepFile read_sweep_csv(const std::string& path) {
  SweepFile file;
  std::string text;
  if (!std::filesystem::exists(path))
    return file;
  if (const auto problem = core::read_regular_file(path, &text, kMaxSweepFileBytes))
    throw core::ConfigError(path, "", "cannot read the sweep file: " + *problem);
  if (const auto nul = text.find('\0'); nul != std::string::npos)
    throw core::ConfigError(
        path, "",
        "line " + std::to_string(1 + std::count(text.begin(), text.begin() + nul, '\n')) +
            " holds a NUL byte; a sweep file is text");
  std::size_t start = 0;
  std::size_t line_number = 0;
  for (std::size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    ++line_number;
    auto cells = core::split_csv_line(text.substr(start, end - start), path, line_number);
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
    if (run_index(cells) >= kMaxSweepRuns)
      throw core::ConfigError(path, "",
                              "line " + std::to_string(line_number) + ": run " + cells[0] +
                                  " is beyond the " + with_commas(std::int64_t(kMaxSweepRuns)) +
                                  " runs a sweep may have");
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

std::optional<std::size_t> parse_index(const std::string& text) {
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::size_t(std::stoull(text));
}

SweepTable sorted_by_run(const SweepTable& table) {
  std::map<std::size_t, const std::vector<std::string>*> by_run;
  for (const auto& row : table.rows)
    by_run.emplace(run_index(row), &row);
  SweepTable out{table.columns, {}};
  for (const auto& [run, row] : by_run)
    out.rows.push_back(*row);
  return out;
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
      throw core::ConfigError(path, "",
                              "is not a sweep file: it has no header line (it is empty, or its "
                              "first line does not end)");
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
    // Counted, not listed: the rows present bound the work, not the largest index.
    merged.missing_count += run - expected;
    for (; expected < run && merged.missing.size() < kListedMissing; ++expected)
      merged.missing.push_back(expected);
    expected = run + 1;
    merged.table.rows.push_back(std::move(row));
  }
  return merged;
}

std::string missing_runs_warning(const MergedSweep& merged) {
  const auto& missing = merged.missing;
  if (missing.empty())
    return "";
  std::string out = "warning: " + with_commas(std::int64_t(merged.missing_count)) +
                    " run(s) missing below the last one present (a shard not merged, or not "
                    "finished):";
  for (const std::size_t run : missing)
    out += " " + std::to_string(run);
  return out + (merged.missing_count > missing.size() ? " ...\n" : "\n");
}

}  // namespace ipusim::sim
