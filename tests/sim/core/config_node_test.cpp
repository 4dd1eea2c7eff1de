#include "sim/core/config_node.hpp"

#include <catch2/catch.hpp>

#include "sim/core/config_file.hpp"
#include "sim/core/error.hpp"

using namespace ipusim::core;

namespace {
std::string error_of(const std::function<void(const ConfigNode&)>& read,
                     const nlohmann::json& value) {
  const auto document = ConfigDocument::from_json(value, "run.json");
  try {
    read(document.root());
  } catch (const ConfigError& error) {
    return error.what();
  }
  FAIL("no error was raised");
  return "";
}
}  // namespace

TEST_CASE("an unknown key names the file, the JSON path and the closest known key") {
  const auto message = error_of(
      [](const ConfigNode& root) {
        root.at("pipeline").expect_only_keys({"gradient_accumulation_count", "repeat_count"});
      },
      {{"pipeline", {{"gradient_acumulation_count", 8}}}});
  CHECK(message ==
        "run.json: at /pipeline/gradient_acumulation_count: unknown key "
        "'gradient_acumulation_count'; did you mean 'gradient_accumulation_count'?");
}

TEST_CASE("an unknown key unlike any known key lists the allowed keys") {
  const auto message = error_of(
      [](const ConfigNode& root) {
        root.expect_only_keys({"model", "pipeline"});
      },
      {{"zzz", 1}});
  CHECK(message ==
        "run.json: at /zzz: unknown key 'zzz'; the keys allowed here are 'model' or "
        "'pipeline'");
}

TEST_CASE("a value of the wrong JSON type says what was expected and what was found") {
  const auto message = error_of(
      [](const ConfigNode& root) { root.at("pipeline").at("repeat_count").as_positive_int(); },
      {{"pipeline", {{"repeat_count", "ten"}}}});
  CHECK(message ==
        "run.json: at /pipeline/repeat_count: expected an integer from 1 to "
        "1099511627776, found a string \"ten\"");
}

TEST_CASE("a missing required field is named") {
  const auto message =
      error_of([](const ConfigNode& root) { root.at("model"); }, nlohmann::json::object());
  CHECK(message == "run.json: at /: missing required field 'model'");
}

TEST_CASE("non-positive and overflowing counts are refused") {
  const auto zero =
      error_of([](const ConfigNode& root) { root.at("n").as_positive_int(); }, {{"n", 0}});
  CHECK(zero == "run.json: at /n: expected an integer from 1 to 1099511627776, found 0");
  const auto huge = error_of([](const ConfigNode& root) { root.at("n").as_positive_int(); },
                             {{"n", 18446744073709551615ULL}});
  CHECK(huge ==
        "run.json: at /n: expected an integer from 1 to 1099511627776, found 18446744073709551615");
}

TEST_CASE("a misspelt enumeration value suggests the closest allowed value") {
  const auto message = error_of(
      [](const ConfigNode& root) {
        root.at("s").as_enum({"grouped", "interleaved"});
      },
      {{"s", "interleavd"}});
  CHECK(message == "run.json: at /s: unknown value 'interleavd'; did you mean 'interleaved'?");
}

TEST_CASE("an unparsable unit explains the problem and shows the expected form") {
  const auto message =
      error_of([](const ConfigNode& root) { root.at("clock").as_quantity(Dimension::kFrequency); },
               {{"clock", "1.33GB"}});
  CHECK(message ==
        "run.json: at /clock: cannot read \"1.33GB\" as a frequency: 'GB' is the unit "
        "of a size (write it like \"1.33GHz\")");
}
