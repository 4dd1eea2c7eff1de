#pragma once
// Quantities written as strings with units in configs ("1.33GHz", "32GB/s", "900MB",
// "250TFLOPS", "15ns"). Decimal prefixes are powers of 1000; KiB/MiB/GiB are powers of 1024.
// Results are in base SI units: bytes, bytes per second, hertz, FLOP per second, seconds.

#include <optional>
#include <string>
#include <string_view>

namespace ipusim::core {

// What a quantity measures; each has its own units and base SI unit (see the top).
enum class Dimension { kBytes, kBandwidth, kFrequency, kFlopRate, kDuration };

const char* dimension_name(Dimension dimension);

// An example string for error messages, such as "32GB/s".
const char* dimension_example(Dimension dimension);

// The value in base units, or nullopt with `why` set when the text is not a quantity of
// that dimension.
std::optional<double> parse_quantity(std::string_view text, Dimension dimension, std::string* why);

// `value` (base units) as the text a config gives it, in the largest decimal unit that says it in
// at most six significant digits and reads back as exactly `value` ("1.33GHz", "13.6GB/s",
// "450us"); in the base unit's digits when none does ("940572672B").
std::string format_quantity(double value, Dimension dimension);

}  // namespace ipusim::core
