#include "sim/report/run_metrics.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <type_traits>
#include <utility>
#include <variant>

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"

namespace ipusim::sim {
namespace {

// Reads one cell of a sweep file back; `what` names its column in the error.
class CellReader {
 public:
  CellReader(const std::string& file, std::size_t line) : file_(file), line_(line) {}

  std::int64_t integer(const std::string& cell, const std::string& what) const {
    std::int64_t value = 0;
    const char* end = cell.data() + cell.size();
    const auto [stop, error] = std::from_chars(cell.data(), end, value);
    if (cell.empty() || error != std::errc() || stop != end)
      fail(cell, what, "an integer");
    return value;
  }

  double number(const std::string& cell, const std::string& what) const {
    std::size_t used = 0;
    double value = 0;
    try {
      value = std::stod(cell, &used);
    } catch (const std::exception&) {
      fail(cell, what, "a number");
    }
    if (used != cell.size())
      fail(cell, what, "a number");
    return value;
  }

  bool boolean(const std::string& cell, const std::string& what) const {
    if (cell != "true" && cell != "false")
      fail(cell, what, "true or false");
    return cell == "true";
  }

 private:
  [[noreturn]] void fail(const std::string& cell, const std::string& what,
                         const std::string& expected) const {
    throw core::ConfigError(
        file_, "",
        "line " + std::to_string(line_) + ": " + what + " is '" + cell + "', expected " + expected);
  }

