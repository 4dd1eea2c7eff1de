#pragma once
// A pipeline schedule: for one repeat of the program, which tasks every IPU runs and in which
// order, what each task waits for, and how activations are stashed between forward and
// backward. Schedules are immutable and generate tasks on demand from closed forms, so their
// memory does not grow with the number of micro-batches M.
//
// Two families share this interface:
//  - step-based (Graphcore grouped / interleaved / sequential): the program is a sequence of
//    steps, and all IPUs synchronise at every step boundary (BSP);
//  - dependency-ordered (gpipe, 1f1b, interleaved_1f1b, zero_bubble_h1): each IPU runs its own
//    program order and waits only for the tasks it depends on; step is -1.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "schedules/pipeline_shape.hpp"
#include "schedules/stage_layout.hpp"
#include "schedules/task.hpp"

namespace ipusim::schedules {

class StepSchedule;

// What a stage keeps in its FIFO (stash) between F_k(m) and the task that consumes it.
enum class StashKind {
  kNone,         // nothing is stashed (inference)
  kActivations,  // the activations B_k needs
  kStageInputs,  // only F_k's inputs: R_k recomputes the rest (recompute_then_backpropagate)
  kCheckpoints,  // only the recomputation checkpoints (recompute_and_backpropagate_interleaved)
};

// "none", "activations", "stage_inputs", "checkpoints".
std::string_view to_string(StashKind kind);

// How one repeat divides into phases. Step-based schedules count steps; dependency-ordered
// schedules have no steps and count compute tasks (F, B, R, W) summed over IPUs instead.
struct PhaseCounts {
  bool counts_steps = true;
  // Code phases: Graphcore's ramp-up / main Repeat / ramp-down; for dependency-ordered
  // schedules the warm-up / steady / cool-down parts of the per-IPU orders.
  std::int64_t code_ramp_up = 0;
  std::int64_t code_main = 0;
  std::int64_t code_ramp_down = 0;
  // Utilisation phases: ramp-up until the first full step, main up to the last full step,
  // ramp-down after it (trailing steps without compute included).
  std::int64_t ramp_up = 0;
  std::int64_t main = 0;
  std::int64_t ramp_down = 0;
  std::int64_t full = 0;       // step-based: steps in which every IPU runs all its slots
  std::int64_t idle_tail = 0;  // step-based: trailing steps with no compute (part of ramp_down)
  // Dependency-ordered: the unit-time simulation that places the phases (time units).
  std::int64_t makespan = 0;
  std::int64_t ramp_up_end = 0;      // when the last IPU starts its first compute task
  std::int64_t ramp_down_begin = 0;  // when the first IPU finishes its last compute task
};

// The interface shared by every builder; see the top of this file.
class Schedule {
 public:
  virtual ~Schedule();
  Schedule(const Schedule&) = delete;
  Schedule& operator=(const Schedule&) = delete;

  // The registry name ("grouped", "1f1b", ...): for output only; no code branches on it.
  virtual std::string name() const = 0;
  // The step-based form of this schedule (Graphcore's three: all IPUs synchronise at every
  // step boundary), or nullptr for a dependency-ordered one.
  virtual const StepSchedule* as_steps() const { return nullptr; }
  bool step_based() const { return as_steps() != nullptr; }

  // The shape the schedule was built for; repeat_count and replicas are read from here, and
  // the tasks of every repeat are those of the first.
  const PipelineShape& shape() const { return shape_; }
  const StageLayout& layout() const { return layout_; }
  // The recomputation mode in force, Auto already resolved.
  RecomputationMode recomputation() const { return recomputation_; }
  // Built with relaxed_divisibility for an M that Graphcore would reject.
  bool relaxed() const { return relaxed_; }
  // Whether R_k tasks exist for stage k, and whether W tasks are split off the backward.
  bool recomputes(int stage) const;
  bool splits_weight_grad() const { return split_weight_grad_ && shape_.training; }

  // Every schedule: the per-IPU program of one repeat without the weight update. Copies are
  // listed on their source IPU.
  virtual std::int64_t program_length(int ipu) const = 0;
  // The index-th task of that program, computed from the rules (no stored list) in
  // logarithmic time.
  virtual Task program_task(int ipu, std::int64_t index) const = 0;
  // Tasks first, first + 1, ... of the same program into `out`, as many as fit before the
  // program ends; returns how many. The tasks program_task gives, for less work per task when
  // a caller reads a program in order as the replay does.
  virtual std::size_t program_tasks(int ipu, std::int64_t first, std::span<Task> out) const;
  // After the ramp-down (training only): AllReduce when replicas > 1, then WeightUpdate.
  // Step-based schedules give them step == steps(); an IPU without stages has none.
  std::vector<Task> weight_update_tasks(int ipu) const;
  // What must finish before `task` within the same repeat, with steps and phases filled in
  // unless `locate` is false (the replay needs only the work fields). `out` is cleared first.
  void dependencies(const Task& task, std::vector<Task>& out, bool locate = true) const;

  // The tasks one micro-batch adds to the programs of all IPUs.
  std::int64_t tasks_per_microbatch() const;
  // The most tasks one repeat may hold. Every count a schedule derives (tasks, steps,
  // unit-time makespans, phase counts) stays within twice the tasks of one repeat, so this
  // bound keeps them exact in 64 bits.
  static constexpr std::int64_t kMaxTasks = std::int64_t{1} << 60;

  // FIFO depth per stage (in micro-batches).
  virtual std::vector<std::int64_t> stash_depth() const = 0;
  // Per stage, the most micro-batches whose stash entry it holds at once: for Graphcore's
  // schedules the FIFO's buffers plus the micro-batch between its forward and its backward (the
  // FIFO's output, or the final and sequential stages' plain copy), for the others the
  // micro-batches in flight (the stash depth). 0 when nothing is stashed.
  virtual std::vector<std::int64_t> microbatches_held() const = 0;
  // The last stage of a pipeline of FIFOs when its backward follows its forward with none
  // between them: PopART's final forward stage, which keeps its tail instead of recomputing it.
  // Sequential has no FIFO anywhere: each of its stages recomputes from its inputs.
  bool final_forward_stage(int stage) const;
  virtual std::vector<StashKind> stash_kind() const = 0;
  virtual PhaseCounts phase_counts() const = 0;

  // Appends the copies `ipu` sends at `stage`'s boundary, micro-batch unset: activations to the
  // IPUs of stage + 1, or input gradients to those of stage - 1; none past the pipeline's ends
  // or to `ipu` itself.
  void append_boundary_copies(int ipu, int stage, CopyKind kind, std::vector<Task>& out) const;

 protected:
  // split_weight_grad asks for W tasks; they exist only when training. Throws ScheduleError
  // when one repeat would hold more than kMaxTasks tasks.
  Schedule(PipelineShape shape, RecomputationMode resolved, bool relaxed, bool split_weight_grad);

  // A task of the given work placed on `ipu`, with the substage the layout gives it.
  Task work(Op op, int stage, int ipu, std::int64_t microbatch) const;
  // Fills step, phase and code_phase of a task whose work fields are set.
  virtual void locate(Task& task) const = 0;

 private:
  void check_size() const;
  void add_inputs(int producer, const Task& consumer, Op producer_op, CopyKind kind,
                  std::vector<Task>& out) const;
  void add_pipeline_ends(int ipu, std::vector<Task>& out) const;

  PipelineShape shape_;
  StageLayout layout_;
  RecomputationMode recomputation_;
  bool relaxed_;
  bool split_weight_grad_;
};

}  // namespace ipusim::schedules
