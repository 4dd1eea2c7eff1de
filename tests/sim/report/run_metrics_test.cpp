#include "sim/report/run_metrics.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <iterator>
#include <sstream>

#include "sim/core/error.hpp"
#include "tests/sim/report/report_fixture.hpp"
#include "tests/test_support.hpp"

using namespace ipusim;

namespace {

// The message of the config error `action` throws, or "no error".
const auto config_error = &testing::error_of<core::ConfigError>;

}  // namespace

TEST_CASE("the fastest run is the first of the highest throughput among those that fit") {
  sim::RunMetrics slow;
  slow.throughput = 10;
  slow.fits_in_memory = true;
  sim::RunMetrics fast = slow;
  fast.throughput = 20;
  sim::RunMetrics too_big = fast;
  too_big.throughput = 30;
  too_big.fits_in_memory = false;
  CHECK(sim::fastest_first({&slow, &too_big, &fast, &fast}) == std::vector<std::size_t>{2, 3, 0});
  CHECK(sim::fastest_first({&too_big}).empty());
}

TEST_CASE("metric cells read back give the same cells") {
  const std::vector<std::string> cells = {
      "159151", "0.000119660902", "2139351.880", "25000",    "100000",   "34000",
      "250",    "0.157000",       "0.950000",    "0.050000", "0.040000", "104460000",
      "410000", "true",           "1069675.940", "5000",     "0"};
  const sim::MetricsReader reader(sim::metric_columns(), "sweep.csv");
  CHECK(sim::metric_cells(reader.read(cells, 2)) == cells);
}

TEST_CASE("a sweep file's figures are read by their column names, in any order") {
  auto header = sim::metric_columns();
  auto cells = std::vector<std::string>(header.size(), "0");
  cells[13] = "true";  // fits_in_memory
  cells[2] = "123.500";
  for (const auto& extra : sim::per_ipu_columns(2))
    header.push_back(extra);
  cells.insert(cells.end(), {"0.250000", "0.750000", "1000", "2000"});
  std::reverse(header.begin(), header.end());
  std::reverse(cells.begin(), cells.end());
  const sim::MetricsReader reader(header, "sweep.csv");
  CHECK(reader.ipus() == 2);
  const auto metrics = reader.read(cells, 2);
  CHECK(metrics.throughput == 123.5);
  CHECK(metrics.fits_in_memory);
  CHECK(metrics.utilisation_per_ipu == std::vector<double>{0.25, 0.75});
  CHECK(metrics.peak_memory_bytes_per_ipu == std::vector<std::int64_t>{1000, 2000});
}

TEST_CASE("a sweep file without a metric column names the file and the column") {
  auto header = sim::metric_columns();
  header.erase(header.begin() + 1);  // step_seconds
  CHECK(config_error([&] { sim::MetricsReader(header, "old.csv"); }) ==
        "old.csv: its header has no column step_seconds; expected a CSV written by ipusim "
        "sweep, compare or plan");
  header = sim::metric_columns();
  header.push_back("utilisation_ipu0");
  CHECK(config_error([&] { sim::MetricsReader(header, "old.csv"); }) ==
        "old.csv: its header has no column peak_memory_bytes_ipu0; expected a CSV written by "
        "ipusim sweep, compare or plan");
}

TEST_CASE("a metric cell that is not a number names the file, the line and the column") {
  std::vector<std::string> cells(sim::metric_columns().size(), "1");
  cells.back() = "true";
  cells[2] = "fast";
  const sim::MetricsReader reader(sim::metric_columns(), "sweep.csv");
  CHECK(config_error([&] { reader.read(cells, 7); }) ==
        "sweep.csv: line 7: throughput_samples_per_second is 'fast', expected a number");
}

TEST_CASE("each metric column has its own key and a unit its field can hold") {
  std::vector<std::string> keys;
  for (const auto& column : sim::metric_table()) {
    keys.push_back(column.key);
    const bool integer = std::holds_alternative<std::int64_t sim::RunMetrics::*>(column.field) ||
                         std::holds_alternative<schedules::Phase>(column.field);
    const bool yes_no = std::holds_alternative<bool sim::RunMetrics::*>(column.field);
    INFO(column.key);
    CHECK(integer ==
          (column.unit == sim::MetricUnit::kCycles || column.unit == sim::MetricUnit::kBytes));
    CHECK(yes_no == (column.unit == sim::MetricUnit::kYesNo));
    CHECK(!column.heading.empty());
  }
  std::sort(keys.begin(), keys.end());
  CHECK(std::adjacent_find(keys.begin(), keys.end()) == keys.end());
}

TEST_CASE("a text table words each unit of the metric columns") {
  sim::RunMetrics m;
  m.step_cycles = 159151;
  m.step_seconds = 0.000119660902;
  m.throughput = 2139351.88;
  m.phase_cycles[schedules::index(schedules::Phase::kMain)] = 100000;
  m.ramp_overhead = 0.157;
  m.peak_memory_bytes_max = 104460000;
  m.fits_in_memory = false;
  const auto text = [&](const std::string& key) {
    return sim::metric_text(sim::metric_column(key), m);
  };
  CHECK(text("step_cycles") == "159,151 cycles");
  CHECK(text("step_seconds") == "0.1197 ms");
  CHECK(text("throughput_samples_per_second") == "2,139,352 samples/s");
  CHECK(text("main_cycles") == "100,000 cycles");
  CHECK(text("ramp_overhead") == "15.7%");
  CHECK(text("peak_memory_bytes_max") == "104.46 MB");
  CHECK(text("fits_in_memory") == "NO");
  CHECK(sim::metric_column("ramp_overhead").heading == "Ramp overhead");
}

TEST_CASE("a run's JSON holds every metric column under its key, unrounded") {
  const auto run = testing::record(testing::kTf1Config);
  const auto json = sim::to_json(run->report);
  const auto metrics = sim::run_metrics(run->report);
  for (const auto& column : sim::metric_table()) {
    INFO(column.key);
    CHECK(json.contains(column.key));
  }
  CHECK(json["throughput_per_ipu"].get<double>() == metrics.throughput / 2);
  CHECK(json["utilisation_min"].get<double>() == metrics.utilisation_min);
  CHECK(json["main_cycles"] == json["phases"]["main"]["cycles"]);
}

// The README's CSV table documents each metric column, in the table's order: a column added
// without its line there fails here.
TEST_CASE("the README's CSV table names the metric columns in their order") {
  const std::string readme = testing::read_file("README.md");
  const auto begin = readme.find("\n#### The CSV\n");
  REQUIRE(begin != std::string::npos);
  const auto end = readme.find("\n\n", readme.find("\n|", begin) + 1);
  std::istringstream table(readme.substr(begin, end - begin));
  std::vector<std::string> named;
  for (std::string line; std::getline(table, line);) {
    if (line.rfind("| `", 0) != 0)
      continue;
    const std::string first = line.substr(0, line.find(" | "));
    for (auto tick = first.find('`'); tick != std::string::npos;
         tick = first.find('`', first.find('`', tick + 1) + 1))
      named.push_back(first.substr(tick + 1, first.find('`', tick + 1) - tick - 1));
  }
  std::vector<std::string> metrics;
  std::copy_if(named.begin(), named.end(), std::back_inserter(metrics), [](const auto& name) {
    const auto& keys = sim::metric_columns();
    return std::find(keys.begin(), keys.end(), name) != keys.end();
  });
  CHECK(metrics == sim::metric_columns());
}
