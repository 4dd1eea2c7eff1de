#include "sim/calibrate/measurements.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <tuple>

#include "schedules/task.hpp"
#include "sim/core/config_file.hpp"
#include "sim/core/config_node.hpp"
#include "sim/core/csv.hpp"
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/core/json_text.hpp"

namespace ipusim::sim {
namespace {

// Far more than a profiling campaign yields; bounds the fit's matrices, a row per measurement.
constexpr std::size_t kMaxMeasurements = 100'000;
// The longest run ipusim simulates.
constexpr double kMaxCycles = 4611686018427387904.0;  // 2^62

const std::vector<std::string> kColumns = {"set", "stage", "forward_cycles", "backward_cycles",
                                           "step_cycles"};
// A CSV may start with a config column; a JSON entry may have a "config" key.
constexpr const char* kConfigColumn = "config";

// One entry of either format before its shape is checked: what its cells or keys give.
struct Entry {
  std::string config;
  std::vector<std::string> set;
  std::optional<int> stage;
  std::optional<double> forward;
  std::optional<double> backward;
  std::optional<double> step;
  MeasurementSource source;
};

// User text in a message, quoted and cut short: a cell may be megabytes long.
std::string in_quotes(const std::string& text) {
  return "'" + (text.size() > 60 ? text.substr(0, 57) + "..." : text) + "'";
}

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string::npos)
    return "";
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

// A variant's config file, relative to the measurement file's folder unless absolute.
std::string config_path(const std::string& text, const MeasurementSource& source,
                        const std::string& field) {
  const std::string path = trim(text);
  if (path.empty())
    source.fail(field, "expected the path of a config file, found an empty text");
  const std::filesystem::path given(path);
  if (given.is_absolute())
    return path;
  return (std::filesystem::path(source.file).parent_path() / given).lexically_normal().string();
}

void check_cycles(double cycles, const std::string& shown, const MeasurementSource& source,
                  const std::string& field) {
  // 2^62 - 1 is 2^62 as a double, so the bound is 2^62 itself.
  if (!(cycles >= 1 && cycles <= kMaxCycles))
    source.fail(field, "expected a number of cycles from 1 to 2^62, found " + shown);
}

// An override as --set takes it. The fit moves the cost model's parameters for every variant
// at once, so a variant may not set them.
std::string checked_override(const std::string& text, const MeasurementSource& source,
                             const std::string& field) {
  const auto equals = text.find('=');
  if (equals == std::string::npos || equals == 0) {
    const std::string expected =
        "expected PATH=VALUE as --set takes it, such as pipeline.micro_batch_size=8, found ";
    source.fail(field, expected + in_quotes(text));
  }
  const std::string pointer = core::to_json_pointer(text.substr(0, equals));
  if (pointer == "/hardware/operations" || pointer.rfind("/hardware/operations/", 0) == 0) {
    source.fail(field, in_quotes(text) +
                           " sets a parameter of the cost model, which the fit moves: every "
                           "variant shares the fitted values");
  }
  return text;
}

// The measurements an entry gives: a stage's passes, or the step.
void add_entry(const Entry& entry, std::vector<Measurement>& out) {
  const auto& source = entry.source;
  if (entry.stage) {
    if (entry.step)
      source.fail("step_cycles", "a step's cycles take an entry of their own, without a stage");
    if (!entry.forward && !entry.backward)
      source.fail("stage", "expected the stage's forward_cycles, backward_cycles or both");
    if (entry.forward)
      out.push_back(
          {entry.set, Measured::kForward, *entry.stage, *entry.forward, source, entry.config});
    if (entry.backward)
      out.push_back(
          {entry.set, Measured::kBackward, *entry.stage, *entry.backward, source, entry.config});
  } else {
    const std::string why = "a pass's cycles belong to a stage: give its index in stage";
    if (entry.forward)
      source.fail("forward_cycles", why);
    if (entry.backward)
      source.fail("backward_cycles", why);
    if (!entry.step)
      source.fail("",
                  "expected step_cycles, or a stage with its forward_cycles or backward_cycles");
    out.push_back({entry.set, Measured::kStep, -1, *entry.step, source, entry.config});
  }
  if (out.size() > kMaxMeasurements) {
    source.fail("", "the file holds more than " + with_commas(std::int64_t(kMaxMeasurements)) +
                        " measurements, the most ipusim fits");
  }
}

std::optional<double> csv_cycles(const std::string& cell, const MeasurementSource& source,
                                 const std::string& field) {
  const std::string text = trim(cell);
  if (text.empty())
    return std::nullopt;
  double cycles = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), cycles);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(cycles))
    source.fail(field, "expected a number of cycles, found " + in_quotes(text));
  check_cycles(cycles, in_quotes(text), source, field);
  return cycles;
}