  const std::string& file_;
  std::size_t line_;
};

using MetricValue = std::variant<std::int64_t, double, bool>;

MetricValue value_of(const MetricColumn& column, const RunMetrics& m) {
  return std::visit(
      [&](const auto& field) -> MetricValue {
        if constexpr (std::is_same_v<std::decay_t<decltype(field)>, schedules::Phase>)
          return m.phase_cycles[schedules::index(field)];
        else
          return m.*field;
      },
      column.field);
}

// Reads `cell` into the field of `column`, as metric_cells wrote it.
void read_cell(const MetricColumn& column, const std::string& cell, const CellReader& read,
               RunMetrics& m) {
  std::visit(
      [&](const auto& field) {
        using F = std::decay_t<decltype(field)>;
        if constexpr (std::is_same_v<F, schedules::Phase>)
          m.phase_cycles[schedules::index(field)] = read.integer(cell, column.key);
        else if constexpr (std::is_same_v<F, std::int64_t RunMetrics::*>)
          m.*field = read.integer(cell, column.key);
        else if constexpr (std::is_same_v<F, double RunMetrics::*>)
          m.*field = read.number(cell, column.key);
        else
          m.*field = read.boolean(cell, column.key);
      },
      column.field);
}

// The decimals a CSV gives a figure that is not an integer.
int decimals(MetricUnit unit) {
  switch (unit) {
    case MetricUnit::kSeconds:
      return 12;
    case MetricUnit::kSamplesPerSecond:
      return 3;
    default:
      return 6;
  }
}

bool is_weight_update(const MetricColumn& column) {
  return column.field == MetricField{schedules::Phase::kWeightUpdate};
}

}  // namespace

RunMetrics run_metrics(const RunReport& report) {
  const auto& f = report.figures;
  RunMetrics m;
  m.step_cycles = report.replay.step_cycles;
  m.step_seconds = f.step_seconds;
  m.throughput = f.throughput;
  m.phase_cycles = report.replay.phase_cycles;
  m.ramp_overhead = f.ramp_overhead;
  m.bubble_fraction = f.bubble_fraction;
  m.utilisation_mean = f.utilisation_mean;
  m.utilisation_min = f.utilisation_min;
  m.peak_memory_bytes_max = f.peak_memory_bytes_max;
  m.peak_stash_bytes_max = f.peak_stash_bytes_max;
  m.fits_in_memory = f.fits_in_memory;
  m.throughput_per_ipu = f.throughput_per_ipu;
  m.collective_cycles = f.collective_cycles;
  m.input_wait_cycles = f.input_wait_cycles;
  for (std::size_t i = 0; i < f.ipus.size(); ++i) {
    m.utilisation_per_ipu.push_back(f.ipus[i].utilisation);
    m.peak_memory_bytes_per_ipu.push_back(report.replay.ipus[i].peak_memory_bytes);
  }
  return m;
}

const std::vector<MetricColumn>& metric_table() {
  using enum MetricUnit;
  using M = RunMetrics;
  static const std::vector<MetricColumn> table = [] {
    std::vector<MetricColumn> t = {
        {"step_cycles", "Step", kCycles, &M::step_cycles},
        {"step_seconds", "Step time", kSeconds, &M::step_seconds},
        {"throughput_samples_per_second", "Throughput", kSamplesPerSecond, &M::throughput}};
    for (const auto phase : schedules::kPhases) {
      t.push_back({std::string(schedules::phase_key(phase)) + "_cycles",
                   schedules::phase_heading(phase), kCycles, phase});
    }
    t.insert(
        t.end(),
        {{"ramp_overhead", "Ramp overhead", kShare, &M::ramp_overhead},
         {"bubble_fraction", "Bubble", kShare, &M::bubble_fraction},
         {"utilisation_mean", "Utilisation (mean of IPUs)", kShare, &M::utilisation_mean},
         {"utilisation_min", "Utilisation (least busy IPU)", kShare, &M::utilisation_min},
         {"peak_memory_bytes_max", "Peak memory (fullest IPU)", kBytes, &M::peak_memory_bytes_max},
         {"peak_stash_bytes_max", "Peak stash (fullest IPU)", kBytes, &M::peak_stash_bytes_max},
         {"fits_in_memory", "Fits in memory", kYesNo, &M::fits_in_memory},
         {"throughput_per_ipu", "Throughput per IPU", kSamplesPerSecond, &M::throughput_per_ipu},
         {"collective_cycles", "Collectives", kCycles, &M::collective_cycles},
         {"input_wait_cycles", "Wait for host input", kCycles, &M::input_wait_cycles}});
    return t;
  }();
  return table;
}

const MetricColumn& metric_column(const std::string& key) {
  const auto& table = metric_table();
  const auto found = std::find_if(table.begin(), table.end(),
                                  [&](const MetricColumn& column) { return column.key == key; });
  IPUSIM_CHECK(found != table.end());
  return *found;
}

const std::vector<std::string>& metric_columns() {
  static const std::vector<std::string> columns = [] {
    std::vector<std::string> keys;
    for (const auto& column : metric_table())
      keys.push_back(column.key);
    return keys;
  }();
  return columns;
}

std::vector<std::string> metric_cells(const RunMetrics& m) {
  std::vector<std::string> cells;
  for (const auto& column : metric_table()) {
    cells.push_back(std::visit(
        [&](const auto& value) -> std::string {
          using T = std::decay_t<decltype(value)>;
          if constexpr (std::is_same_v<T, bool>)
            return value ? "true" : "false";
          else if constexpr (std::is_same_v<T, std::int64_t>)
            return std::to_string(value);
          else
            return fixed(value, decimals(column.unit));
        },
        value_of(column, m)));
  }
  return cells;
}

std::string metric_text(const MetricColumn& column, const RunMetrics& m) {
  const MetricValue value = value_of(column, m);
  switch (column.unit) {
    case MetricUnit::kCycles:
      return with_commas(std::get<std::int64_t>(value)) + " cycles";
    case MetricUnit::kBytes:
      return fixed(double(std::get<std::int64_t>(value)) / 1e6, 2) + " MB";
    case MetricUnit::kSeconds:
      return fixed(std::get<double>(value) * 1e3, 4) + " ms";
    case MetricUnit::kSamplesPerSecond:
      return with_commas(std::llround(std::get<double>(value))) + " samples/s";
    case MetricUnit::kShare:
      return percent(std::get<double>(value));
    case MetricUnit::kYesNo:
      return std::get<bool>(value) ? "yes" : "NO";
  }
  IPUSIM_CHECK(false);
  return "";
}

std::vector<const MetricColumn*> table_columns(bool any_training) {
  std::vector<const MetricColumn*> columns;
  for (const MetricColumn& column : metric_table()) {
    if (any_training || !is_weight_update(column))
      columns.push_back(&column);
  }
  return columns;
}

std::string table_text(const MetricColumn& column, const RunMetrics& metrics, bool training) {
  return !training && is_weight_update(column) ? "none (inference)" : metric_text(column, metrics);
}

std::vector<MetricUnit> metric_units(std::size_t ipus) {
  std::vector<MetricUnit> units;
  for (const auto& column : metric_table())
    units.push_back(column.unit);
  units.insert(units.end(), ipus, MetricUnit::kShare);
  units.insert(units.end(), ipus, MetricUnit::kBytes);
  return units;
}

nlohmann::ordered_json metrics_json(const RunMetrics& m) {
  const auto& names = metric_columns();
  const auto cells = metric_cells(m);
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < names.size(); ++i)
    out[names[i]] = nlohmann::ordered_json::parse(cells[i]);
  const auto per_ipu = per_ipu_cells(m, m.utilisation_per_ipu.size());
  const auto ipus = std::ptrdiff_t(m.utilisation_per_ipu.size());
  out["utilisation_per_ipu"] = nlohmann::ordered_json::array();
  out["peak_memory_bytes_per_ipu"] = nlohmann::ordered_json::array();
  for (auto cell = per_ipu.begin(); cell != per_ipu.begin() + ipus; ++cell)
    out["utilisation_per_ipu"].push_back(nlohmann::ordered_json::parse(*cell));
  for (auto cell = per_ipu.begin() + ipus; cell != per_ipu.end(); ++cell)
    out["peak_memory_bytes_per_ipu"].push_back(nlohmann::ordered_json::parse(*cell));
  return out;
}

