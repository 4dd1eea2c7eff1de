#include "sim/sweep/plan.hpp"

#include <algorithm>
#include <cstdlib>

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/report/run_metrics.hpp"
#include "sim/sweep/sweep_csv.hpp"

namespace ipusim::sim {
namespace {

// Far beyond what one machine simulates in a day, and small enough that the product of the
// axes cannot overflow on the way.
constexpr std::size_t kMaxRuns = kMaxSweepRuns;

// Splits at commas outside quotes, brackets and braces.
std::vector<std::string> split_top_level(const std::string& text) {
  std::vector<std::string> out;
  std::string current;
  int depth = 0;
  bool quoted = false;
  bool escaped = false;
  for (char c : text) {
    if (quoted) {
      quoted = escaped || c != '"';
      escaped = !escaped && c == '\\';
    } else if (c == '"') {
      quoted = true;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (c == ',' && depth == 0) {
      out.push_back(current);
      current.clear();
      continue;
    }
    current += c;
  }
  out.push_back(current);
  return out;
}

}  // namespace

SweepAxis parse_vary_argument(const std::string& argument) {
  // Long value lists are cut in messages; the path and the first values say which --vary it is.
  const std::string label =
      "--vary " + (argument.size() > 60 ? argument.substr(0, 57) + "..." : argument);
  const auto equals = argument.find('=');
  if (equals == std::string::npos || equals == 0) {
    throw core::ConfigError(label, "",
                            "expected PATH=V1,V2,..., such as "
                            "pipeline.gradient_accumulation_count=8,16,32");
  }
  SweepAxis axis{argument.substr(0, equals), split_top_level(argument.substr(equals + 1)), label};
  for (const auto& value : axis.values) {
    if (value.empty())
      throw core::ConfigError(label, "", "a value is empty (two commas in a row, or none given)");
  }
  return axis;
}

namespace {

// The slice of the Slurm array task this process is.
SweepShard slurm_shard(const EnvironmentLookup& environment) {
  const auto number = [&](const std::string& name) -> std::optional<std::size_t> {
    const auto value = environment(name);
    return value ? parse_index(*value) : std::nullopt;
  };
  const auto fail = [](const std::string& why) -> SweepShard {
    throw core::ConfigError("--shard auto", "", why);
  };
  const auto id = number("SLURM_ARRAY_TASK_ID");
  if (!id)
    return fail(
        "SLURM_ARRAY_TASK_ID is not set to a number: run inside a Slurm array job "
        "(sbatch --array=0-3 ...) or give the slice as I/N");
  const std::size_t min = number("SLURM_ARRAY_TASK_MIN").value_or(0);
  const auto max = number("SLURM_ARRAY_TASK_MAX");
  const std::size_t step = std::max<std::size_t>(1, number("SLURM_ARRAY_TASK_STEP").value_or(1));
  auto count = number("SLURM_ARRAY_TASK_COUNT");
  if (!count && max && *max >= min)
    count = (*max - min) / step + 1;
  if (!count)
    return fail("neither SLURM_ARRAY_TASK_COUNT nor SLURM_ARRAY_TASK_MAX is set to a number");
  const std::string array = std::to_string(*count) + " tasks from " + std::to_string(min) +
                            (step > 1 ? " in steps of " + std::to_string(step) : "");
  // A list such as --array=1,5,6 has no step that maps its IDs onto slices.
  if (max && *max >= min && (*max - min) / step + 1 != *count)
    return fail("the array's task IDs are a list, not a range MIN-MAX[:STEP] (" +
                std::to_string(*count) + " tasks from " + std::to_string(min) + " to " +
                std::to_string(*max) + "); give the slice as I/N");
  if (*id < min || (*id - min) % step != 0 || (*id - min) / step >= *count || *count > 1000000)
    return fail("SLURM_ARRAY_TASK_ID " + std::to_string(*id) + " is not one of the array's " +
                array + "; give the slice as I/N");
  return {int((*id - min) / step + 1), int(*count)};
}

}  // namespace

SweepShard parse_shard(const std::string& text) {
  return parse_shard(text, [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    return value ? std::optional<std::string>(value) : std::nullopt;
  });
}

SweepShard parse_shard(const std::string& text, const EnvironmentLookup& environment) {
  if (text == "auto")
    return slurm_shard(environment);
  const auto slash = text.find('/');
  const auto index = parse_index(text.substr(0, slash));
  const auto count =
      slash == std::string::npos ? std::nullopt : parse_index(text.substr(slash + 1));
  if (!index || !count || *index < 1 || *index > *count || *count > 1000000) {
    throw core::ConfigError("--shard " + text, "",
                            "expected I/N with 1 <= I <= N, such as 2/8 for the second of 8 "
                            "slices, or auto in a Slurm array job");
  }
  return {int(*index), int(*count)};
}

SweepPlan::SweepPlan(std::vector<SweepAxis> axes) : axes_(std::move(axes)) {
  for (std::size_t a = 0; a < axes_.size(); ++a) {
    IPUSIM_CHECK(!axes_[a].values.empty());
    for (std::size_t b = 0; b < a; ++b) {
      if (core::to_json_pointer(axes_[a].path) == core::to_json_pointer(axes_[b].path)) {
        throw core::ConfigError(axes_[a].label, "",
                                "'" + axes_[a].path + "' is already varied by " + axes_[b].label);
      }
    }
    size_ *= axes_[a].values.size();
    if (size_ > kMaxRuns) {
      throw core::ConfigError(axes_[a].label, "",
                              "the sweep would have more than " +
                                  with_commas(std::int64_t(kMaxRuns)) +
                                  " runs; vary fewer values or split it into several sweeps");
    }
  }
}

std::vector<std::string> SweepPlan::values(std::size_t run) const {
  IPUSIM_CHECK(run < size_);
  std::vector<std::string> out(axes_.size());
  for (std::size_t a = axes_.size(); a-- > 0;) {
    out[a] = axes_[a].values[run % axes_[a].values.size()];
    run /= axes_[a].values.size();
  }
  return out;
}

std::vector<core::Override> SweepPlan::overrides(std::size_t run) const {
  const auto chosen = values(run);
  std::vector<core::Override> out;
  for (std::size_t a = 0; a < axes_.size(); ++a)
    out.push_back({axes_[a].path, chosen[a], "--vary " + axes_[a].path + "=" + chosen[a]});
  return out;
}

std::string SweepPlan::key(std::size_t run) const {
  const auto chosen = values(run);
  std::string out;
  for (std::size_t a = 0; a < axes_.size(); ++a)
    out += (a ? " " : "") + axes_[a].path + "=" + chosen[a];
  return out;
}

std::vector<std::string> SweepPlan::columns() const {
  std::vector<std::string> out = {"run"};
  for (const auto& axis : axes_)
    out.push_back(one_line(axis.path));
  out.insert(out.end(), metric_columns().begin(), metric_columns().end());
  for (auto& column : per_ipu_columns(ipu_columns_))
    out.push_back(std::move(column));
  out.push_back("error");
  return out;
}

}  // namespace ipusim::sim