std::optional<int> csv_stage(const std::string& cell, const MeasurementSource& source) {
  const std::string text = trim(cell);
  if (text.empty())
    return std::nullopt;
  int stage = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), stage);
  if (error != std::errc() || end != text.data() + text.size() || stage < 0)
    source.fail("stage", "expected a stage index (an integer from 0), found " + in_quotes(text));
  return stage;
}

std::string header_text() {
  std::string text;
  for (const auto& column : kColumns)
    text += (text.empty() ? "" : ",") + column;
  return text;
}

void read_csv_row(std::vector<std::string> cells, bool config_column,
                  const MeasurementSource& source, std::vector<Measurement>& out) {
  Entry entry;
  entry.source = source;
  const std::size_t columns = kColumns.size() + (config_column ? 1 : 0);
  if (cells.size() != columns) {
    entry.source.fail("", "expected " + std::to_string(columns) + " cells (" +
                              (config_column ? std::string(kConfigColumn) + "," : "") +
                              header_text() + "), found " + std::to_string(cells.size()));
  }
  if (config_column) {
    if (!cells[0].empty())
      entry.config = config_path(cells[0], source, kConfigColumn);
    cells.erase(cells.begin());
  }
  std::size_t start = 0;
  for (std::size_t end; start <= cells[0].size(); start = end + 1) {
    end = std::min(cells[0].find(';', start), cells[0].size());
    const std::string item = trim(cells[0].substr(start, end - start));
    if (!item.empty())
      entry.set.push_back(checked_override(item, entry.source, "set"));
  }
  entry.stage = csv_stage(cells[1], entry.source);
  entry.forward = csv_cycles(cells[2], entry.source, "forward_cycles");
  entry.backward = csv_cycles(cells[3], entry.source, "backward_cycles");
  entry.step = csv_cycles(cells[4], entry.source, "step_cycles");
  add_entry(entry, out);
}

std::vector<Measurement> read_csv(const std::string& path, const std::string& text) {
  std::vector<Measurement> out;
  // Spreadsheets often start a CSV with a UTF-8 byte order mark.
  const std::size_t bom = text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;
  bool header = false;
  bool config_column = false;
  std::size_t line_number = 0;
  for (std::size_t start = bom, end; start < text.size(); start = end + 1) {
    end = std::min(text.find('\n', start), text.size());
    std::string line = text.substr(start, end - start);
    ++line_number;
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (trim(line).empty())
      continue;
    auto cells = core::split_csv_line(line, path, line_number);
    for (auto& cell : cells)
      cell = trim(cell);
    if (header) {
      read_csv_row(std::move(cells), config_column, {path, "", line_number}, out);
      continue;
    }
    config_column = !cells.empty() && cells[0] == kConfigColumn;
    if (std::vector<std::string>(cells.begin() + (config_column ? 1 : 0), cells.end()) !=
        kColumns) {
      throw core::ConfigError(path, "",
                              "line " + std::to_string(line_number) + ": expected the header " +
                                  header_text() + " (optionally after a config column), found " +
                                  in_quotes(line));
    }
    header = true;
  }
  return out;
}

std::optional<double> json_cycles(const core::ConfigNode& item, const std::string& key,
                                  const MeasurementSource& source) {
  const auto node = item.find(key);
  if (!node)
    return std::nullopt;
  const double cycles = node->as_number();
  check_cycles(cycles, node->json().dump(), source, key);
  return cycles;
}

