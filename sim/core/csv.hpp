#pragma once
// Reading one line of CSV text into its cells, as RFC 4180 quotes them: a cell in double
// quotes may hold commas, and "" inside one is a quote. What the cells mean is each format's
// own (sim/sweep/sweep_csv.hpp, sim/calibrate/measurements.hpp).

#include <cstddef>
#include <string>
#include <vector>

namespace ipusim::core {

// The cells of `line` (without its '\n'), each as csv_cell was given it; a quote left open is a
// ConfigError naming `path` and `line_number`.
std::vector<std::string> split_csv_line(const std::string& line, const std::string& path,
                                        std::size_t line_number);

// One cell as CSV text, the one way ipusim writes cells. A cell a spreadsheet would run as a
// formula (one starting with '=', '+', '-', '@', a tab or a carriage return, as OWASP lists
// them) gets a leading single quote, which spreadsheets hide and pandas keeps, unless it is a
// number ("-1.5" stays a number); so does a cell of quotes before such a character, so that
// split_csv_line can take the quote off again. A cell with a comma, a quote or a line break is
// then quoted as RFC 4180 says ("" for a quote).
std::string csv_cell(const std::string& cell);

}  // namespace ipusim::core
