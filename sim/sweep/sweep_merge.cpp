// `ipusim merge`, streamed (sim/sweep/sweep_csv.hpp, SweepMerge): each file is read a megabyte
// at a time and indexed by run, and the joined file is written by reading each row again at its
// place, so that memory holds the index rather than the rows.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <utility>

#include "sim/core/csv.hpp"
#include "sim/core/error.hpp"
#include "sim/core/json_text.hpp"
#include "sim/sweep/sweep_csv.hpp"

namespace ipusim::sim {

// One row of one file: its run, the file's position in the merge and where its line lies.
struct SweepMerge::Row {
  std::uint64_t run = 0;
  std::uint64_t offset = 0;
  std::uint32_t bytes = 0;
  std::uint32_t file = 0;
};

namespace {

// How many missing runs a merge names.
constexpr std::size_t kListedMissing = 10;

using MergeRow = SweepMerge::Row;

// A file's header and rows in the file's order, read as read_sweep_csv(path, LastLine::kKept)
// reads them, with the same errors, but never held whole.
struct IndexedFile {
  std::vector<std::string> columns;
  std::vector<MergeRow> rows;
};

void read_chunks(const std::string& path, const std::function<void(std::string_view)>& chunk) {
  if (const auto problem = core::read_regular_file_chunks(path, kMaxSweepFileBytes, chunk))
    throw core::ConfigError(path, "", "cannot read the sweep file: " + *problem);
}

// A NUL anywhere is the file's first error, as when the file is read whole.
void refuse_nul(const std::string& path) {
  std::size_t lines = 1;
  read_chunks(path, [&](std::string_view text) {
    const auto nul = text.find('\0');
    lines += std::size_t(std::count(
        text.begin(), nul == text.npos ? text.end() : text.begin() + std::ptrdiff_t(nul), '\n'));
    if (nul != text.npos)
      throw core::ConfigError(
          path, "", "line " + std::to_string(lines) + " holds a NUL byte; a sweep file is text");
  });
}

IndexedFile index_file(const std::string& path, std::uint32_t file) {
  IndexedFile out;
  scan_sweep_csv(path, LastLine::kKept,
                 [&](std::vector<std::string>&& cells, std::size_t number, std::uint64_t offset,
                     std::size_t bytes) {
                   if (number == 1)
                     out.columns = std::move(cells);
                   else
                     out.rows.push_back({run_index(cells), offset, std::uint32_t(bytes), file});
                 });
  return out;
}

// The cells of `row`, read again from its file.
std::vector<std::string> cells_of(const MergeRow& row, const std::vector<int>& files,
                                  const std::vector<std::string>& paths) {
  std::string line(row.bytes, '\0');
  errno = 0;
  if (::pread(files[row.file], line.data(), row.bytes, off_t(row.offset)) != ssize_t(row.bytes))
    throw core::ConfigError(paths[row.file], "",
                            std::string("cannot read the sweep file again: ") +
                                (errno != 0 ? std::strerror(errno) : "it was cut short meanwhile"));
  return core::split_csv_line(line, paths[row.file], 0);
}

}  // namespace

void scan_sweep_csv(const std::string& path, LastLine last_line, const SweepLineVisitor& visit) {
  refuse_nul(path);
  std::string line;          // the line being read, carried from one chunk to the next
  std::uint64_t offset = 0;  // of `line`
  std::size_t number = 0;
  std::size_t columns = 0;
  const auto add = [&] {
    if (++number == 1) {
      auto cells = core::split_csv_line(line, path, number);
      columns = cells.size();
      visit(std::move(cells), number, offset, line.size());
      return;
    }
    visit(sweep_row_cells(path, line, number, columns), number, offset, line.size());
  };
  std::uint64_t read = 0;
  read_chunks(path, [&](std::string_view text) {
    for (std::size_t start = 0; start < text.size();) {
      const auto end = text.find('\n', start);
      line.append(text.substr(start, end == text.npos ? text.npos : end - start));
      if (end == text.npos)
        break;
      add();
      offset = read + end + 1;
      line.clear();
      start = end + 1;
    }
    read += text.size();
  });
  if (last_line == LastLine::kKept && !line.empty() &&
      (number == 0 || whole_sweep_row(line, columns)))
    add();
}

SweepMerge::SweepMerge(const std::vector<std::string>& paths) : paths_(paths) {
  for (std::size_t file = 0; file < paths.size(); ++file) {
    const std::string& path = paths[file];
    if (!std::filesystem::exists(path))
      throw core::ConfigError(path, "", "cannot open the sweep file");
    auto indexed = index_file(path, std::uint32_t(file));
    check_sweep_header(path, indexed.columns);
    if (file == 0)
      summary_.table.columns = indexed.columns;
    else if (indexed.columns != summary_.table.columns)
      throw core::ConfigError(path, "", "its columns differ from those of " + paths.front());
    files_.push_back(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (files_.back() < 0)
      throw core::ConfigError(path, "",
                              std::string("cannot open the sweep file: ") + std::strerror(errno));
    add_file(indexed.rows);
  }
  std::size_t expected = 0;
  for (const auto& row : rows_) {
    // Counted, not listed: the rows present bound the work, not the largest index.
    summary_.missing_count += row.run - expected;
    for (; expected < row.run && summary_.missing.size() < kListedMissing; ++expected)
      summary_.missing.push_back(expected);
    expected = row.run + 1;
  }
  summary_.runs = rows_.size();
}

// Joins one file's rows to those before: a run seen before must have the same cells as where it
// was first seen, and the first row of the file's order that differs is the error.
void SweepMerge::add_file(std::vector<Row>& rows) {
  std::vector<std::size_t> by_run(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i)
    by_run[i] = i;
  std::stable_sort(by_run.begin(), by_run.end(),
                   [&](std::size_t a, std::size_t b) { return rows[a].run < rows[b].run; });
  std::optional<std::size_t> conflict;  // the first row, in the file's order, that differs
  const Row* conflict_with = nullptr;
  std::vector<Row> added;
  for (std::size_t g = 0; g < by_run.size();) {
    std::size_t end = g;
    while (end < by_run.size() && rows[by_run[end]].run == rows[by_run[g]].run)
      ++end;
    const auto before =
        std::lower_bound(rows_.begin(), rows_.end(), rows[by_run[g]].run,
                         [](const Row& r, std::uint64_t run) { return r.run < run; });
    const bool seen = before != rows_.end() && before->run == rows[by_run[g]].run;
    const Row& first = seen ? *before : rows[by_run[g]];
    if (!seen)
      added.push_back(first);
    std::optional<std::vector<std::string>> first_cells;
    for (std::size_t k = seen ? g : g + 1; k < end; ++k) {
      if (conflict && *conflict < by_run[k])
        break;
      if (!first_cells)
        first_cells = cells_of(first, files_, paths_);
      if (cells_of(rows[by_run[k]], files_, paths_) != *first_cells) {
        conflict = by_run[k];
        conflict_with = &first;
        break;
      }
    }
    g = end;
  }
  if (conflict) {
    const auto run = std::to_string(rows[*conflict].run);
    throw core::ConfigError(
        paths_[rows[*conflict].file], "",
        "run " + run + " differs from run " + run + " in " + paths_[conflict_with->file]);
  }
  std::vector<Row> merged;
  merged.reserve(rows_.size() + added.size());
  std::merge(rows_.begin(), rows_.end(), added.begin(), added.end(), std::back_inserter(merged),
             [](const Row& a, const Row& b) { return a.run < b.run; });
  rows_ = std::move(merged);
}

SweepMerge::~SweepMerge() {
  for (const int fd : files_)
    ::close(fd);
}

void SweepMerge::write(const std::function<void(std::string_view)>& put) const {
  put(csv_line(summary_.table.columns));
  for (const auto& row : rows_)
    put(csv_line(cells_of(row, files_, paths_)));
}

MergedSweep merge_sweep_csvs(const std::vector<std::string>& paths) {
  const SweepMerge merge(paths);
  MergedSweep out = merge.summary();
  bool header = true;
  merge.write([&](std::string_view line) {
    if (!std::exchange(header, false))
      out.table.rows.push_back(
          core::split_csv_line(std::string(line.substr(0, line.size() - 1)), paths.front(), 0));
  });
  return out;
}

}  // namespace ipusim::sim
