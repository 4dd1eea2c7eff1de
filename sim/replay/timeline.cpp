#include "sim/replay/timeline.hpp"

#include <algorithm>

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"

namespace ipusim::sim {
namespace {

std::int64_t dynamic_bytes(const MemoryPoint& point) {
  return point.stash_bytes + point.live_bytes;
}

template <typename Span, typename Drop>
void drop_if(std::vector<Span>& spans, const Drop& drop) {
  spans.erase(std::remove_if(spans.begin(), spans.end(), drop), spans.end());
}

}  // namespace

std::string span_label(const schedules::Task& task) {
  using schedules::Op;
  const std::string m = std::to_string(task.microbatch + 1);
  switch (task.op) {
    case Op::kInfeed:
      return std::string(to_string(Op::kInfeed)) + " m" + m;
    case Op::kOutfeed:
      return std::string(to_string(Op::kOutfeed)) + " m" + m;
    case Op::kCopy: {
      const bool gradient = task.copy == schedules::CopyKind::kGradient;
      return std::string(gradient ? "grad s" : "act s") + std::to_string(task.stage) +
             (task.microbatch >= 0 ? " m" + m : "");
    }
    case Op::kWeightUpdate:
    case Op::kAllReduce:
      return std::string(to_string(task.op));
    default:
      return schedules::op_letter(task.op) + m + " s" + std::to_string(task.stage);
  }
}

std::string Timeline::truncation_note() const {
  if (!truncated)
    return "";
  const std::string cycles =
      with_commas(recorded_until.count) + " of " + with_commas(end.count) + " cycles";
  if (layout.step_based) {
    return "showing the first " + with_commas(recorded_steps) + " of " + with_commas(steps) +
           " steps (" + cycles + ")";
  }
  return "showing the first " + cycles;
}

MemoryByCategory Timeline::memory_by_category(int ipu, const MemoryPoint& point) const {
  auto categories = layout.static_memory.at(ipu);
  categories[MemoryCategory::kStash] += point.stash_bytes;
  categories[MemoryCategory::kActivations] += point.live_bytes;
  return categories;
}

TimelineRecorder::TimelineRecorder(TimelineOptions options) : options_(options) {
  IPUSIM_CHECK(options_.max_events >= 0 && options_.memory_buckets >= 2);
}

void TimelineRecorder::on_begin(const ReplayLayout& layout) {
  timeline_ = Timeline{};
  timeline_.layout = layout;
  timeline_.memory.assign(layout.ipus, {});
  carried_.assign(layout.ipus, {});
  current_step_ = -1;
}

void TimelineRecorder::note_step(std::int64_t step, core::Cycles start) {
  timeline_.steps = std::max(timeline_.steps, step + 1);
  if (step <= current_step_)
    return;
  // The first span reported in a step starts when the step starts: every IPU begins its
  // step's program then, and a step without tasks begins with its sync.
  current_step_ = step;
  step_start_ = start;
}

bool TimelineRecorder::keep(std::int64_t step) {
  ++timeline_.spans_seen;
  if (timeline_.truncated)
    return false;
  if (timeline_.spans_kept < options_.max_events) {
    ++timeline_.spans_kept;
    return true;
  }
  cut(step);
  return false;
}

// BSP runs are cut at the start of the step in progress; dependency-ordered runs where the
// replay's clock is (the start of the latest compute task), since every later event starts
// no earlier. Spans already kept past the cut are dropped so that the kept part is complete.
void TimelineRecorder::cut(std::int64_t step) {
  auto& t = timeline_;
  t.truncated = true;
  if (t.layout.step_based) {
    t.recorded_until = step_start_;
    t.recorded_steps = std::max<std::int64_t>(step, 0);
  } else {
    t.recorded_until = core::Cycles{0};
    for (const auto& span : t.tasks) {
      if (schedules::is_compute(span.task.op))
        t.recorded_until = std::max(t.recorded_until, span.start);
    }
  }
  const auto until = t.recorded_until;
  drop_if(t.tasks, [until](const TaskSpan& s) { return s.start >= until; });
  drop_if(t.transfers, [until](const TransferSpan& s) { return s.start >= until; });
  drop_if(t.streams, [until](const StreamSpan& s) { return s.start >= until; });
  drop_if(t.barriers, [until](const BarrierSpan& s) { return s.start >= until; });
  t.spans_kept =
      std::int64_t(t.tasks.size() + t.transfers.size() + t.streams.size() + t.barriers.size());
}

void TimelineRecorder::on_task(const TaskSpan& span) {
  if (timeline_.layout.step_based)
    note_step(span.task.step, span.start);
  if (keep(current_step_))
    timeline_.tasks.push_back(span);
}

void TimelineRecorder::on_transfer(const TransferSpan& span) {
  if (keep(current_step_))
    timeline_.transfers.push_back(span);
}

void TimelineRecorder::on_stream(const StreamSpan& span) {
  note_step(span.step, span.start);
  if (keep(current_step_))
    timeline_.streams.push_back(span);
}

void TimelineRecorder::on_barrier(const BarrierSpan& span) {
  note_step(span.step, span.start);
  if (keep(span.step))
    timeline_.barriers.push_back(span);
}

void TimelineRecorder::on_phase(schedules::Phase phase, core::Cycles start) {
  timeline_.phases.push_back({phase, start});
}

void TimelineRecorder::on_weight_update(const WeightUpdateSpan& span) {
  timeline_.weight_updates.push_back(span);
}

void TimelineRecorder::on_memory(const MemorySample& sample) {
  IPUSIM_CHECK(sample.ipu >= 0 && sample.ipu < int(timeline_.memory.size()));
  auto& points = timeline_.memory[sample.ipu];
  const std::int64_t width = timeline_.memory_bucket_cycles;
  const std::int64_t bucket = sample.at.count / width;
  const MemoryPoint point{sample.at, sample.stash_bytes, sample.live_bytes};
  if (points.empty() || points.back().at.count / width < bucket) {
    // A new bucket starts with what was held when it began, unless the sample replaces it
    // right there.
    MemoryPoint opened = sample.at.count > bucket * width ? carried_[sample.ipu] : point;
    opened.at = core::Cycles{bucket * width};
    points.push_back(opened);
  }
  auto& last = points.back();
  if (dynamic_bytes(point) > dynamic_bytes(last)) {
    last.stash_bytes = point.stash_bytes;
    last.live_bytes = point.live_bytes;
  }
  carried_[sample.ipu] = point;
  if (std::int64_t(points.size()) > options_.memory_buckets) {
    timeline_.memory_bucket_cycles *= 2;
    for (int ipu = 0; ipu < int(timeline_.memory.size()); ++ipu)
      coarsen_memory(ipu);
  }
}

void TimelineRecorder::coarsen_memory(int ipu) {
  const std::int64_t width = timeline_.memory_bucket_cycles;
  std::vector<MemoryPoint> merged;
  for (const auto& point : timeline_.memory[ipu]) {
    const std::int64_t start = point.at.count / width * width;
    if (merged.empty() || merged.back().at.count != start) {
      merged.push_back(point);
      merged.back().at = core::Cycles{start};
    } else if (dynamic_bytes(point) > dynamic_bytes(merged.back())) {
      merged.back().stash_bytes = point.stash_bytes;
      merged.back().live_bytes = point.live_bytes;
    }
  }
  timeline_.memory[ipu] = std::move(merged);
}

void TimelineRecorder::on_end(core::Cycles end) {
  timeline_.end = end;
  if (!timeline_.truncated) {
    timeline_.recorded_until = end;
    timeline_.recorded_steps = timeline_.steps;
  }
}

}  // namespace ipusim::sim
