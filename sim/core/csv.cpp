#include "sim/core/csv.hpp"

#include "sim/core/error.hpp"

namespace ipusim::core {

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
  return cells;
}

}  // namespace ipusim::core
