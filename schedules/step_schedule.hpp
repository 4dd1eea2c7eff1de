#pragma once
// Graphcore's step-based schedules (TF pipeline_visitor), from the closed forms of
// /work/shared/spec/graphcore-schedules.md. With N stages, S = 2N pipeline slots when training
// (F_k is slot k, B_k slot 2N-1-k) and S = N in inference, micro-batch m (0-based) runs slot s
// at step
//   grouped      T = m + s          M + S steps
//   interleaved  T = 2m + s         2M + 2N steps (inference: as grouped)
//   sequential   T = S*m + s        S*M steps
// Within a step an IPU runs, in this order: the infeed of F_0, its stage programs in
// descending slot order (B_0 .. B_{N-1}, then F_{N-1} .. F_0, so B_k before F_k), the
// recomputations R_k (descending k), the inter-IPU copies of those stage programs, and the
// outfeed of the last stage. Graphcore also runs the copies of masked (empty) slots; they carry
// no micro-batch and are not tasks here. Several stages on one IPU run back to back in that order;
// a concurrent stage runs one sub-task per IPU in the same step.
//
// Recomputation: recompute_then_backpropagate puts R_k(m) (k < N-1) at the end of the step
// before B_k(m); recompute_and_backpropagate_interleaved puts R_k(m) just before B_k(m) for
// every stage.
//
// Phases. Code phases: grouped and interleaved take the first S steps as ramp-up and the last
// S as ramp-down (when a relaxed M leaves fewer steps, the ramp-up takes what there is first);
// sequential is all main. Utilisation phases: a step is full when every IPU that hosts a stage
// has a slot due in that step and every slot due actually runs (no micro-batch is missing).
// Ramp-up is before the first full step, ramp-down after the last one. Sequential is never
// full (one IPU at a time) and is all main; so is any relaxed shape without a full step.

#include <cstdint>
#include <utility>
#include <vector>

#include "schedules/schedule.hpp"
#include "schedules/step_rule.hpp"

namespace ipusim::schedules {

// A step-based schedule; every task comes from a closed form, nothing is stored per micro-batch.
// `rule` (one of Graphcore's three, TF PipelineSchedule) outlives the schedule.
class StepSchedule final : public Schedule {
 public:
  StepSchedule(const StepRule& rule, PipelineShape shape, RecomputationMode resolved, bool relaxed);

  std::string name() const override;
  const StepSchedule* as_steps() const override { return this; }

  // Steps of one repeat, the weight update excluded.
  std::int64_t steps() const { return steps_; }
  // Steps from a slot's micro-batch m to its m + 1 (grouped 1, interleaved 2 when training,
  // sequential S): in the steady state each window of this many steps runs every slot once.
  std::int64_t period() const { return period_; }
  // The tasks `ipu` runs in `step`, in program order (infeed, stage programs, recomputation,
  // copies, outfeed). `out` is cleared first.
  void tasks_in_step(std::int64_t step, int ipu, std::vector<Task>& out) const;
  // The first step from `from` on in which `ipu` has a task, steps() if none; lets the replay
  // skip idle IPUs (Sequential keeps all but one idle in every step).
  std::int64_t next_busy_step(int ipu, std::int64_t from) const;
  // The phases of a step (steps without tasks have phases too).
  Phase step_phase(std::int64_t step) const;
  CodePhase step_code_phase(std::int64_t step) const;
  // Whether the exchange at the end of a step moves the copies of every stage slot due in it,
  // masked or not: Grouped runs every stage's forward and backward copy programs in every step
  // and Interleaved each in alternate steps. Otherwise (Sequential) it moves the copies the
  // step's programs list (tasks_in_step).
  bool copies_every_slot() const { return rule_->pipelined(); }
  // When copies_every_slot(): the copies the exchange at the end of `step` moves, by sending
  // IPU; a masked slot's carry no micro-batch. `out` is cleared first.
  void exchange_in_step(std::int64_t step, std::vector<Task>& out) const;
  // Whether stage k's stash FIFO runs in `step`. It runs in k's forward slot: in the ramp-up
  // only where F_k runs, after that in every slot, masked or not, so that the last entries
  // drain in the ramp-down.
  bool fifo_runs(std::int64_t step, int stage) const;
  std::int64_t program_length(int ipu) const override;
  Task program_task(int ipu, std::int64_t index) const override;
  std::vector<std::int64_t> stash_depth() const override;
  std::vector<std::int64_t> microbatches_held() const override;
  std::vector<StashKind> stash_kind() const override;
  PhaseCounts phase_counts() const override;

 protected:
  void locate(Task& task) const override;

 private:
  // One task of an IPU's step program; it runs for micro-batch m at step offset + period * m.
  struct Slot {
    Task work;
    std::int64_t offset;
  };

  std::int64_t offset_of(Op op, int stage) const;
  std::int64_t offset_of(const Task& task) const;
  // The micro-batch the slot runs in `step`, or -1.
  std::int64_t microbatch_at(const Slot& slot, std::int64_t step) const;
  // How many times the slot runs in the steps before `step`.
  std::int64_t runs_before(const Slot& slot, std::int64_t step) const;
  std::int64_t tasks_before(int ipu, std::int64_t step) const;
  Task stamped(const Task& work, std::int64_t microbatch, std::int64_t step) const;
  void build_slots();
  void index_slots_by_residue();
  // The slots of `ipu` that may run in `step`: a residue's, or all of them.
  template <class Visit>
  void visit_slots_in_step(int ipu, std::int64_t step, Visit visit) const;
  void add_copies(int ipu, int stage, CopyKind kind, std::vector<Slot>& slots) const;
  bool full(std::int64_t step) const;
  void find_full_steps();
  void slot_copies(std::int64_t step, std::vector<Task>& out) const;

  const StepRule* rule_;
  int slots_per_microbatch_;  // S
  std::int64_t period_;
  std::int64_t steps_;
  std::int64_t code_ramp_up_ = 0;
  std::int64_t code_ramp_down_ = 0;
  std::vector<std::vector<Slot>> slots_;  // per IPU, in program order within a step
  // Per IPU, per step modulo the period: the slots that may run in such a step, in program
  // order, so that a step's tasks are found without visiting the IPU's other slots (Sequential
  // runs one of an IPU's many slots a step). Empty when the period is too long to tabulate.
  std::vector<std::vector<std::vector<int>>> slots_by_residue_;
  std::vector<std::pair<std::int64_t, std::int64_t>> slot_offsets_;  // per IPU: lowest, highest
  std::int64_t first_full_ = -1;
  std::int64_t last_full_ = -1;
  std::int64_t full_steps_ = 0;
  std::int64_t idle_tail_ = 0;
};

}  // namespace ipusim::schedules
