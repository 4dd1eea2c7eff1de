// The BSP engine for Graphcore's step-based schedules; see replay.hpp for why it does not use
// the event queue. In a step each IPU with work runs its step program from the step's start;
// then every IPU syncs and the step's exchange moves the copies the schedule lists.
// Under offload_activations each stash FIFO streams its entries to and from streaming memory
// when it runs, right after its IPU's stage programs.

#include <algorithm>
#include <functional>
#include <optional>
#include <queue>
#include <utility>

#include "schedules/step_schedule.hpp"
#include "sim/replay/replay_state.hpp"

namespace ipusim::sim::detail {
namespace {

using core::Cycles;
using schedules::Op;
using schedules::Task;

// A stash FIFO kept in streaming memory.
struct OffloadedFifo {
  int stage = 0;
  std::int64_t bytes = 0;  // one entry: one micro-batch of what the stage stashes
};

class StepReplay {
 public:
  StepReplay(ReplayState& state, const schedules::StepSchedule& schedule)
      : state_(state),
        schedule_(schedule),
        fifos_(offloaded_fifos()),
        fifo_ipus_(ipus_with_fifos()),
        stepped_(state.ipus, -1) {}

  Cycles run();

 private:
  static constexpr std::size_t kNoFifos = std::size_t(-1);

  std::vector<std::vector<OffloadedFifo>> offloaded_fifos() const;
  std::vector<int> ipus_with_fifos() const;
  Cycles run_ipu_step(int ipu, std::int64_t step, schedules::Phase phase, Cycles start);
  Cycles run_host_transfer(int ipu, const Task& task, schedules::Phase phase, Cycles start);
  Cycles run_compute(int ipu, const Task& task, std::int64_t step, schedules::Phase phase,
                     Cycles start);
  static std::size_t fifo_position(const std::vector<Task>& tasks);
  Cycles stream_fifos(int ipu, std::int64_t step, schedules::Phase phase, Cycles cursor);
  Cycles stream_idle_fifos(std::int64_t step, schedules::Phase phase, Cycles start);
  Cycles stream(int ipu, const OffloadedFifo& fifo, StreamSpan::Kind kind, std::int64_t step,
                schedules::Phase phase, Cycles start);
  Cycles exchange(std::int64_t step, Cycles compute_end);