void read_json_entry(const core::ConfigNode& item, std::vector<Measurement>& out) {
  std::vector<std::string> keys = kColumns;
  keys.push_back(kConfigColumn);
  item.expect_only_keys(keys);
  Entry entry;
  entry.source = {item.file(), item.pointer(), 0};
  if (const auto config = item.find(kConfigColumn))
    entry.config = config_path(config->as_string(), entry.source, kConfigColumn);
  if (const auto set = item.find("set")) {
    const auto items = set->items();
    for (std::size_t i = 0; i < items.size(); ++i)
      entry.set.push_back(
          checked_override(items[i].as_string(), entry.source, "set/" + std::to_string(i)));
  }
  if (const auto stage = item.find("stage"))
    entry.stage = int(stage->as_int(0, 1 << 20));
  entry.forward = json_cycles(item, "forward_cycles", entry.source);
  entry.backward = json_cycles(item, "backward_cycles", entry.source);
  entry.step = json_cycles(item, "step_cycles", entry.source);
  add_entry(entry, out);
}

std::vector<Measurement> read_json(const std::string& path, const std::string& text) {
  const auto json = core::parse_json_text(text, path);
  core::Origins origins;
  origins.record("", path);
  const core::ConfigNode root(json, "", origins);
  root.expect_only_keys({"measurements"});
  const auto list = root.at("measurements");
  if (!list.is_array())
    list.fail("expected a list of measurements");
  std::vector<Measurement> out;
  for (const auto& item : list.items())
    read_json_entry(item, out);
  return out;
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The column (CSV) or key (JSON) a measurement's cycles came from.
std::string field_of(Measured what) {
  return kColumns[what == Measured::kForward ? 2 : what == Measured::kBackward ? 3 : 4];
}

// Where a measurement was read, for a message about another: "line 3" or "/measurements/2".
std::string place_of(const MeasurementSource& source) {
  return source.line == 0 ? source.pointer : "line " + std::to_string(source.line);
}

// Refuses two measurements of the same thing (variant, and stage and pass or step) that
// disagree: the fit would be asked for two values at once. Equal repeats are kept.
void refuse_contradictions(const std::vector<Measurement>& measurements) {
  std::map<std::tuple<std::string, std::vector<std::string>, Measured, int>, const Measurement*>
      first;
  for (const auto& m : measurements) {
    const auto [found, added] =
        first.emplace(std::make_tuple(m.config, m.set, m.what, m.stage), &m);
    if (added || found->second->cycles == m.cycles)
      continue;
    const Measurement& earlier = *found->second;
    char value[96];
    std::snprintf(value, sizeof value, "%.17g at %s", earlier.cycles,
                  place_of(earlier.source).c_str());
    m.source.fail(field_of(m.what),
                  "this config variant's " + describe(m) + " was measured as " + value +
                      "; expected one value per variant and measurement (give the mean of "
                      "repeated measurements)");
  }
}

}  // namespace

void MeasurementSource::fail(const std::string& field, const std::string& message) const {
  if (line == 0)
    throw core::ConfigError(file, pointer + (field.empty() ? "" : "/" + field), message);
  const std::string where = "line " + std::to_string(line);
  throw core::ConfigError(file, "",
                          where + (field.empty() ? "" : ", column " + field) + ": " + message);
}

std::string describe(const Measurement& measurement) {
  switch (measurement.what) {
    case Measured::kForward:
      return "stage " + std::to_string(measurement.stage) + " " +
             std::string(schedules::to_string(schedules::Op::kForward));
    case Measured::kBackward:
      return "stage " + std::to_string(measurement.stage) + " " +
             std::string(schedules::to_string(schedules::Op::kBackward));
    case Measured::kStep:
      return "step";
  }
  return "?";
}

std::vector<Measurement> read_measurements(const std::string& path) {
  const bool csv = ends_with(path, ".csv");
  if (!csv && !ends_with(path, ".json"))
    throw core::ConfigError(path, "", "expected a measurement file named *.csv or *.json");
  std::string text;
  if (const auto problem = core::read_regular_file(path, &text))
    throw core::ConfigError(path, "", "cannot read the measurement file: " + *problem);
  auto measurements = csv ? read_csv(path, text) : read_json(path, text);
  if (measurements.empty())
    throw core::ConfigError(path, "", "expected at least one measurement, found none");
  refuse_contradictions(measurements);
  return measurements;
}

}  // namespace ipusim::sim
