#pragma once
// What the HTML report draws (and the memory counters of the trace), recorded from the
// replay's events: task spans per IPU, transfers per link, host transfers, stash FIFO traffic
// with streaming memory, BSP sync and exchange spans, phase starts, the weight update and
// memory over time per IPU.
//
// A Timeline stays bounded however long the run (the trace, which must hold every span, is
// streamed instead: sim/report/trace.hpp): past `max_events` spans it keeps the first part of
// the run (whole BSP steps, or everything that started before a cycle for the other
// schedules) and only counts the rest. Memory is kept as the maximum per time bucket; buckets
// double in width whenever there would be more than `memory_buckets` of them, so a long run
// keeps its envelope at a fixed cost. Phase starts and the weight update are always kept.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/core/time.hpp"
#include "sim/replay/replay_observer.hpp"

namespace ipusim::sim {

// Memory of one IPU over a bucket of time: the sample with the largest dynamic part (stash in
// flight plus running activations) seen in [at, at + bucket width), the value carried in from
// the previous bucket included. Static memory is in the layout.
struct MemoryPoint {
  core::Cycles at;
  std::int64_t stash_bytes = 0;
  std::int64_t live_bytes = 0;
};

// The cycle at which a phase (ramp-up, main, ramp-down, weight update) began.
struct PhaseStart {
  schedules::Phase phase = schedules::Phase::kRampUp;  // the phase the time counts towards
  core::Cycles start;
};

// Everything recorded from one replay for drawing, bounded by TimelineOptions (see the top).
struct Timeline {
  ReplayLayout layout;
  std::vector<TaskSpan> tasks;  // compute and host transfers, in the order reported
  std::vector<TransferSpan> transfers;
  std::vector<StreamSpan> streams;  // stash FIFOs to and from streaming memory
  std::vector<BarrierSpan> barriers;
  std::vector<WeightUpdateSpan> weight_updates;
  std::vector<PhaseStart> phases;
  std::vector<std::vector<MemoryPoint>> memory;  // per IPU, by time
  std::int64_t memory_bucket_cycles = 1;
  core::Cycles end;  // end of the step (weight update included)

  // Truncation: spans starting at or after `recorded_until` were counted, not kept.
  bool truncated = false;
  core::Cycles recorded_until;
  std::int64_t steps = 0;           // BSP steps seen (0 for dependency-ordered schedules)
  std::int64_t recorded_steps = 0;  // BSP steps kept in full
  std::int64_t spans_seen = 0;      // tasks, transfers, streams and barriers reported
  std::int64_t spans_kept = 0;

  double clock_hz() const { return layout.clock_hz; }
  // Everything `ipu` holds at `point`, by category: its static memory, the stash (FIFOs and
  // entries in flight) and the running task's activations.
  MemoryByCategory memory_by_category(int ipu, const MemoryPoint& point) const;
  // "showing the first 120 of 2,000 steps (1,234,567 of 20,000,000 cycles)"; empty when
  // nothing was dropped.
  std::string truncation_note() const;
};

// The bounds that keep a Timeline's size independent of the run's length.
struct TimelineOptions {
  std::int64_t max_events = 200'000;   // spans kept: tasks, transfers, streams and barriers
  std::int64_t memory_buckets = 4096;  // per IPU
};

// The short name a span carries in the trace and the report: "F3 s1" (op, 1-based micro-batch,
// stage), "infeed m3", "act s0 m3" for copies ("grad" for gradients; no m when the copy is a
// BSP slot's).
std::string span_label(const schedules::Task& task);

// Listens to one replay and fills a Timeline; read it after the replay returns.
class TimelineRecorder : public ReplayObserver {
 public:
  explicit TimelineRecorder(TimelineOptions options = {});

  const Timeline& timeline() const { return timeline_; }

  void on_begin(const ReplayLayout& layout) override;
  void on_task(const TaskSpan& span) override;
  void on_transfer(const TransferSpan& span) override;
  void on_stream(const StreamSpan& span) override;
  void on_barrier(const BarrierSpan& span) override;
  void on_phase(schedules::Phase phase, core::Cycles start) override;
  void on_memory(const MemorySample& sample) override;
  void on_weight_update(const WeightUpdateSpan& span) override;
  void on_end(core::Cycles end) override;

 private:
  // Whether a span of BSP step `step` (-1 for dependency-ordered runs) is kept; the first
  // span over the limit fixes where the recording stops.
  bool keep(std::int64_t step);
  void cut(std::int64_t step);
  void note_step(std::int64_t step, core::Cycles start);
  void coarsen_memory(int ipu);

  TimelineOptions options_;
  Timeline timeline_;
  std::int64_t current_step_ = -1;
  core::Cycles step_start_;
  std::vector<MemoryPoint> carried_;  // per IPU: the latest sample
};

}  // namespace ipusim::sim
