#include "schedules/build.hpp"

#include <algorithm>
#include <map>

#include "schedules/ordered_schedule.hpp"
#include "schedules/step_schedule.hpp"
#include "sim/core/error.hpp"
#include "sim/core/suggest.hpp"

namespace ipusim::schedules {
namespace {

// The schedules ipusim builds: one row each. Adding a schedule is a builder file and a row.
// `lanes` gives Graphcore's overlap length (0: a GPU schedule, which has no divisibility rule);
// `placement` checks the stage-to-IPU mapping the schedule accepts.
struct Registered {
  ScheduleInfo info;
  bool graphcore;
  RecomputationMode auto_recomputation;
  bool then_backpropagate;     // supports recompute_then_backpropagate
  bool interleaved_recompute;  // supports recompute_and_backpropagate_interleaved
  std::int64_t (*lanes)(const PipelineShape& shape);
  void (*placement)(const std::string& name, const PipelineShape& shape);
  std::unique_ptr<Schedule> (*make)(const PipelineShape& shape, RecomputationMode mode,
                                    bool relaxed);
};

template <StepKind kind>
std::unique_ptr<Schedule> make_steps(const PipelineShape& shape, RecomputationMode mode,
                                     bool relaxed) {
  return std::make_unique<StepSchedule>(kind, shape, mode, relaxed);
}

template <OrderKind kind>
std::unique_ptr<Schedule> make_order(const PipelineShape& shape, RecomputationMode mode, bool) {
  return std::make_unique<OrderedSchedule>(kind, shape, mode);
}

std::int64_t grouped_lanes(const PipelineShape& shape) {
  return shape.training ? 2 * shape.stages() : shape.stages();
}
std::int64_t interleaved_lanes(const PipelineShape& shape) {
  return shape.stages();
}
std::int64_t sequential_lanes(const PipelineShape&) {
  return 1;
}
std::int64_t no_lanes(const PipelineShape&) {
  return 0;
}

const std::vector<Registered>& registry();

std::vector<std::string> schedule_names() {
  std::vector<std::string> names;
  for (const Registered& row : registry())
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

// The first two stages that share an IPU, as "stages 0 and 2 are both on IPU 0", or "".
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

void check_interleaved_1f1b(const PipelineShape& shape) {
  const auto fail = [](ScheduleOption option, const std::string& message) {
    throw ScheduleError(option, message);
  };
  const int n = shape.stages();
  for (int stage = 0; stage < n; ++stage) {
    if (shape.device_mapping[stage].size() > 1)
      fail(ScheduleOption::kDeviceMapping,
           "the interleaved_1f1b schedule runs each stage on one IPU, but stage " +
               std::to_string(stage) + " has " +
               std::to_string(shape.device_mapping[stage].size()));
  }
  const int ipus = shape.ipus();
  if (n % ipus != 0)
    fail(ScheduleOption::kDeviceMapping,
         "the interleaved_1f1b schedule needs the same number of stages on every IPU, but " +
             std::to_string(n) + " stages do not divide evenly over " + std::to_string(ipus) +
             " IPUs");
  for (int stage = 0; stage < n; ++stage) {
    if (shape.device_mapping[stage].front() != stage % ipus)
      fail(ScheduleOption::kDeviceMapping,
           "the interleaved_1f1b schedule places stage k on IPU k mod " + std::to_string(ipus) +
               " (Megatron-LM's virtual stages), but stage " + std::to_string(stage) +
               " is on IPU " + std::to_string(shape.device_mapping[stage].front()));
  }
  if (shape.microbatches % ipus != 0)
    fail(ScheduleOption::kGradientAccumulationCount,
         "number of microbatches (" + std::to_string(shape.microbatches) +
             ") is not divisible by pipeline-model-parallel-size (" + std::to_string(ipus) +
             ") when using interleaved schedule (Megatron-LM's rule for interleaved_1f1b)");
}

// Graphcore's grouped and sequential schedules run several stages on one IPU back to back.
void any_placement(const std::string&, const PipelineShape&) {}

void interleaved_placement(const std::string&, const PipelineShape& shape) {
  const std::string shared = shared_ipu(shape);
  if (shape.training && !shared.empty())
    throw ScheduleError(ScheduleOption::kDeviceMapping,
                        "The pipelining schedule 'Interleaved' does not currently support "
                        "multiple pipeline stages on the same device for training graphs. "
                        "Please use a different pipeline schedule. (" +
                            shared + ")");
}

void one_stage_per_ipu(const std::string& name, const PipelineShape& shape) {
  const std::string shared = shared_ipu(shape);
  if (!shared.empty())
    throw ScheduleError(ScheduleOption::kDeviceMapping,
                        "the " + name + " schedule runs one stage per IPU, but " + shared +
                            " (grouped and sequential run several stages on one IPU, and so does "
                            "interleaved_1f1b with stage k on IPU k mod the IPU count)");
}

void virtual_stages(const std::string&, const PipelineShape& shape) {
  check_interleaved_1f1b(shape);
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

// Graphcore's schedules, as spec/graphcore-schedules.md defines them.
std::vector<Registered> graphcore_rows() {
  return {
      {.info =
           {"grouped",
            "Graphcore's default: each step every IPU runs its backward then its forward. Fastest "
            "when stages are balanced; stashes 2(N-1-k) micro-batches on stage k; M a multiple of "
            "2N."},
       .graphcore = true,
       .auto_recomputation = RecomputationMode::kRecomputeThenBackpropagate,
       .then_backpropagate = true,
       .interleaved_recompute = true,
       .lanes = grouped_lanes,
       .placement = any_placement,
       .make = make_steps<StepKind::kGrouped>},
      {.info =
           {"interleaved",
            "Graphcore: IPUs alternate forward and backward steps. Half grouped's stash, but every "
            "step waits for the slower of a forward and a backward; M a multiple of N, one stage "
            "per IPU."},
       .graphcore = true,
       .auto_recomputation = RecomputationMode::kRecomputeThenBackpropagate,
       .then_backpropagate = true,
       .interleaved_recompute = false,
       .lanes = interleaved_lanes,
       .placement = interleaved_placement,
       .make = make_steps<StepKind::kInterleaved>},
      {.info = {"sequential",
                "Graphcore's debug mode: one stage at a time, like a sharded model. No overlap, no "
                "stash, any M."},
       .graphcore = true,
       .auto_recomputation = RecomputationMode::kRecomputeAndBackpropagateInterleaved,
       .then_backpropagate = false,
       .interleaved_recompute = true,
       .lanes = sequential_lanes,
       .placement = any_placement,
       .make = make_steps<StepKind::kSequential>},
  };
}

// The GPU world's schedules, to compare with.
std::vector<Registered> gpu_rows() {
  return {
      {.info = {"gpipe",
                "GPU: all forwards, then all backwards. Simplest; stashes all M micro-batches."},
       .graphcore = false,
       .auto_recomputation = RecomputationMode::kRecomputeAndBackpropagateInterleaved,
       .then_backpropagate = false,
       .interleaved_recompute = true,
       .lanes = no_lanes,
       .placement = one_stage_per_ipu,
       .make = make_order<OrderKind::kGPipe>},
      {.info = {"1f1b",
                "GPU, PipeDream-flush / Megatron-LM: a warm-up of forwards, then one forward one "
                "backward. Gpipe's bubble with at most N-k micro-batches stashed on stage k."},
       .graphcore = false,
       .auto_recomputation = RecomputationMode::kRecomputeAndBackpropagateInterleaved,
       .then_backpropagate = false,
       .interleaved_recompute = true,
       .lanes = no_lanes,
       .placement = one_stage_per_ipu,
       .make = make_order<OrderKind::kOneFOneB>},
      {.info =
           {"interleaved_1f1b",
            "GPU, Megatron-LM interleaved: v stages per IPU (stage k on IPU k mod P) divide the "
            "bubble by v at the cost of more copies; M a multiple of P."},
       .graphcore = false,
       .auto_recomputation = RecomputationMode::kRecomputeAndBackpropagateInterleaved,
       .then_backpropagate = false,
       .interleaved_recompute = true,
       .lanes = no_lanes,
       .placement = virtual_stages,
       .make = make_order<OrderKind::kInterleaved1F1B>},
      {.info = {"zero_bubble_h1",
                "GPU, ZB-H1 (Qi et al. 2023): backward split into input and weight gradients, the "
                "weight gradients filling the cool-down. 1f1b's peak memory, about a third of its "
                "bubble."},
       .graphcore = false,
       .auto_recomputation = RecomputationMode::kRecomputeAndBackpropagateInterleaved,
       .then_backpropagate = false,
       .interleaved_recompute = true,
       .lanes = no_lanes,
       .placement = one_stage_per_ipu,
       .make = make_order<OrderKind::kZeroBubbleH1>},
  };
}

const std::vector<Registered>& registry() {
  static const std::vector<Registered> rows = [] {
    std::vector<Registered> all = graphcore_rows();
    for (Registered& row : gpu_rows())
      all.push_back(std::move(row));
    return all;
  }();
  return rows;
}

// The row of a known schedule (check_known first).
const Registered& row_of(const std::string& name) {
  for (const Registered& row : registry()) {
    if (row.info.name == name)
      return row;
  }
  IPUSIM_CHECK(false);
  return registry().front();
}

}  // namespace

const std::vector<ScheduleInfo>& schedule_catalogue() {
  static const std::vector<ScheduleInfo> catalogue = [] {
    std::vector<ScheduleInfo> infos;
    for (const Registered& row : registry())
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
  const Registered& row = row_of(schedule);
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
  const Registered& row = row_of(name);
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

}  // namespace ipusim::schedules
