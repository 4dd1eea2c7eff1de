#include "sim/sweep/sweep_summary.hpp"

#include <algorithm>
#include <cmath>

#include "sim/core/format.hpp"
#include "sim/report/run_metrics.hpp"

namespace ipusim::sim {

namespace {

// "fastest: KEY: ..." for the run with the highest throughput that fits in memory, or nothing.
std::string fastest_text(const SweepPlan& plan, const std::vector<SweepRun>& rows) {
  std::vector<const SweepRun*> ran;
  std::vector<const RunMetrics*> metrics;
  for (const auto& row : rows) {
    if (row.metrics) {
      ran.push_back(&row);
      metrics.push_back(&*row.metrics);
    }
  }
  const auto order = fastest_first(metrics);
  if (order.empty())
    return "";
  const SweepRun& best = *ran[order.front()];
  const RunMetrics& m = *best.metrics;
  return "fastest: " + plan.key(best.run) + ": " + with_commas(std::llround(m.throughput)) +
         " samples/s, step " + with_commas(m.step_cycles) + " cycles (" +
         fixed(m.step_seconds * 1e3, 4) + " ms), ramp overhead " + percent(m.ramp_overhead) + "\n";
}

}  // namespace

std::string summary_text(const SweepRequest& request, const SweepPlan& plan,
                         const SweepSummary& summary) {
  std::size_t invalid = 0;
  std::size_t out_of_memory = 0;
  for (const auto& row : summary.rows) {
    invalid += !row.error.empty();
    out_of_memory += row.metrics && !row.metrics->fits_in_memory;
  }
  std::string out =
      "ipusim sweep: " + request.config_path + ", " + with_commas(summary.runs) + " runs";
  if (request.shard != "1/1")
    out += " (shard " + request.shard + " of " + with_commas(plan.size()) + " runs)";
  out += "\n" + with_commas(summary.written) + " simulated, ";
  if (!request.csv_scratch)
    out += with_commas(summary.skipped) + " already in " + request.csv_path + "; ";
  out += with_commas(invalid) + " invalid (see the error column), " + with_commas(out_of_memory) +
         " out of memory\n";
  if (request.csv_scratch && !request.csv_printed)
    return out + fastest_text(plan, summary.rows) +
           "streamed the runs on the output as JSON lines\n";
  const std::string where =
      request.csv_printed ? "printed the CSV on the output" : "wrote " + request.csv_path;
  return out + fastest_text(plan, summary.rows) + where + " (one row per run, sorted by run)\n";
}

std::optional<core::ConfigError> none_valid(const SweepRequest& request,
                                            const SweepSummary& summary) {
  const auto valid = [](const SweepRun& run) { return run.error.empty(); };
  if (summary.rows.empty() || std::any_of(summary.rows.begin(), summary.rows.end(), valid))
    return std::nullopt;
  const SweepRun& first = summary.rows.front();
  return core::ConfigError(request.csv_scratch ? request.config_path : request.csv_path, "",
                           "none of the sweep's " + with_commas(std::int64_t(summary.rows.size())) +
                               " run(s) is valid; run " + std::to_string(first.run) + ": " +
                               first.error);
}

}  // namespace ipusim::sim
