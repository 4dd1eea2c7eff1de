#include "sim/replay/replay.hpp"

#include <algorithm>
#include <limits>
#include <memory>

#include "schedules/step_schedule.hpp"
#include "sim/core/error.hpp"
#include "sim/replay/replay_state.hpp"

namespace ipusim::sim {
namespace detail {

using core::Cycles;

void Observers::tell_task(const schedules::Task& task, Cycles start, std::int64_t cycles,
                          schedules::Phase phase, double flops, std::int64_t bytes) const {
  const TaskSpan span{task, start, start + Cycles{cycles}, phase, flops, bytes};
  notify([&span](ReplayObserver& o) { o.on_task(span); });
}

void Observers::tell_transfer(const schedules::Task& task, std::int64_t bytes,
                              const LinkUse& use) const {
  const TransferSpan span{task, use.from, use.to, bytes, use.begin, use.end};
  notify([&span](ReplayObserver& o) { o.on_transfer(span); });
}

void Observers::tell_memory(const MemoryTracker& memory, int ipu, Cycles now) const {
  const auto sample = memory.sample(ipu, now);
  notify([&sample](ReplayObserver& o) { o.on_memory(sample); });
}

void Observers::phase(schedules::Phase phase, Cycles start) const {
  notify([phase, start](ReplayObserver& o) { o.on_phase(phase, start); });
}

void Observers::tell_barrier(BarrierSpan::Kind kind, std::int64_t step, Cycles start,
                             Cycles end) const {
  const BarrierSpan span{kind, step, start, end};
  notify([&span](ReplayObserver& o) { o.on_barrier(span); });
}

ReplayState::ReplayState(const RunSpec& spec, const schedules::Schedule& schedule,
                         const CostModel& cost, const ReplayOptions& options)
    : spec(spec),
      schedule(schedule),
      cost(cost),
      ipus(spec.pipeline.ipus_per_replica()),
      observers(options.observers),
      costs(spec, schedule, cost),
      memory(cost, schedule, ipus, spec.hardware.memory_per_ipu_bytes,
             spec.pipeline.offload_activations),
      topology(spec.hardware, ipus),
      ledger(ipus,
             schedule.step_based() ? Ledger::PhaseClock::kSteps : Ledger::PhaseClock::kBoundaries),
      progress_(options.progress),
      progress_at_(options.progress ? kReplayProgressTasks
                                    : std::numeric_limits<std::int64_t>::max()) {}

void ReplayState::tell_progress() {
  progress_at_ = tasks - tasks % kReplayProgressTasks + kReplayProgressTasks;
  progress_(tasks);
}

// Programs end with a few copies at most, so this scans only their tails.
std::int64_t last_compute_index(const schedules::Schedule& schedule, int ipu) {
  for (auto i = schedule.program_length(ipu) - 1; i >= 0; --i) {
    if (schedules::is_compute(schedule.program_task(ipu, i).op))
      return i;
  }
  return -1;
}

}  // namespace detail

namespace {

using core::Cycles;
using detail::ReplayState;

ReplayLayout layout_of(const ReplayState& state) {
  ReplayLayout layout;
  layout.ipus = state.ipus;
  layout.physical = state.topology.physical();
  layout.replicas = state.spec.pipeline.replication_factor;
  layout.clock_hz = state.spec.hardware.clock_hz;
  layout.memory_capacity = state.spec.hardware.memory_per_ipu_bytes;
  layout.step_based = state.schedule.step_based();
  layout.static_memory = state.memory.static_memory();
  layout.cost = &state.cost;
  return layout;
}

// One IPU's weight update: a tied word matrix's exchange between IPUs, the schedule's AllReduce
// (with replicas: the collectives, see TaskCosts) and WeightUpdate, which streams any offloaded
// optimizer state in and out before the update on chip and all-gathers sharded weights after.
WeightUpdateSpan weight_update(ReplayState& state, int ipu, Cycles start) {
  const Cycles exchanged = start + Cycles{state.costs.tied_exchange_cycles(ipu)};
  const auto& costs = state.costs;
  WeightUpdateSpan span{ipu, start, start, exchanged, exchanged, exchanged, exchanged};
  for (const auto& task : state.schedule.weight_update_tasks(ipu)) {
    ++state.tasks;
    if (task.op == schedules::Op::kAllReduce) {
      const auto reduce_scatter = costs.reduce_scatter_cycles(ipu);
      span.reduce_scatter_end = reduce_scatter > 0 ? exchanged + Cycles{reduce_scatter} : start;
      span.all_reduce_end = exchanged + Cycles{reduce_scatter + costs.all_reduce_cycles(ipu)};
      continue;
    }
    IPUSIM_CHECK(task.op == schedules::Op::kWeightUpdate);
    const auto bytes = costs.offload_bytes(ipu);
    const auto offload = costs.streaming_cycles(bytes);
    span.offload_end = span.all_reduce_end + Cycles{offload};
    span.update_end = span.offload_end + Cycles{costs.weight_update_cycles(ipu)};
    span.end = span.update_end + Cycles{costs.all_gather_cycles(ipu)};
    state.ledger.weight_update(span, bytes);
  }
  return span;
}

WeightUpdateBreakdown breakdown_of(const WeightUpdateSpan& span) {
  WeightUpdateBreakdown parts;
  parts.ipu = span.ipu;
  parts.reduce_scatter = (span.reduce_scatter_end - span.start).count;
  parts.all_reduce = (span.all_reduce_end - span.reduce_scatter_end).count;
  parts.state_stream = (span.offload_end - span.all_reduce_end).count;
  parts.update = (span.update_end - span.offload_end).count;
  parts.all_gather = (span.end - span.update_end).count;
  return parts;
}

// After the ramp-down every IPU updates its weights; a global sync ends the step, and the host
// call starts the next program; the next step waits for its input if the hosts are slower.
Cycles run_weight_update(ReplayState& state, Cycles start) {
  if (!state.spec.pipeline.training)
    return start;
  state.observers.phase(schedules::Phase::kWeightUpdate, start);
  std::int64_t longest = -1;
  for (int ipu = 0; ipu < state.ipus; ++ipu) {
    const auto span = weight_update(state, ipu, start);
    state.observers.notify([&span](ReplayObserver& o) { o.on_weight_update(span); });
    if ((span.end - start).count > longest) {
      longest = (span.end - start).count;
      state.weight_update = breakdown_of(span);
    }
  }
  const auto& hw = state.spec.hardware;
  const int replicas = state.spec.pipeline.replication_factor;
  auto& parts = state.weight_update;
  parts.sync = state.ipus > 1 ? hw.global_sync_cycles(state.ipus * replicas) : 0;
  // One device program runs repeat_count steps, and the host calls it once.
  parts.host_call = (hw.host_call_cycles(state.spec.model.weight_tensors()) +
                     state.spec.pipeline.repeat_count - 1) /
                    state.spec.pipeline.repeat_count;
  const std::int64_t device = longest + parts.sync + parts.host_call;
  parts.input_wait =
      std::max<std::int64_t>(0, state.costs.host_input().cycles - (start.count + device));
  return start + Cycles{device + parts.input_wait};
}

void start_memory(ReplayState& state) {
  for (int ipu = 0; ipu < state.ipus; ++ipu)
    state.memory.observe(ipu, 1, Cycles{0});
}

// The totals, from the ledger (which checked them) and the machine.
ReplayResult result_of(const ReplayState& state, Cycles end) {
  ReplayResult result;
  result.step_cycles = end.count;
  result.phase_cycles = state.ledger.phase_cycles();
  result.weight_update = state.weight_update;
  const auto peaks = state.memory.stats();
  result.ipus.resize(peaks.size());
  for (int ipu = 0; ipu < state.ipus; ++ipu) {
    auto& stats = result.ipus[ipu];
    static_cast<MemoryPeak&>(stats) = peaks[ipu];
    stats.physical = state.topology.physical()[ipu];
    const auto& busy = state.ledger.busy(ipu);
    stats.busy_cycles = busy.total;
    stats.busy_in_phase = busy.in_phase;
    stats.host_busy_cycles = busy.host;
    stats.streaming_busy_cycles = busy.streaming;
    stats.streaming_bytes = busy.streamed_bytes;
  }
  result.links = state.topology.stats();
  result.tasks = state.tasks;
  auto overflows = state.memory.overflows();
  if (!overflows.empty()) {
    for (auto& overflow : overflows)
      overflow.physical = state.topology.physical()[overflow.ipu];
    result.out_of_memory = OutOfMemory{state.spec.hardware.memory_per_ipu_bytes, overflows};
  }
  return result;
}

// Without observers nobody needs the events in time order, so the program-order fast path runs;
// where it gives up, the event engine replays the pipeline from a fresh state.
Cycles replay_pipeline(std::unique_ptr<ReplayState>& state, const ReplayOptions& options) {
  const auto* steps = state->schedule.as_steps();
  if (steps)
    return detail::replay_steps(*state, *steps);
  if (!state->observers.any()) {
    if (const auto end = detail::replay_in_program_order(*state))
      return *end;
    state = std::make_unique<ReplayState>(state->spec, state->schedule, state->cost, options);
    start_memory(*state);
  }
  return detail::replay_in_dependency_order(*state);
}

}  // namespace

ReplayResult replay(const RunSpec& spec, const CostModel& cost, const ReplayOptions& options) {
  const schedules::Schedule& schedule = *spec.schedule;
  auto state = std::make_unique<ReplayState>(spec, schedule, cost, options);
  const ReplayLayout layout = layout_of(*state);
  state->observers.notify([&layout](ReplayObserver& o) { o.on_begin(layout); });
  start_memory(*state);
  const Cycles pipeline_end = replay_pipeline(state, options);
  state->ledger.end_pipeline(pipeline_end);
  const Cycles end = run_weight_update(*state, pipeline_end);
  state->ledger.end_step(end);
  state->observers.notify([end](ReplayObserver& o) { o.on_end(end); });
  ReplayResult result = result_of(*state, end);
  if (result.out_of_memory && !options.allow_oom)
    throw core::SimulationOutcome(result.out_of_memory->message() +
                                  "\nWhat would help: " + memory_help(spec));
  return result;
}

}  // namespace ipusim::sim
