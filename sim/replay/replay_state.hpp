#pragma once
// Internal to the replay: what its two engines share while one step replays (the inputs, the
// machine, the observers, the ledger of totals). Not part of the room's interface.

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "sim/machine/memory_tracker.hpp"
#include "sim/machine/topology.hpp"
#include "sim/replay/ledger.hpp"
#include "sim/replay/replay.hpp"
#include "sim/replay/task_costs.hpp"

namespace ipusim::sim::detail {

// Fans every event out to the observers, in order; free when there are none.
class Observers {
 public:
  explicit Observers(const std::vector<ReplayObserver*>& observers) : observers_(observers) {}

  bool any() const { return !observers_.empty(); }
  template <typename Call>
  void notify(const Call& call) const {
    for (auto* observer : observers_)
      call(*observer);
  }
  // Each returns at once without observers; the guard is inline, the fan-out is not.
  void task(const schedules::Task& task, core::Cycles start, std::int64_t cycles,
            schedules::Phase phase, double flops, std::int64_t bytes) const {
    if (any())
      tell_task(task, start, cycles, phase, flops, bytes);
  }
  void transfer(const schedules::Task& task, std::int64_t bytes, const LinkUse& use) const {
    if (any())
      tell_transfer(task, bytes, use);
  }
  void memory(const MemoryTracker& memory, int ipu, core::Cycles now) const {
    if (any())
      tell_memory(memory, ipu, now);
  }
  void phase(schedules::Phase phase, core::Cycles start) const;
  void barrier(BarrierSpan::Kind kind, std::int64_t step, core::Cycles start,
               core::Cycles end) const {
    if (any())
      tell_barrier(kind, step, start, end);
  }

 private:
  void tell_task(const schedules::Task& task, core::Cycles start, std::int64_t cycles,
                 schedules::Phase phase, double flops, std::int64_t bytes) const;
  void tell_transfer(const schedules::Task& task, std::int64_t bytes, const LinkUse& use) const;
  void tell_memory(const MemoryTracker& memory, int ipu, core::Cycles now) const;
  void tell_barrier(BarrierSpan::Kind kind, std::int64_t step, core::Cycles start,
                    core::Cycles end) const;

  const std::vector<ReplayObserver*>& observers_;
};

// The state both replay engines share while one step replays: inputs, observers and the
// ledger (see the top).
struct ReplayState {
  ReplayState(const RunSpec& spec, const schedules::Schedule& schedule, const CostModel& cost,
              const ReplayOptions& options);

  const RunSpec& spec;
  const schedules::Schedule& schedule;
  const CostModel& cost;
  const int ipus;
  const Observers observers;
  const TaskCosts costs;
  MemoryTracker memory;
  Topology topology;
  Ledger ledger;                        // every busy total and phase length
  WeightUpdateBreakdown weight_update;  // filled by the weight-update phase
  std::int64_t tasks = 0;

  // Tells the progress callback of the tasks counted so far once kReplayProgressTasks more
  // have run. The engines call it outside their per-task loops: the call it may make would
  // make a loop reload what it keeps in registers, which costs more than the comparison.
  void check_progress() {
    if (tasks >= progress_at_)
      tell_progress();
  }

 private:
  void tell_progress();

  const std::function<void(std::int64_t)>& progress_;
  std::int64_t progress_at_;  // the count that next tells progress; the most without a callback
};

// The pipeline part of the step (everything before the weight update); each returns its end.
// Both report phases, tasks, transfers and memory through state.observers, and the same
// work's busy cycles and phases to state.ledger; the caller ends the ledger's pipeline.
core::Cycles replay_steps(ReplayState& state, const schedules::StepSchedule& schedule);
core::Cycles replay_in_dependency_order(ReplayState& state);
// The same without observers, from the programs alone (program_replay.cpp); nullopt when it
// gives up on a schedule, which then needs replay_in_dependency_order on a fresh state.
std::optional<core::Cycles> replay_in_program_order(ReplayState& state);
// Where `ipu`'s last compute task sits in its program, or -1 when it has none.
std::int64_t last_compute_index(const schedules::Schedule& schedule, int ipu);

}  // namespace ipusim::sim::detail
