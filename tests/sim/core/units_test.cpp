#include "sim/core/units.hpp"

#include <catch2/catch.hpp>

using namespace ipusim::core;

namespace {
double parse(const std::string& text, Dimension dimension) {
  std::string why;
  const auto value = parse_quantity(text, dimension, &why);
  REQUIRE(value.has_value());
  return *value;
}
std::string why_not(const std::string& text, Dimension dimension) {
  std::string why;
  CHECK_FALSE(parse_quantity(text, dimension, &why).has_value());
  return why;
}
}  // namespace

TEST_CASE("quantities with decimal and binary prefixes are read in base units") {
  CHECK(parse("1.33GHz", Dimension::kFrequency) == Approx(1.33e9));
  CHECK(parse("32GB/s", Dimension::kBandwidth) == 32e9);
  CHECK(parse("900MB", Dimension::kBytes) == 900e6);
  CHECK(parse("1KiB", Dimension::kBytes) == 1024);
  CHECK(parse("250TFLOPS", Dimension::kFlopRate) == 250e12);
  CHECK(parse("15ns", Dimension::kDuration) == Approx(15e-9));
  CHECK(parse("512Gbps", Dimension::kBandwidth) == 64e9);
  CHECK(parse(" 2 GB ", Dimension::kBytes) == 2e9);
}

// The nearest double to the figure, as the same figure written in the code: 10 x 1e-6 would be
// one unit in the last place below 10e-6.
TEST_CASE("a time in a fractional unit is the double nearest its figure") {
  CHECK(parse("10us", Dimension::kDuration) == 10e-6);
  CHECK(parse("450us", Dimension::kDuration) == 450e-6);
  CHECK(parse("15ns", Dimension::kDuration) == 15e-9);
  CHECK(parse("3ms", Dimension::kDuration) == 3e-3);
}

TEST_CASE("a quantity with the wrong unit, no unit or no number is refused with the reason") {
  CHECK(why_not("32GB", Dimension::kBandwidth) == "'GB' is the unit of a size");
  CHECK(why_not("900", Dimension::kBytes) == "it has no unit");
  CHECK(why_not("fast", Dimension::kFrequency) == "it does not start with a number");
  CHECK(why_not("1e400s", Dimension::kDuration) ==
        "its number is out of range (a number lies within +-1.8e308)");
  CHECK(why_not("3 parsecs", Dimension::kDuration) == "'parsecs' is not a unit ipusim knows");
  CHECK(why_not("-1GB", Dimension::kBytes) == "it is negative");
}

TEST_CASE("a quantity is written in the largest decimal unit that reads back exactly") {
  CHECK(format_quantity(1.33e9, Dimension::kFrequency) == "1.33GHz");
  CHECK(format_quantity(128e9 / 8 * 0.85, Dimension::kBandwidth) == "13.6GB/s");
  CHECK(format_quantity(62.5e12, Dimension::kFlopRate) == "62.5TFLOPS");
  CHECK(format_quantity(450e-6, Dimension::kDuration) == "450us");
  CHECK(format_quantity(7e6, Dimension::kBytes) == "7MB");
  // 624 KiB x 1472 tiles has no decimal unit in six digits, so it is written in bytes.
  CHECK(format_quantity(638976.0 * 1472, Dimension::kBytes) == "940572672B");
  CHECK(format_quantity(150, Dimension::kBytes) == "150B");
}
