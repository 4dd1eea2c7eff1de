#include "sim/core/format.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

namespace ipusim::sim {

std::string with_commas(std::int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

namespace {

// The SI prefixes of si and si_figures, largest first; below the last, no prefix.
constexpr std::array<std::pair<double, const char*>, 5> kPrefixes = {
    {{1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}}};

std::string printed(const char* format, int figures, double value, const char* prefix,
                    const std::string& unit) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, figures, value, prefix, unit.c_str());
  return buffer;
}

}  // namespace

std::string si(double value, const std::string& unit) {
  for (const auto& [scale, prefix] : kPrefixes) {
    if (std::fabs(value) >= scale)
      return printed("%.*g %s%s", 3, value / scale, prefix, unit);
  }
  return printed("%.*g %s%s", 3, value, "", unit);
}

std::string si_figures(double value, const std::string& unit, int figures) {
  const double round_up = 1 - 0.5 * std::pow(10.0, 1 - figures);  // 0.99995 at 4 figures
  for (const auto& [scale, prefix] : kPrefixes) {
    // A value that rounds up to 1.000 of a prefix takes it: 999,960 B is 1.000 MB at 4.
    if (std::fabs(value) >= scale * round_up)
      return printed("%#.*g %s%s", figures, value / scale, prefix, unit);
  }
  return with_commas(std::llround(value)) + " " + unit;
}

std::string memory_figure(double bytes) {
  return si_figures(bytes, "B", 4);
}

std::string percent(double share) {
  return fixed(100.0 * share, 1) + "%";
}

std::string fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::string render_table(const std::vector<std::vector<std::string>>& rows,
                         const std::vector<bool>& right_aligned) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (std::size_t c = 0; c < row.size(); ++c)
      widths[c] = std::max(widths[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      const std::string pad(widths[c] - row[c].size(), ' ');
      const bool right = c < right_aligned.size() && right_aligned[c];
      line += (c == 0 ? "" : "  ") + (right ? pad + row[c] : row[c] + pad);
    }
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace ipusim::sim
