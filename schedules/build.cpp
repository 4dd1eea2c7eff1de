#include "schedules/build.hpp"

#include <algorithm>
#include <map>

#include "schedules/registry.hpp"
#include "sim/core/error.hpp"
#include "sim/core/suggest.hpp"

namespace ipusim::schedules {
namespace {

const std::vector<ScheduleRow>& registry();

std::vector<std::string> schedule_names() {
  std::vector<std::string> names;
  for (const ScheduleRow& row : registry())
    names.push_back(row.info.name);
  return names;
}

void check_known(const std::string& name) {
  const std::vector<std::string> names = schedule_names();
  if (std::find(names.begin(), names.end(), name) != names.end())
    return;
  throw ScheduleError(ScheduleOption::kPipelineSchedule,
                      "unknown pipeline schedule '" + name + "'; expected " +
                          core::quoted_list(names) + core::did_you_mean(name, names));
}

void check_mapping(const PipelineShape& shape) {
  const auto fail = [](const std::string& message) {
    throw ScheduleError(ScheduleOption::kDeviceMapping, message);
  };
  if (shape.device_mapping.empty())
    fail("the pipeline needs at least one stage, but device_mapping is empty");
  for (int stage = 0; stage < shape.stages(); ++stage) {
    const auto& ipus = shape.device_mapping[stage];
    const std::string name = "stage " + std::to_string(stage);
    if (ipus.empty())
      fail(name + " has no IPU");
    for (std::size_t i = 0; i < ipus.size(); ++i) {
      if (ipus[i] < 0)
        fail(name + " is mapped to IPU " + std::to_string(ipus[i]) + "; IPU ids start at 0");
      if (std::find(ipus.begin(), ipus.begin() + i, ipus[i]) != ipus.begin() + i)
        fail(name + " lists IPU " + std::to_string(ipus[i]) + " twice");
    }
  }
}

void check_counts(const PipelineShape& shape) {
  if (shape.repeat_count < 1)
    throw ScheduleError(
        ScheduleOption::kRepeatCount,
        "repeat_count must be at least 1, but it is " + std::to_string(shape.repeat_count));
  if (shape.replicas < 1)
    throw ScheduleError(ScheduleOption::kReplicas,
                        "replicas must be at least 1, but it is " + std::to_string(shape.replicas));
}

std::string plural(std::int64_t count, const std::string& noun) {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "es");
}

// TF's VerifyPipelineArgumentsFixed, in its order and words, then what the numbers mean here.
void check_divisibility(const std::string& name, const PipelineShape& shape) {
  const std::int64_t m = shape.microbatches;
  const std::int64_t lanes = graphcore_lanes(name, shape);
  const auto fail = [](const std::string& message) {
    throw ScheduleError(ScheduleOption::kGradientAccumulationCount, message);
  };
  if (shape.relaxed_divisibility) {
    if (m < 1)
      fail("gradient_accumulation_count must be at least 1, but it is " + std::to_string(m));
    return;
  }
  const std::string why =
      ". This number is gradient_accumulation_count; the " + name + " schedule with " +
      std::to_string(shape.stages()) + " stage" + (shape.stages() == 1 ? "" : "s") + " runs " +
      plural(lanes, "micro-batch") + " at once" + (shape.training ? "" : " in inference") +
      " (set pipeline.relaxed_divisibility to explore it anyway)";
  if (m % lanes != 0)
    fail("The number of iterations of the pipeline must be a multiple of " + std::to_string(lanes) +
         ", but it is " + std::to_string(m) + why);
  if (m < lanes)
    fail("The number of iterations of the pipeline must be at least " + std::to_string(lanes) +
         ", but it is " + std::to_string(m) + why);
}

// Every schedule, in the order `ipusim schedules` lists them; the first is the default.
const std::vector<ScheduleRow>& registry() {
  static const std::vector<ScheduleRow> rows = {
      grouped_row(),     interleaved_row(),      sequential_row(),     gpipe_row(),
      one_f_one_b_row(), interleaved_1f1b_row(), zero_bubble_h1_row(),
  };
  return rows;
}

// The row of a known schedule (check_known first).
const ScheduleRow& row_of(const std::string& name) {
  for (const ScheduleRow& row : registry()) {
    if (row.info.name == name)
      return row;
  }
  IPUSIM_CHECK(false);
  return registry().front();
}

}  // namespace

std::int64_t no_lanes(const PipelineShape&) {
  return 0;
}

void any_placement(const std::string&, const PipelineShape&) {}

