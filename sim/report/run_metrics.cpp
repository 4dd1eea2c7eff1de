#include "sim/report/run_metrics.hpp"

#include <algorithm>
#include <charconv>
#include <utility>

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

const std::vector<std::string>& metric_columns() {
  static const std::vector<std::string> columns = [] {
    std::vector<std::string> names = {"step_cycles", "step_seconds",
                                      "throughput_samples_per_second"};
    for (const auto phase : schedules::kPhases)
      names.push_back(std::string(schedules::phase_key(phase)) + "_cycles");
    for (const char* name :
         {"ramp_overhead", "bubble_fraction", "utilisation_mean", "utilisation_min",
          "peak_memory_bytes_max", "peak_stash_bytes_max", "fits_in_memory", "throughput_per_ipu",
          "collective_cycles", "input_wait_cycles"})
      names.push_back(name);
    return names;
  }();
  return columns;
}

std::vector<std::string> metric_cells(const RunMetrics& m) {
  return {std::to_string(m.step_cycles),
          fixed(m.step_seconds, 12),
          fixed(m.throughput, 3),
          std::to_string(m.phase_cycles[schedules::index(schedules::Phase::kRampUp)]),
          std::to_string(m.phase_cycles[schedules::index(schedules::Phase::kMain)]),
          std::to_string(m.phase_cycles[schedules::index(schedules::Phase::kRampDown)]),
          std::to_string(m.phase_cycles[schedules::index(schedules::Phase::kWeightUpdate)]),
          fixed(m.ramp_overhead, 6),
          fixed(m.bubble_fraction, 6),
          fixed(m.utilisation_mean, 6),
          fixed(m.utilisation_min, 6),
          std::to_string(m.peak_memory_bytes_max),
          std::to_string(m.peak_stash_bytes_max),
          m.fits_in_memory ? "true" : "false",
          fixed(m.throughput_per_ipu, 3),
          std::to_string(m.collective_cycles),
          std::to_string(m.input_wait_cycles)};
}

std::vector<MetricUnit> metric_units(std::size_t ipus) {
  using enum MetricUnit;
  std::vector<MetricUnit> units = {kCycles, kSeconds, kSamplesPerSecond};
  units.insert(units.end(), schedules::kPhases.size(), kCycles);
  units.insert(units.end(), {kShare, kShare, kShare, kShare, kBytes, kBytes, kYesNo,
                             kSamplesPerSecond, kCycles, kCycles});
  units.insert(units.end(), ipus, kShare);
  units.insert(units.end(), ipus, kBytes);
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
  for (std::size_t ipu = 0; has_column(header, per_ipu_columns(ipu + 1)[ipu]); ++ipu) {
    const auto names = per_ipu_columns(ipu + 1);
    utilisation_at_.push_back(column_at(header, names[ipu], file_));
    peak_at_.push_back(column_at(header, names[2 * ipu + 1], file_));
  }
}

RunMetrics MetricsReader::read(const std::vector<std::string>& row, std::size_t line) const {
  const CellReader read(file_, line);
  const auto& name = metric_columns();
  auto cell = [&](std::size_t column) -> const std::string& { return row.at(metric_at_[column]); };
  RunMetrics m;
  m.step_cycles = read.integer(cell(0), name[0]);
  m.step_seconds = read.number(cell(1), name[1]);
  m.throughput = read.number(cell(2), name[2]);
  for (std::size_t phase = 0; phase < m.phase_cycles.size(); ++phase)
    m.phase_cycles[phase] = read.integer(cell(3 + phase), name[3 + phase]);
  m.ramp_overhead = read.number(cell(7), name[7]);
  m.bubble_fraction = read.number(cell(8), name[8]);
  m.utilisation_mean = read.number(cell(9), name[9]);
  m.utilisation_min = read.number(cell(10), name[10]);
  m.peak_memory_bytes_max = read.integer(cell(11), name[11]);
  m.peak_stash_bytes_max = read.integer(cell(12), name[12]);
  m.fits_in_memory = read.boolean(cell(13), name[13]);
  m.throughput_per_ipu = read.number(cell(14), name[14]);
  m.collective_cycles = read.integer(cell(15), name[15]);
  m.input_wait_cycles = read.integer(cell(16), name[16]);
  for (std::size_t ipu = 0; ipu < utilisation_at_.size() && !row.at(utilisation_at_[ipu]).empty();
       ++ipu) {
    const auto names = per_ipu_columns(ipu + 1);
    m.utilisation_per_ipu.push_back(read.number(row.at(utilisation_at_[ipu]), names[ipu]));
    m.peak_memory_bytes_per_ipu.push_back(read.integer(row.at(peak_at_[ipu]), names[2 * ipu + 1]));
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
