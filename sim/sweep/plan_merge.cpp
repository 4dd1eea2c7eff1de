// `ipusim plan --merge`: the CSV files of a sharded plan ranked together
// (sim/sweep/planner.hpp, merge_plan_shards).

#include <algorithm>
#include <filesystem>

#include "sim/core/error.hpp"
#include "sim/report/run_metrics.hpp"
#include "sim/sweep/planner_internal.hpp"
#include "sim/sweep/sweep_csv.hpp"

namespace ipusim::sim {
namespace {

using namespace plan_detail;

// One row of a shard's CSV, with where it came from for errors.
struct ShardRow {
  std::vector<std::string> cells;
  RunMetrics metrics;
  std::string file;
  std::size_t line = 0;
};

// Plan's columns followed by the per-IPU columns of some number of IPUs.
bool is_plan_header(const std::vector<std::string>& header) {
  const auto& columns = plan_csv_columns();
  if (header.size() < columns.size() || (header.size() - columns.size()) % 2 != 0 ||
      !std::equal(columns.begin(), columns.end(), header.begin()))
    return false;
  const auto ipu_columns = per_ipu_columns((header.size() - columns.size()) / 2);
  return std::equal(ipu_columns.begin(), ipu_columns.end(),
                    header.begin() + std::ptrdiff_t(columns.size()));
}

std::vector<ShardRow> read_shard_rows(const std::vector<std::string>& paths) {
  std::vector<ShardRow> rows;
  for (const auto& path : paths) {
    if (!std::filesystem::is_regular_file(path))
      throw core::ConfigError(path, "",
                              "no such file: expected the CSV a plan --shard run wrote "
                              "with --csv");
    const auto file = read_sweep_csv(path);
    if (!is_plan_header(file.table.columns))
      throw core::ConfigError(path, "",
                              "expected the CSV of ipusim plan --csv, whose header "
                              "starts rank,splits,ipus_per_replica; this header is not "
                              "plan's");
    const MetricsReader reader(file.table.columns, path);
    for (std::size_t i = 0; i < file.table.rows.size(); ++i) {
      const auto& cells = file.table.rows[i];
      rows.push_back({cells, reader.read(cells, i + 2), path, i + 2});
    }
  }
  return rows;
}

bool better_row(const ShardRow& a, const ShardRow& b, PlanObjective objective) {
  const auto& x = a.metrics;
  const auto& y = b.metrics;
  if (x.fits_in_memory != y.fits_in_memory)
    return x.fits_in_memory;
  if (objective == PlanObjective::kMemory)
    return x.peak_memory_bytes_max != y.peak_memory_bytes_max
               ? x.peak_memory_bytes_max < y.peak_memory_bytes_max
               : x.throughput > y.throughput;
  return x.throughput != y.throughput ? x.throughput > y.throughput
                                      : x.peak_memory_bytes_max < y.peak_memory_bytes_max;
}

// The cell of `row` in plan's CSV column `column`.
const std::string& cell_of(const ShardRow& row, const std::string& column) {
  const auto& columns = plan_csv_columns();
  const auto at = std::find(columns.begin(), columns.end(), column);
  IPUSIM_CHECK(at != columns.end());
  return row.cells[std::size_t(at - columns.begin())];
}

// The overrides that rebuild a row's candidate on the base config: only what differs from it,
// so that the merged plan's config is the same document an unsharded plan writes.
std::vector<core::Override> overrides_of_row(const RunSpec& base_spec, const ShardRow& row,
                                             const std::vector<std::string>& splits) {
  const auto cell = [&](const std::string& column) { return cell_of(row, column); };
  const std::string where = row.file + " line " + std::to_string(row.line);
  Setting s;
  s.label = where;
  const auto& b = base_spec.pipeline;
  const auto unless = [&](bool same, const std::string& pointer, const std::string& value) {
    if (!same)
      s.overrides.push_back({pointer, value, where});
  };
  s.overrides.push_back(override_of("/pipeline/pipeline_schedule", cell("schedule"), where));
  unless(cell("device_mapping") == nlohmann::json(b.device_mapping()).dump(),
         "/pipeline/device_mapping", cell("device_mapping"));
  unless(cell("replicas") == std::to_string(b.replication_factor), "/pipeline/replication_factor",
         cell("replicas"));
  unless(cell("ipus") == std::to_string(base_spec.hardware.ipus), "/hardware/ipus", cell("ipus"));
  unless(cell("gradient_accumulation_count") == std::to_string(b.gradient_accumulation_count),
         "/pipeline/gradient_accumulation_count", cell("gradient_accumulation_count"));
  unless(cell("micro_batch_size") == std::to_string(b.micro_batch_size),
         "/pipeline/micro_batch_size", cell("micro_batch_size"));
  unless(cell("recomputation_mode") == recomputation_name(base_spec),
         "/pipeline/recomputation_mode", nlohmann::json(cell("recomputation_mode")).dump());
  if (cell("offload") != offload_name(b))
    set_offload(cell("offload"), s);
  s.overrides.push_back(override_of("/pipeline/splits", splits, where));
  return s.overrides;
}

// The candidate a shard's row describes, rebuilt on the base config.
PlanCandidate candidate_of(const core::ConfigDocument& base, const RunSpec& base_spec,
                           const ShardRow& row) {
  const auto cell = [&](const std::string& column) { return cell_of(row, column); };
  PlanCandidate c;
  try {
    c.splits = nlohmann::json::parse(cell("splits")).get<std::vector<std::string>>();
    c.bottleneck_cycles = std::stoll(cell("estimated_bottleneck_cycles"));
    c.bottleneck_ipu = std::stoi(cell("estimated_bottleneck_ipu"));
    c.estimated_peak_bytes = {std::stoll(cell("estimated_peak_bytes_max"))};
  } catch (const std::exception&) {
    throw core::ConfigError(row.file, "",
                            "line " + std::to_string(row.line) +
                                ": the splits or estimate cells are not what plan "
                                "writes");
  }
  c.overrides = overrides_of_row(base_spec, row, c.splits);
  try {
    c.spec = std::make_shared<const RunSpec>(build_run_spec(base.with_overrides(c.overrides)));
  } catch (const core::ConfigError& error) {
    throw core::ConfigError(row.file, "",
                            "line " + std::to_string(row.line) +
                                ": the candidate does not validate on the config "
                                "given (is it the shards' config?): " +
                                error.what());
  }
  describe_candidate(c);
  return c;
}

}  // namespace

PlanResult merge_plan_shards(const PlanRequest& request, const std::vector<std::string>& paths) {
  const auto base = core::ConfigDocument::load(request.config_path, request.base_overrides);
  const RunSpec base_spec = build_run_spec(base);
  auto rows = read_shard_rows(paths);
  if (rows.empty())
    throw core::ConfigError(paths.front(), "", "the shard files hold no candidate to merge");
  std::stable_sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) {
    return better_row(a, b, request.objective);
  });
  PlanResult result;
  result.config_path = request.config_path;
  result.objective = request.objective;
  result.top = request.top;
  result.capacity_bytes = base_spec.hardware.memory_per_ipu_bytes;
  result.merged_files = paths.size();
  result.merged_rows = rows.size();
  std::vector<PlanCandidate> best;
  for (std::size_t i = 0; i < rows.size() && i < std::size_t(std::max(1, request.top)); ++i)
    best.push_back(candidate_of(base, base_spec, rows[i]));
  const auto differs = [&](const ShardRow& row, const char* column) {
    return cell_of(row, column) != cell_of(rows.front(), column);
  };
  for (const auto& row : rows) {
    result.varies_shape =
        result.varies_shape || differs(row, "ipus_per_replica") || differs(row, "replicas");
    result.varies_offload = result.varies_offload || differs(row, "offload");
  }
  for (auto& c : best) {
    c.show_shape = result.varies_shape;
    c.show_offload = result.varies_offload;
  }
  replay_all(best, request, result);
  rank(best, request.objective);
  result.ranked = std::move(best);
  return result;
}

}  // namespace ipusim::sim
