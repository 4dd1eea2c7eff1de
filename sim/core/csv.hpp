#pragma once
// Reading one line of CSV text into its cells, as RFC 4180 quotes them: a cell in double
// quotes may hold commas, and "" inside one is a quote. What the cells mean is each format's
// own (sim/sweep/sweep_csv.hpp, sim/calibrate/measurements.hpp).

#include <cstddef>
#include <string>
#include <vector>

namespace ipusim::core {

// The cells of `line` (without its '\n'); a quote left open is a ConfigError naming `path` and
// `line_number`.
std::vector<std::string> split_csv_line(const std::string& line, const std::string& path,
                                        std::size_t line_number);

}  // namespace ipusim::core