void add_metric_values(const RunMetrics& metrics, nlohmann::json& out) {
  for (const MetricColumn& column : metric_table())
    std::visit([&](auto value) { out[column.key] = value; }, value_of(column, metrics));
}

std::vector<std::string> per_ipu_columns(std::size_t ipus) {
  std::vector<std::string> names;
  for (const char* metric : {"utilisation_ipu", "peak_memory_bytes_ipu"}) {
    for (std::size_t ipu = 0; ipu < ipus; ++ipu)
      names.push_back(metric + std::to_string(ipu));
  }
  return names;
}

std::vector<std::string> per_ipu_cells(const RunMetrics& m, std::size_t ipus) {
  std::vector<std::string> cells(2 * ipus);
  for (std::size_t ipu = 0; ipu < std::min(ipus, m.utilisation_per_ipu.size()); ++ipu) {
    cells[ipu] = fixed(m.utilisation_per_ipu[ipu], 6);
    cells[ipus + ipu] = std::to_string(m.peak_memory_bytes_per_ipu[ipu]);
  }
  return cells;
}

namespace {

// Where column `name` is in `header`; a header without it is the file's error.
std::size_t column_at(const std::vector<std::string>& header, const std::string& name,
                      const std::string& file) {
  const auto found = std::find(header.begin(), header.end(), name);
  if (found == header.end())
    throw core::ConfigError(file, "",
                            "its header has no column " + name +
                                "; expected a CSV written by ipusim sweep, compare or plan");
  return std::size_t(found - header.begin());
}

bool has_column(const std::vector<std::string>& header, const std::string& name) {
  return std::find(header.begin(), header.end(), name) != header.end();
}

}  // namespace

MetricsReader::MetricsReader(const std::vector<std::string>& header, std::string file)
    : file_(std::move(file)) {
  for (const auto& name : metric_columns())
    metric_at_.push_back(column_at(header, name, file_));
  for (std::size_t ipu = 0; has_column(header, "utilisation_ipu" + std::to_string(ipu)); ++ipu) {
    const auto names = per_ipu_columns(ipu + 1);
    per_ipu_.push_back({column_at(header, names[ipu], file_), names[ipu],
                        column_at(header, names[2 * ipu + 1], file_), names[2 * ipu + 1]});
  }
}

RunMetrics MetricsReader::read(const std::vector<std::string>& row, std::size_t line) const {
  const CellReader read(file_, line);
  const auto& table = metric_table();
  RunMetrics m;
  for (std::size_t c = 0; c < table.size(); ++c)
    read_cell(table[c], row.at(metric_at_[c]), read, m);
  for (const auto& ipu : per_ipu_) {
    const auto& utilisation = row.at(ipu.utilisation_at);
    if (utilisation.empty())
      break;  // the run has fewer IPUs
    m.utilisation_per_ipu.push_back(read.number(utilisation, ipu.utilisation_name));
    m.peak_memory_bytes_per_ipu.push_back(read.integer(row.at(ipu.peak_at), ipu.peak_name));
  }
  return m;
}

std::vector<std::size_t> fastest_first(const std::vector<const RunMetrics*>& runs) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i]->fits_in_memory)
      order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return runs[x]->throughput > runs[y]->throughput;
  });
  return order;
}

}  // namespace ipusim::sim
