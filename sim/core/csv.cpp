#include "sim/core/csv.hpp"

#include "sim/core/error.hpp"

namespace ipusim::core {
namespace {

bool starts_formula(char c) {
  return c == '=' || c == '+' || c == '-' || c == '@' || c == '\t' || c == '\r';
}

// A decimal number with an optional sign, fraction and exponent: "-1.5", "+3", "-2e-05".
bool is_signed_number(const std::string& cell) {
  std::size_t i = (cell.starts_with('-') || cell.starts_with('+')) ? 1 : 0;
  const auto digits = [&] {
    const std::size_t from = i;
    while (i < cell.size() && cell[i] >= '0' && cell[i] <= '9')
      ++i;
    return i > from;
  };
  if (!digits())
    return false;
  if (i < cell.size() && cell[i] == '.' && (++i, !digits()))
    return false;
  if (i < cell.size() && (cell[i] == 'e' || cell[i] == 'E')) {
    ++i;
    if (i < cell.size() && (cell[i] == '-' || cell[i] == '+'))
      ++i;
    if (!digits())
      return false;
  }
  return i == cell.size();
}

// Whether the cell, its leading single quotes aside, starts a formula: these cells are written
// with one more quote.
bool needs_guard(const std::string& cell) {
  const auto first = cell.find_first_not_of('\'');
  return first != std::string::npos && starts_formula(cell[first]) && !is_signed_number(cell);
}

// The cell csv_cell was given: one leading quote fewer on a guarded cell.
std::string unguarded(std::string cell) {
  if (cell.starts_with('\'') && needs_guard(cell))
    cell.erase(0, 1);
  return cell;
}

}  // namespace

std::string csv_cell(const std::string& cell) {
  const std::string guarded = needs_guard(cell) ? "'" + cell : cell;
  if (guarded.find_first_of(",\"\n\r") == std::string::npos)
    return guarded;
  std::string out = "\"";
  for (const char c : guarded)
    out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::vector<std::string> split_csv_line(const std::string& line, const std::string& path,
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
  if (quoted)
    throw ConfigError(path, "", "line " + std::to_string(line_number) + ": a quote is not closed");
  for (auto& cell : cells)
    cell = unguarded(std::move(cell));
  return cells;
}

}  // namespace ipusim::core
