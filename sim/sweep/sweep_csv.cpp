#include "sim/sweep/sweep_csv.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <string_view>

#include "sim/core/csv.hpp"
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/core/json_text.hpp"

namespace ipusim::sim {

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

namespace {

// Adds line `line_number` of a sweep file to `file`: the header, or a row of as many cells as it.
void add_line(const std::string& path, std::string_view line, std::size_t line_number,
              SweepFile& file) {
  if (line_number == 1) {
    file.table.columns = core::split_csv_line(std::string(line), path, line_number);
    return;
  }
  file.table.rows.push_back(sweep_row_cells(path, line, line_number, file.table.columns.size()));
}

}  // namespace

std::vector<std::string> sweep_row_cells(const std::string& path, std::string_view line,
                                         std::size_t line_number, std::size_t columns) {
  auto cells = core::split_csv_line(std::string(line), path, line_number);
  if (cells.size() != columns) {
    throw core::ConfigError(path, "",
                            "line " + std::to_string(line_number) + " is not a sweep row (" +
                                std::to_string(cells.size()) + " cells for " +
                                std::to_string(columns) + " columns)");
  }
  if (!parse_index(cells[0])) {
    throw core::ConfigError(path, "",
                            "line " + std::to_string(line_number) +
                                " is not a sweep row: its first cell, '" + cells[0] + "'" +
                                ", is no run number (expected 0, 1, 2, ...)");
  }
  if (run_index(cells) >= kMaxSweepRuns)
    throw core::ConfigError(path, "",
                            "line " + std::to_string(line_number) + ": run " + cells[0] +
                                " is beyond the " + with_commas(std::int64_t(kMaxSweepRuns)) +
                                " runs a sweep may have");
  return cells;
}

bool whole_sweep_row(std::string_view line, std::size_t columns) {
  bool quoted = false;
  std::size_t cells = 1;
  for (const char c : line) {
    quoted = quoted != (c == '"');
    cells += c == ',' && !quoted;
  }
  return !quoted && cells == columns;
}

SweepFile read_sweep_csv(const std::string& path, LastLine last_line) {
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
  const std::string_view view = text;
  std::size_t start = 0;
  std::size_t line_number = 0;
  for (std::size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
    add_line(path, view.substr(start, end - start), ++line_number, file);
  file.complete_bytes = start;
  const std::string_view rest = view.substr(start);
  if (last_line == LastLine::kKept && !rest.empty() &&
      (line_number == 0 || whole_sweep_row(rest, file.table.columns.size())))
    add_line(path, rest, ++line_number, file);
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

// A file merge takes: a header of distinct, non-empty names, the first of them `run`.
void check_sweep_header(const std::string& path, const std::vector<std::string>& columns) {
  if (columns.empty())
    throw core::ConfigError(path, "", "is not a sweep file: it is empty");
  if (columns.size() == 1 && columns[0].empty())
    throw core::ConfigError(path, "", "is not a sweep file: its header line is empty");
  if (columns[0] != "run")
    throw core::ConfigError(
        path, "", "is not a sweep file: its first column is '" + columns[0] + "', not 'run'");
  for (std::size_t i = 1; i < columns.size(); ++i) {
    if (std::find(columns.begin(), columns.begin() + i, columns[i]) != columns.begin() + i)
      throw core::ConfigError(
          path, "", "is not a sweep file: its header names the column '" + columns[i] + "' twice");
  }
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