std::string shared_ipu(const PipelineShape& shape) {
  std::map<int, int> owner;
  for (int stage = 0; stage < shape.stages(); ++stage) {
    for (int ipu : shape.device_mapping[stage]) {
      const auto [it, fresh] = owner.emplace(ipu, stage);
      if (!fresh)
        return "stages " + std::to_string(it->second) + " and " + std::to_string(stage) +
               " are both on IPU " + std::to_string(ipu);
    }
  }
  return "";
}

void one_stage_per_ipu(const std::string& name, const PipelineShape& shape) {
  const std::string shared = shared_ipu(shape);
  if (!shared.empty())
    throw ScheduleError(ScheduleOption::kDeviceMapping,
                        "the " + name + " schedule runs one stage per IPU, but " + shared +
                            " (grouped and sequential run several stages on one IPU, and so does "
                            "interleaved_1f1b with stage k on IPU k mod the IPU count)");
}

const std::vector<ScheduleInfo>& schedule_catalogue() {
  static const std::vector<ScheduleInfo> catalogue = [] {
    std::vector<ScheduleInfo> infos;
    for (const ScheduleRow& row : registry())
      infos.push_back(row.info);
    return infos;
  }();
  return catalogue;
}

const std::string& default_schedule() {
  return registry().front().info.name;
}

RecomputationMode resolve_recomputation(const std::string& schedule, RecomputationMode requested) {
  check_known(schedule);
  const ScheduleRow& row = row_of(schedule);
  if (requested == RecomputationMode::kAuto)
    return row.auto_recomputation;
  if (requested == RecomputationMode::kRecomputeThenBackpropagate && !row.then_backpropagate)
    throw ScheduleError(ScheduleOption::kRecomputationMode,
                        "recomputation mode " + to_string(requested) +
                            " is supported only by the grouped and interleaved schedules, not "
                            "by " +
                            schedule);
  if (requested == RecomputationMode::kRecomputeAndBackpropagateInterleaved &&
      !row.interleaved_recompute)
    throw ScheduleError(ScheduleOption::kRecomputationMode,
                        "recomputation mode " + to_string(requested) +
                            " is supported only by the grouped and sequential schedules (and "
                            "the GPU schedules), not by interleaved");
  return requested;
}

bool supports_recomputation(const std::string& schedule, RecomputationMode mode) {
  check_known(schedule);
  const ScheduleRow& row = row_of(schedule);
  switch (mode) {
    case RecomputationMode::kRecomputeThenBackpropagate:
      return row.then_backpropagate;
    case RecomputationMode::kRecomputeAndBackpropagateInterleaved:
      return row.interleaved_recompute;
    default:
      return true;
  }
}

std::int64_t graphcore_lanes(const std::string& schedule, const PipelineShape& shape) {
  check_known(schedule);
  return row_of(schedule).lanes(shape);
}

std::unique_ptr<Schedule> build_schedule(const std::string& name, const PipelineShape& shape) {
  check_known(name);
  check_mapping(shape);
  check_counts(shape);
  // Inference has no backward, so nothing to recompute.
  const RecomputationMode mode =
      shape.training ? resolve_recomputation(name, shape.recomputation) : RecomputationMode::kNone;
  const ScheduleRow& row = row_of(name);
  row.placement(name, shape);
  bool relaxed = false;
  if (row.graphcore) {
    check_divisibility(name, shape);
    const std::int64_t lanes = graphcore_lanes(name, shape);
    relaxed = shape.microbatches % lanes != 0 || shape.microbatches < lanes;
  } else if (shape.microbatches < 1) {
    throw ScheduleError(ScheduleOption::kGradientAccumulationCount,
                        "gradient_accumulation_count must be at least 1, but it is " +
                            std::to_string(shape.microbatches));
  }
  return row.make(shape, mode, relaxed);
}

std::vector<int> relayout_mapping(const std::string& schedule, const PipelineShape& shape) {
  const auto names = schedule_names();
  if (std::find(names.begin(), names.end(), schedule) == names.end())
    return {};  // the spec's validation names an unknown schedule, with did-you-mean
  const ScheduleRow& row = row_of(schedule);
  if (row.relayout_stages_per_ipu == 0)
    return {};
  try {
    row.placement(schedule, shape);
    return {};
  } catch (const ScheduleError& error) {
    if (error.option() != ScheduleOption::kDeviceMapping)
      return {};
  }
  std::vector<int> mapping;
  const int ipus = shape.ipus();
  for (int stage = 0; stage < ipus * row.relayout_stages_per_ipu; ++stage)
    mapping.push_back(stage % ipus);
  return mapping;
}

}  // namespace ipusim::schedules