  ReplayState& state_;
  const schedules::StepSchedule& schedule_;
  std::vector<std::vector<OffloadedFifo>> fifos_;  // per IPU
  std::vector<int> fifo_ipus_;         // the IPUs with offloaded FIFOs: most runs have none
  std::vector<std::int64_t> stepped_;  // per IPU: the last step it ran tasks in
  std::vector<Task> tasks_;
  std::vector<Task> copies_;
};

Cycles StepReplay::run() {
  Cycles now{0};
  std::optional<schedules::Phase> last_phase;
  // (next busy step, IPU), earliest first: IPUs run in index order within a step, and the
  // idle ones of Sequential's long steps cost nothing.
  using Wake = std::pair<std::int64_t, int>;
  std::priority_queue<Wake, std::vector<Wake>, std::greater<>> next_busy;
  for (int ipu = 0; ipu < state_.ipus; ++ipu)
    next_busy.push({schedule_.next_busy_step(ipu, 0), ipu});
  for (std::int64_t step = 0; step < schedule_.steps(); ++step) {
    const auto phase = schedule_.step_phase(step);
    if (phase != last_phase)
      state_.observers.phase(phase, now);
    last_phase = phase;
    Cycles compute_end = now;
    copies_.clear();
    while (next_busy.top().first == step) {
      const int ipu = next_busy.top().second;
      next_busy.pop();
      compute_end = std::max(compute_end, run_ipu_step(ipu, step, phase, now));
      stepped_[ipu] = step;
      next_busy.push({schedule_.next_busy_step(ipu, step + 1), ipu});
    }
    compute_end = std::max(compute_end, stream_idle_fifos(step, phase, now));
    const Cycles exchanged = exchange(step, compute_end);
    state_.ledger.step_ends(phase, exchanged);
    state_.check_progress();
    now = exchanged;
  }
  return now;
}

// Copies are not run here: they cross in the step's exchange, which takes them from the step
// programs unless the schedule copies in every slot.
Cycles StepReplay::run_ipu_step(int ipu, std::int64_t step, schedules::Phase phase, Cycles start) {
  schedule_.tasks_in_step(step, ipu, tasks_);
  Cycles cursor = start;
  const std::size_t fifos_at = fifos_[ipu].empty() ? kNoFifos : fifo_position(tasks_);
  for (std::size_t i = 0; i < tasks_.size(); ++i) {
    const Task& task = tasks_[i];
    if (i == fifos_at)
      cursor = stream_fifos(ipu, step, phase, cursor);
    if (task.op == Op::kCopy) {
      if (!schedule_.copies_every_slot())
        copies_.push_back(task);
    } else if (task.op == Op::kInfeed || task.op == Op::kOutfeed) {
      ++state_.tasks;
      cursor = run_host_transfer(ipu, task, phase, cursor);
    } else if (schedules::is_compute(task.op)) {
      ++state_.tasks;
      cursor = run_compute(ipu, task, step, phase, cursor);
    }
  }
  return fifos_at == tasks_.size() ? stream_fifos(ipu, step, phase, cursor) : cursor;
}

Cycles StepReplay::run_host_transfer(int ipu, const Task& task, schedules::Phase phase,
                                     Cycles start) {
  const auto bytes = state_.costs.host_bytes(task);
  const auto cycles = state_.costs.host_cycles(bytes);
  state_.ledger.host_transfer(ipu, cycles);
  state_.observers.task(task, start, cycles, phase, 0.0, bytes);
  return start + Cycles{cycles};
}

Cycles StepReplay::run_compute(int ipu, const Task& task, std::int64_t step, schedules::Phase phase,
                               Cycles start) {
  const auto cycles = state_.costs.compute_cycles(task);
  const auto live = state_.costs.live_bytes(task);
  auto& memory = state_.memory;
  memory.set_live(ipu, live);
  memory.observe(ipu, step + 1, start);
  const double flops = state_.observers.any() ? state_.costs.flops(task) : 0.0;
  state_.observers.task(task, start, cycles, phase, flops, live);
  state_.observers.memory(memory, ipu, start);
  memory.set_live(ipu, 0);
  state_.ledger.compute(ipu, cycles, phase);
  const Cycles end = start + Cycles{cycles};
  state_.observers.memory(memory, ipu, end);
  return end;
}

// Per IPU, the FIFOs kept in streaming memory: none without offload_activations.
std::vector<std::vector<OffloadedFifo>> StepReplay::offloaded_fifos() const {
  std::vector<std::vector<OffloadedFifo>> fifos(static_cast<std::size_t>(state_.ipus));
  if (!state_.spec.pipeline.offload_activations)
    return fifos;
  const auto depth = schedule_.stash_depth();
  for (int s = 0; s < int(state_.cost.stages.size()); ++s) {
    for (const auto& sub : state_.cost.stages[s]) {
      if (depth[s] > 0 && sub.stash_bytes > 0)
        fifos[sub.ipu].push_back({s, sub.stash_bytes});
    }
  }
  return fifos;
}

std::vector<int> StepReplay::ipus_with_fifos() const {
  std::vector<int> ipus;
  for (int ipu = 0; ipu < int(fifos_.size()); ++ipu) {
    if (!fifos_[ipu].empty())
      ipus.push_back(ipu);
  }
  return ipus;
}

// Where in an IPU's step its FIFOs run: right after the stage programs (F, B, W), before the
// recomputation, copies and outfeed (TF's PipelineVisitor order), wherever the schedule lists
// the recomputation; in a step without stage programs, before the first of those.
std::size_t StepReplay::fifo_position(const std::vector<Task>& tasks) {
  const auto last_program = std::find_if(tasks.rbegin(), tasks.rend(), [](const Task& task) {
    return schedules::is_compute(task.op) && task.op != Op::kRecompute;
  });
  if (last_program != tasks.rend())
    return std::size_t(tasks.rend() - last_program);
  const auto first_after = std::find_if(tasks.begin(), tasks.end(), [](const Task& task) {
    return task.op == Op::kRecompute || task.op == Op::kCopy || task.op == Op::kOutfeed;
  });
  return std::size_t(first_after - tasks.begin());
}

// Each run of an offloaded FIFO copies its oldest entry from streaming memory to its output,
// then its input into the freed buffer (TF's FifoOp); the IPU waits for both.
Cycles StepReplay::stream_fifos(int ipu, std::int64_t step, schedules::Phase phase, Cycles cursor) {
  for (const auto& fifo : fifos_[ipu]) {
    if (!schedule_.fifo_runs(step, fifo.stage))
      continue;
    for (const auto kind : {StreamSpan::Kind::kStashRead, StreamSpan::Kind::kStashWrite})
      cursor = stream(ipu, fifo, kind, step, phase, cursor);
  }
  return cursor;
}

// The FIFOs of IPUs without tasks in this step still run in their slots.
Cycles StepReplay::stream_idle_fifos(std::int64_t step, schedules::Phase phase, Cycles start) {
  Cycles end = start;
  for (const int ipu : fifo_ipus_) {
    if (stepped_[ipu] != step)
      end = std::max(end, stream_fifos(ipu, step, phase, start));
  }
  return end;
}

Cycles StepReplay::stream(int ipu, const OffloadedFifo& fifo, StreamSpan::Kind kind,
                          std::int64_t step, schedules::Phase phase, Cycles start) {
  const auto cycles = state_.costs.streaming_cycles(fifo.bytes);
  state_.ledger.stream(ipu, cycles, fifo.bytes);
  const Cycles end = start + Cycles{cycles};
  if (state_.observers.any()) {
    const StreamSpan span{kind, ipu, fifo.stage, step, phase, fifo.bytes, start, end};
    state_.observers.notify([&span](ReplayObserver& o) { o.on_stream(span); });
  }
  return end;
}

// All IPUs sync, then the step's copies cross the links at once.
Cycles StepReplay::exchange(std::int64_t step, Cycles compute_end) {
  if (state_.ipus <= 1)
    return compute_end;
  const auto& hw = state_.spec.hardware;
  const Cycles synced = compute_end + Cycles{hw.global_sync_cycles(state_.ipus)};
  state_.observers.barrier(BarrierSpan::Kind::kSync, step, compute_end, synced);
  if (schedule_.copies_every_slot())
    schedule_.exchange_in_step(step, copies_);
  Cycles end = synced;
  for (const auto& copy : copies_) {
    ++state_.tasks;
    const auto bytes = state_.costs.copy_bytes(copy);
    const auto use = state_.topology.send(copy.ipu, copy.peer_ipu, bytes, synced);
    state_.observers.transfer(copy, bytes, use);
    end = std::max(end, use.end);
  }
  if (copies_.empty())
    return end;
  end += Cycles{hw.exchange_overhead_cycles};
  state_.observers.barrier(BarrierSpan::Kind::kExchange, step, synced, end);
  return end;
}

}  // namespace

Cycles replay_steps(ReplayState& state, const schedules::StepSchedule& schedule) {
  return StepReplay(state, schedule).run();
}

}  // namespace ipusim::sim::detail
