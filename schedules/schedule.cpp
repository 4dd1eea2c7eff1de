#include "schedules/schedule.hpp"

#include "schedules/step_schedule.hpp"

#include <algorithm>

#include "schedules/schedule_error.hpp"
#include "sim/core/error.hpp"

namespace ipusim::schedules {

std::string_view to_string(StashKind kind) {
  switch (kind) {
    case StashKind::kNone:
      return "none";
    case StashKind::kActivations:
      return "activations";
    case StashKind::kStageInputs:
      return "stage_inputs";
    case StashKind::kCheckpoints:
      return "checkpoints";
  }
  return "";
}

Schedule::Schedule(PipelineShape shape, RecomputationMode resolved, bool relaxed,
                   bool split_weight_grad)
    : shape_(std::move(shape)),
      layout_(shape_.device_mapping),
      recomputation_(resolved),
      relaxed_(relaxed),
      split_weight_grad_(split_weight_grad) {
  IPUSIM_CHECK(resolved != RecomputationMode::kAuto);
  IPUSIM_CHECK(layout_.stages() > 0);
  check_size();
}

// Before any builder multiplies by M.
void Schedule::check_size() const {
  const std::int64_t per_microbatch = tasks_per_microbatch();
  if (shape_.microbatches <= kMaxTasks / per_microbatch)
    return;
  throw ScheduleError(ScheduleOption::kGradientAccumulationCount,
                      "gradient_accumulation_count is " + std::to_string(shape_.microbatches) +
                          ", but each micro-batch gives this pipeline " +
                          std::to_string(per_microbatch) +
                          " tasks and ipusim counts at most 2^60 tasks in one repeat, so it "
                          "can be at most " +
                          std::to_string(kMaxTasks / per_microbatch));
}

Schedule::~Schedule() = default;

bool Schedule::final_forward_stage(int stage) const {
  const auto depth = stash_depth();
  const bool fifos = std::any_of(depth.begin(), depth.end(), [](std::int64_t d) { return d > 0; });
  return shape_.training && fifos && stage == layout_.stages() - 1 && depth.back() == 0;
}

bool Schedule::recomputes(int stage) const {
  if (!shape_.training)
    return false;
  switch (recomputation_) {
    case RecomputationMode::kRecomputeThenBackpropagate:
      // The last stage is never recomputed: its backward follows its forward directly.
      return stage < layout_.stages() - 1;
    case RecomputationMode::kRecomputeAndBackpropagateInterleaved:
      return true;
    default:
      return false;
  }
}

// Per stage and IPU: F with its feeds and activation copies; B, R and W with the gradient
// copies when training.
std::int64_t Schedule::tasks_per_microbatch() const {
  const int last = layout_.stages() - 1;
  std::vector<Task> copies;
  std::int64_t tasks = 0;
  for (int stage = 0; stage <= last; ++stage) {
    for (int ipu : layout_.ipus_of(stage)) {
      copies.clear();
      append_boundary_copies(ipu, stage, CopyKind::kActivation, copies);
      tasks += 1 + (stage == 0 ? 1 : 0) + (stage == last ? 1 : 0);
      if (shape_.training) {
        append_boundary_copies(ipu, stage, CopyKind::kGradient, copies);
        tasks += 1 + (recomputes(stage) ? 1 : 0) + (splits_weight_grad() ? 1 : 0);
      }
      tasks += static_cast<std::int64_t>(copies.size());
    }
  }
  return tasks;
}

Task Schedule::work(Op op, int stage, int ipu, std::int64_t microbatch) const {
  Task task;
  task.op = op;
  task.stage = stage;
  task.substage = layout_.substage(stage, ipu);
  task.microbatch = microbatch;
  task.ipu = ipu;
  IPUSIM_CHECK(task.substage >= 0);
  return task;
}

std::size_t Schedule::program_tasks(int ipu, std::int64_t first, std::span<Task> out) const {
  const std::int64_t length = program_length(ipu);
  IPUSIM_CHECK(first >= 0 && first <= length);
  std::size_t written = 0;
  for (; written < out.size() && first < length; ++written, ++first)
    out[written] = program_task(ipu, first);
  return written;
}

std::vector<Task> Schedule::weight_update_tasks(int ipu) const {
  std::vector<Task> tasks;
  if (!shape_.training || layout_.hosted(ipu).empty())
    return tasks;
  Task task;
  task.ipu = ipu;
  task.step = step_based() ? as_steps()->steps() : -1;
  task.phase = Phase::kWeightUpdate;
  task.code_phase = CodePhase::kWeightUpdate;
  if (shape_.replicas > 1) {
    task.op = Op::kAllReduce;
    tasks.push_back(task);
  }
  task.op = Op::kWeightUpdate;
  tasks.push_back(task);
  return tasks;
}

void Schedule::add_inputs(int producer, const Task& consumer, Op producer_op, CopyKind kind,
                          std::vector<Task>& out) const {
  const auto& ipus = layout_.ipus_of(producer);
  for (int sub = 0; sub < static_cast<int>(ipus.size()); ++sub) {
    if (ipus[sub] == consumer.ipu) {
      out.push_back(work(producer_op, producer, ipus[sub], consumer.microbatch));
      continue;
    }
    Task copy = work(Op::kCopy, producer, ipus[sub], consumer.microbatch);
    copy.copy = kind;
    copy.peer_ipu = consumer.ipu;
    out.push_back(copy);
  }
}

void Schedule::append_boundary_copies(int ipu, int stage, CopyKind kind,
                                      std::vector<Task>& out) const {
  const int target = kind == CopyKind::kActivation ? stage + 1 : stage - 1;
  if (target < 0 || target >= layout_.stages())
    return;
  for (int peer : layout_.ipus_of(target)) {
    if (peer == ipu)
      continue;
    Task copy = work(Op::kCopy, stage, ipu, -1);
    copy.copy = kind;
    copy.peer_ipu = peer;
    out.push_back(copy);
  }
}

// The weight update waits for the end of the pipeline part: on every IPU for step-based
// schedules (the ramp-down ends with a global sync), on its own IPU otherwise.
void Schedule::add_pipeline_ends(int ipu, std::vector<Task>& out) const {
  for (int other = 0; other < layout_.ipus(); ++other) {
    if (!step_based() && other != ipu)
      continue;
    const std::int64_t length = program_length(other);
    if (length > 0)
      out.push_back(program_task(other, length - 1));
  }
}

void Schedule::dependencies(const Task& task, std::vector<Task>& out, bool locate) const {
  out.clear();
  const int last = layout_.stages() - 1;
  const std::int64_t m = task.microbatch;
  switch (task.op) {
    case Op::kInfeed:
      return;
    case Op::kForward:
      if (task.stage == 0)
        out.push_back(work(Op::kInfeed, 0, task.ipu, m));
      else
        add_inputs(task.stage - 1, task, Op::kForward, CopyKind::kActivation, out);
      break;
    case Op::kCopy:
      out.push_back(work(task.copy == CopyKind::kActivation ? Op::kForward : Op::kBackward,
                         task.stage, task.ipu, m));
      break;
    case Op::kOutfeed:
      out.push_back(work(Op::kForward, last, task.ipu, m));
      break;
    case Op::kRecompute:
      out.push_back(work(Op::kForward, task.stage, task.ipu, m));
      break;
    case Op::kBackward:
      out.push_back(work(Op::kForward, task.stage, task.ipu, m));
      if (recomputes(task.stage))
        out.push_back(work(Op::kRecompute, task.stage, task.ipu, m));
      if (task.stage < last)
        add_inputs(task.stage + 1, task, Op::kBackward, CopyKind::kGradient, out);
      break;
    case Op::kWeightGrad:
      out.push_back(work(Op::kBackward, task.stage, task.ipu, m));
      break;
    case Op::kAllReduce:
      add_pipeline_ends(task.ipu, out);
      return;
    case Op::kWeightUpdate:
      if (shape_.replicas > 1)
        out.push_back(weight_update_tasks(task.ipu).front());
      else
        add_pipeline_ends(task.ipu, out);
      return;
  }
  if (!locate)
    return;
  for (Task& dependency : out)
    this->locate(dependency);
}

const std::vector<std::string>& recomputation_mode_names() {
  static const std::vector<std::string> names = {"none", "auto", "recompute_then_backpropagate",
                                                 "recompute_and_backpropagate_interleaved"};
  return names;
}

const std::string& to_string(RecomputationMode mode) {
  return recomputation_mode_names()[static_cast<std::size_t>(mode)];
}

RecomputationMode recomputation_mode_of(const std::string& name) {
  const auto& names = recomputation_mode_names();
  const auto found = std::find(names.begin(), names.end(), name);
  IPUSIM_CHECK(found != names.end());
  return static_cast<RecomputationMode>(found - names.begin());
}

}  // namespace ipusim::schedules
