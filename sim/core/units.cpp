#include "sim/core/units.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace ipusim::core {
namespace {

struct Unit {
  std::string_view suffix;
  Dimension dimension;
  double scale;  // base units per one of this unit
};

// Longest suffixes first so that "GB/s" is not read as "GB".
constexpr std::array kUnits = {
    Unit{"TFLOPS", Dimension::kFlopRate, 1e12},
    Unit{"GFLOPS", Dimension::kFlopRate, 1e9},
    Unit{"PFLOPS", Dimension::kFlopRate, 1e15},
    Unit{"MFLOPS", Dimension::kFlopRate, 1e6},
    Unit{"FLOPS", Dimension::kFlopRate, 1},
    Unit{"FLOP/s", Dimension::kFlopRate, 1},
    Unit{"GiB/s", Dimension::kBandwidth, 1073741824.0},
    Unit{"MiB/s", Dimension::kBandwidth, 1048576.0},
    Unit{"TB/s", Dimension::kBandwidth, 1e12},
    Unit{"GB/s", Dimension::kBandwidth, 1e9},
    Unit{"MB/s", Dimension::kBandwidth, 1e6},
    Unit{"kB/s", Dimension::kBandwidth, 1e3},
    Unit{"KB/s", Dimension::kBandwidth, 1e3},
    Unit{"B/s", Dimension::kBandwidth, 1},
    Unit{"Tbps", Dimension::kBandwidth, 1e12 / 8},
    Unit{"Gbps", Dimension::kBandwidth, 1e9 / 8},
    Unit{"Mbps", Dimension::kBandwidth, 1e6 / 8},
    Unit{"Gbit/s", Dimension::kBandwidth, 1e9 / 8},
    Unit{"KiB", Dimension::kBytes, 1024.0},
    Unit{"MiB", Dimension::kBytes, 1048576.0},
    Unit{"GiB", Dimension::kBytes, 1073741824.0},
    Unit{"TiB", Dimension::kBytes, 1099511627776.0},
    Unit{"PB", Dimension::kBytes, 1e15},
    Unit{"TB", Dimension::kBytes, 1e12},
    Unit{"GB", Dimension::kBytes, 1e9},
    Unit{"MB", Dimension::kBytes, 1e6},
    Unit{"kB", Dimension::kBytes, 1e3},
    Unit{"KB", Dimension::kBytes, 1e3},
    Unit{"B", Dimension::kBytes, 1},
    Unit{"GHz", Dimension::kFrequency, 1e9},
    Unit{"MHz", Dimension::kFrequency, 1e6},
    Unit{"kHz", Dimension::kFrequency, 1e3},
    Unit{"Hz", Dimension::kFrequency, 1},
    Unit{"ms", Dimension::kDuration, 1e-3},
    Unit{"us", Dimension::kDuration, 1e-6},
    Unit{"\xC2\xB5s", Dimension::kDuration, 1e-6},
    Unit{"ns", Dimension::kDuration, 1e-9},
    Unit{"ps", Dimension::kDuration, 1e-12},
    Unit{"s", Dimension::kDuration, 1},
};

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

}  // namespace

const char* dimension_name(Dimension dimension) {
  switch (dimension) {
    case Dimension::kBytes:
      return "a size";
    case Dimension::kBandwidth:
      return "a bandwidth";
    case Dimension::kFrequency:
      return "a frequency";
    case Dimension::kFlopRate:
      return "a FLOP rate";
    case Dimension::kDuration:
      return "a duration";
  }
  return "a quantity";
}

const char* dimension_example(Dimension dimension) {
  switch (dimension) {
    case Dimension::kBytes:
      return "\"900MB\"";
    case Dimension::kBandwidth:
      return "\"32GB/s\"";
    case Dimension::kFrequency:
      return "\"1.33GHz\"";
    case Dimension::kFlopRate:
      return "\"250TFLOPS\"";
    case Dimension::kDuration:
      return "\"15ns\"";
  }
  return "";
}

std::optional<double> parse_quantity(std::string_view text, Dimension dimension, std::string* why) {
  const std::string_view trimmed = trim(text);
  double number = 0;
  const auto [end, error] =
      std::from_chars(trimmed.data(), trimmed.data() + trimmed.size(), number);
  if (error == std::errc::result_out_of_range) {
    *why = "its number is out of range (a number lies within +-1.8e308)";
    return std::nullopt;
  }
  if (error != std::errc() || !std::isfinite(number)) {
    *why = "it does not start with a number";
    return std::nullopt;
  }
  const std::string_view suffix = trim(std::string_view(end, trimmed.data() + trimmed.size()));
  if (suffix.empty()) {
    *why = "it has no unit";
    return std::nullopt;
  }
  for (const Unit& unit : kUnits) {
    if (unit.suffix != suffix)
      continue;
    if (unit.dimension != dimension) {
      *why = "'" + std::string(suffix) + "' is the unit of " + dimension_name(unit.dimension);
      return std::nullopt;
    }
    if (number < 0) {
      *why = "it is negative";
      return std::nullopt;
    }
    // A fractional unit divides by its whole reciprocal, so that "10us" is the double nearest
    // 10e-6, as the same figure written in the code is.
    return unit.scale < 1 ? number / std::round(1 / unit.scale) : number * unit.scale;
  }
  *why = "'" + std::string(suffix) + "' is not a unit ipusim knows";
  return std::nullopt;
}

namespace {

// The decimal units a quantity is written in, largest first (the binary and bit units read, but
// are not written).
bool written_unit(const Unit& unit, Dimension dimension) {
  return unit.dimension == dimension && unit.suffix.find('i') == std::string_view::npos &&
         unit.suffix.find("bps") == std::string_view::npos &&
         unit.suffix.find("bit") == std::string_view::npos && unit.suffix != "FLOP/s" &&
         unit.suffix != "KB" && unit.suffix != "KB/s" && unit.suffix != "\xC2\xB5s";
}

std::optional<std::string> exact_in(double value, const Unit& unit, Dimension dimension) {
  for (int digits = 1; digits <= 6; ++digits) {
    char mantissa[40];
    std::snprintf(mantissa, sizeof mantissa, "%.*g", digits, value / unit.scale);
    const std::string text = mantissa + std::string(unit.suffix);
    std::string why;
    if (text.find('e') == std::string::npos && parse_quantity(text, dimension, &why) == value)
      return text;
  }
  return std::nullopt;
}

}  // namespace

std::string format_quantity(double value, Dimension dimension) {
  std::vector<Unit> units;
  for (const Unit& unit : kUnits) {
    if (written_unit(unit, dimension))
      units.push_back(unit);
  }
  std::sort(units.begin(), units.end(),
            [](const Unit& a, const Unit& b) { return a.scale > b.scale; });
  for (const Unit& unit : units) {
    if (value >= unit.scale || unit.scale <= 1e-12) {
      if (auto text = exact_in(value, unit, dimension))
        return *text;
    }
  }
  char digits[40];
  std::snprintf(digits, sizeof digits, "%.17g", value);
  return digits + std::string(units.empty() ? "" : units.back().suffix);
}

}  // namespace ipusim::core
