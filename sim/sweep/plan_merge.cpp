// `ipusim plan --merge`: the CSV files of a sharded plan ranked together
// (sim/sweep/planner.hpp, merge_plan_shards).

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "sim/core/csv.hpp"
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
  std::string file;
  std::size_t line = 0;
};

// What ranks a shard's row and where it lies: the rows of a large sharded plan are read twice
// rather than held.
struct ShardRowAt {
  double throughput = 0;
  std::int64_t peak_bytes = 0;
  std::uint64_t offset = 0;
  std::uint32_t bytes = 0;
  std::uint32_t line = 0;
  std::uint32_t file = 0;
  bool fits = false;
};

struct ShardRows {
  std::vector<ShardRowAt> rows;
  bool varies_shape = false;  // the rows' IPUs per replica or replicas are not all the same
  bool varies_offload = false;
  bool varies_batch = false;  // the rows' GAC, micro-batch or replicas are not all the same
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

// The position of plan's CSV column `column`.
std::size_t column_of(const std::string& column) {
  const auto& columns = plan_csv_columns();
  const auto at = std::find(columns.begin(), columns.end(), column);
  IPUSIM_CHECK(at != columns.end());
  return std::size_t(at - columns.begin());
}

// Reads each file twice, a megabyte at a time: the first pass checks it is a CSV (as the whole
// file read at once would, every line before the header's meaning), the second reads each row's
// figures.
ShardRows read_shard_rows(const std::vector<std::string>& paths) {
  ShardRows out;
  std::vector<std::string> first;  // the first row's cells that say whether the shape varies
  const std::size_t shape[] = {column_of("ipus_per_replica"), column_of("replicas")};
  const std::size_t offload = column_of("offload");
  const std::size_t batch[] = {column_of("gradient_accumulation_count"),
                               column_of("micro_batch_size"), column_of("replicas")};
  for (std::size_t f = 0; f < paths.size(); ++f) {
    const auto& path = paths[f];
    if (!std::filesystem::is_regular_file(path))
      throw core::ConfigError(path, "",
                              "no such file: expected the CSV a plan --shard run wrote "
                              "with --csv");
    std::vector<std::string> header;
    scan_sweep_csv(path, LastLine::kDropped, [&](auto&& cells, std::size_t number, auto, auto) {
      if (number == 1)
        header = std::move(cells);
    });
    if (!is_plan_header(header))
      throw core::ConfigError(path, "",
                              "expected the CSV of ipusim plan --csv, whose header "
                              "starts rank,splits,ipus_per_replica; this header is not "
                              "plan's");
    const MetricsReader reader(header, path);
    scan_sweep_csv(
        path, LastLine::kDropped,
        [&](auto&& cells, std::size_t number, std::uint64_t offset, std::size_t bytes) {
          if (number == 1)
            return;
          const auto m = reader.read(cells, number);
          out.rows.push_back({m.throughput, m.peak_memory_bytes_max, offset, std::uint32_t(bytes),
                              std::uint32_t(number), std::uint32_t(f), m.fits_in_memory});
          if (first.empty())
            first = cells;
          for (const auto column : shape)
            out.varies_shape = out.varies_shape || cells[column] != first[column];
          out.varies_offload = out.varies_offload || cells[offload] != first[offload];
          for (const auto column : batch)
            out.varies_batch = out.varies_batch || cells[column] != first[column];
        });
  }
  return out;
}

bool better_row(const ShardRowAt& x, const ShardRowAt& y, PlanObjective objective) {
  if (x.fits != y.fits)
    return x.fits;
  if (objective == PlanObjective::kMemory)
    return x.peak_bytes != y.peak_bytes ? x.peak_bytes < y.peak_bytes : x.throughput > y.throughput;
  return x.throughput != y.throughput ? x.throughput > y.throughput : x.peak_bytes < y.peak_bytes;
}

// The row at `at`, read again from its file.
ShardRow row_at(const std::vector<std::string>& paths, const ShardRowAt& at) {
  const auto& path = paths[at.file];
  std::ifstream in(path, std::ios::binary);
  std::string line(at.bytes, '\0');
  in.seekg(std::streamoff(at.offset));
  if (!in.read(line.data(), std::streamsize(at.bytes)))
    throw core::ConfigError(path, "", "cannot read the file again: it changed while merged");
  return {core::split_csv_line(line, path, at.line), path, at.line};
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
  auto shards = read_shard_rows(paths);
  auto& rows = shards.rows;
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
  result.varies_shape = shards.varies_shape;
  result.varies_offload = shards.varies_offload;
  result.varies_batch = shards.varies_batch;
  std::vector<PlanCandidate> best;
  for (std::size_t i = 0; i < rows.size() && i < std::size_t(std::max(1, request.top)); ++i)
    best.push_back(candidate_of(base, base_spec, row_at(paths, rows[i])));
  for (auto& c : best) {
    c.show_shape = result.varies_shape;
    c.show_offload = result.varies_offload;
  }
  replay_all(best, request, result);
  rank(best, request.objective);
  result.replayed = best.size();
  result.ranked = std::move(best);
  result.baseline = baseline_of(base, request, result);
  return result;
}

}  // namespace ipusim::sim
