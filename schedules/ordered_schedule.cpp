#include "schedules/ordered_schedule.hpp"

#include <algorithm>

#include "sim/core/error.hpp"

namespace ipusim::schedules {

OrderedSchedule::OrderedSchedule(const OrderRule& rule, PipelineShape shape,
                                 RecomputationMode resolved)
    : Schedule(std::move(shape), resolved, false, rule.splits_weight_grad()),
      rule_(&rule),
      group_(1),
      chunks_(1) {
  if (rule_->virtual_stages()) {
    group_ = layout().ipus();
    chunks_ = layout().stages() / group_;
  }
  // build_schedule refuses recompute_then_backpropagate here, so every stage recomputes alike
  // and a unit holds the same compute tasks on every IPU.
  IPUSIM_CHECK(recomputation() != RecomputationMode::kRecomputeThenBackpropagate);
  programs_.resize(layout().ipus());
  for (int ipu = 0; ipu < layout().ipus(); ++ipu)
    build_program(ipu);
  counts_.counts_steps = false;
  count_code_phases();
  place_phases();
  find_stash_depth();
}

void OrderedSchedule::advance(const Program& program, Cursor& cursor) {
  const Segment& segment = program.segments[cursor.segment];
  if (++cursor.position < segment.length)
    return;
  cursor.position = 0;
  if (++cursor.rep < segment.reps)
    return;
  cursor.rep = 0;
  ++cursor.segment;
}

// F, B (with its R when recomputing) or W.
std::int64_t OrderedSchedule::compute_tasks(Unit unit) const {
  return unit == kB && recomputes(0) ? 2 : 1;
}

// The unit-time cost: F and W 1, B 2 (1 when W is split off) plus 1 for its R.
std::int64_t OrderedSchedule::unit_cost(Unit unit) const {
  if (unit != kB)
    return 1;
  return (splits_weight_grad() ? 1 : 2) + (recomputes(0) ? 1 : 0);
}

std::string OrderedSchedule::name() const {
  return rule_->name();
}

// One chunk per IPU and one IPU per round (all but interleaved_1f1b) need no division: the
// replay asks for every task.
int OrderedSchedule::chunk_of(Unit unit, std::int64_t index) const {
  if (chunks_ == 1)
    return 0;
  const int position = static_cast<int>((index / group_) % chunks_);
  return unit == kF ? position : chunks_ - 1 - position;
}

std::int64_t OrderedSchedule::microbatch_of(std::int64_t index) const {
  if (group_ == 1 && chunks_ == 1)
    return index;
  return (index / (group_ * chunks_)) * group_ + index % group_;
}

std::int64_t OrderedSchedule::index_of(Unit unit, int chunk, std::int64_t microbatch) const {
  const int position = unit == kF ? chunk : chunks_ - 1 - chunk;
  return (microbatch / group_) * group_ * chunks_ + position * group_ + microbatch % group_;
}

const std::vector<Task>& OrderedSchedule::bundle(const Program& program, Unit unit,
                                                 std::int64_t index) const {
  return program.bundles[unit][chunk_of(unit, index)];
}

std::int64_t OrderedSchedule::tasks_in_reps(const Segment& segment, std::int64_t reps) const {
  const auto period = static_cast<std::int64_t>(segment.rep_prefix.size()) - 1;
  return (reps / period) * segment.rep_prefix.back() + segment.rep_prefix[reps % period];
}

std::int64_t OrderedSchedule::warmup(int ipu) const {
  const std::int64_t m = shape().microbatches;
  const std::int64_t total = m * chunks_;
  const int n = layout().stages();
  if (!shape().training)
    return total;
  return rule_->warmup({.microbatches = m,
                        .stages = n,
                        .ipu = ipu,
                        .first_stage = programs_[ipu].chunk_stages.front(),
                        .group = group_,
                        .chunks = chunks_});
}

void OrderedSchedule::add_segment(Program& program, std::vector<Unit> units, std::int64_t reps,
                                  CodePhase code) const {
  if (reps <= 0)
    return;
  Segment segment;
  segment.length = static_cast<int>(units.size());
  std::copy(units.begin(), units.end(), segment.units.begin());
  segment.reps = reps;
  for (const Segment& earlier : program.segments) {
    for (int position = 0; position < earlier.length; ++position)
      segment.first[earlier.units[position]] += earlier.reps;
  }
  segment.unit_begin = program.units;
  segment.task_begin = program.tasks;
  segment.code = code;
  const int period = group_ * chunks_;
  segment.rep_prefix.assign(period + 1, 0);
  for (int rep = 0; rep < period; ++rep) {
    std::int64_t tasks = 0;
    for (Unit unit : units)
      tasks += static_cast<std::int64_t>(bundle(program, unit, segment.first[unit] + rep).size());
    segment.rep_prefix[rep + 1] = segment.rep_prefix[rep] + tasks;
  }
  program.units += reps * segment.length;
  program.tasks += tasks_in_reps(segment, reps);
  program.segments.push_back(std::move(segment));
}

void OrderedSchedule::build_program(int ipu) {
  Program& program = programs_[ipu];
  const auto& hosted = layout().hosted(ipu);
  if (hosted.empty())
    return;
  const int last = layout().stages() - 1;
  for (int chunk = 0; chunk < chunks_; ++chunk)
    program.chunk_stages.push_back(rule_->virtual_stages() ? chunk * group_ + ipu
                                                           : hosted.front().stage);
  for (int stage : program.chunk_stages) {
    std::vector<Task> forward;
    if (stage == 0)
      forward.push_back(work(Op::kInfeed, 0, ipu, -1));
    forward.push_back(work(Op::kForward, stage, ipu, -1));
    append_boundary_copies(ipu, stage, CopyKind::kActivation, forward);
    if (stage == last)
      forward.push_back(work(Op::kOutfeed, last, ipu, -1));
    std::vector<Task> backward;
    if (recomputes(stage))
      backward.push_back(work(Op::kRecompute, stage, ipu, -1));
    backward.push_back(work(Op::kBackward, stage, ipu, -1));
    append_boundary_copies(ipu, stage, CopyKind::kGradient, backward);
    program.bundles[kF].push_back(std::move(forward));
    program.bundles[kB].push_back(std::move(backward));
    program.bundles[kW].push_back({work(Op::kWeightGrad, stage, ipu, -1)});
  }

  const std::int64_t total = shape().microbatches * chunks_;
  const std::int64_t w = warmup(ipu);
  program.warmup = w;
  if (!shape().training) {
    add_segment(program, {kF}, total, CodePhase::kMain);
    return;
  }
  add_segment(program, {kF}, w, CodePhase::kRampUp);
  if (!splits_weight_grad()) {
    add_segment(program, {kF, kB}, total - w, CodePhase::kMain);
    add_segment(program, {kB}, w, CodePhase::kRampDown);
    return;
  }
  // Steady iteration j runs F(w+j), B(j) and, once j reaches the deferral, W(j - deferral).
  const std::int64_t deferral = program.chunk_stages.front();
  const std::int64_t steady_without_w = std::min(deferral, total - w);
  add_segment(program, {kF, kB}, steady_without_w, CodePhase::kMain);
  add_segment(program, {kF, kB, kW}, total - w - steady_without_w, CodePhase::kMain);
  const std::int64_t cooldown_without_w = std::clamp(deferral - (total - w), std::int64_t{0}, w);
  add_segment(program, {kB}, cooldown_without_w, CodePhase::kRampDown);
  add_segment(program, {kB, kW}, w - cooldown_without_w, CodePhase::kRampDown);
  add_segment(program, {kW}, std::min(deferral, total), CodePhase::kRampDown);
}

void OrderedSchedule::count_code_phases() {
  for (const Program& program : programs_) {
    for (const Segment& segment : program.segments) {
      std::int64_t tasks = 0;
      for (int position = 0; position < segment.length; ++position)
        tasks += compute_tasks(segment.units[position]);
      std::int64_t& count = segment.code == CodePhase::kRampUp     ? counts_.code_ramp_up
                            : segment.code == CodePhase::kRampDown ? counts_.code_ramp_down
                                                                   : counts_.code_main;
      count += tasks * segment.reps;
    }
  }
}

std::int64_t OrderedSchedule::program_length(int ipu) const {
  IPUSIM_CHECK(ipu >= 0 && ipu < layout().ipus());
  return programs_[ipu].tasks;
}

void OrderedSchedule::stamp(Task& task, const Program& program, const Segment& segment,
                            std::int64_t unit) const {
  task.step = -1;
  task.code_phase = segment.code;
  if (unit < program.main_unit)
    task.phase = Phase::kRampUp;
  else if (unit < program.ramp_down_unit)
    task.phase = Phase::kMain;
  else
    task.phase = Phase::kRampDown;
}

// The unit of `program` that holds task `index`, and the task's offset in the unit's bundle.
OrderedSchedule::Cursor OrderedSchedule::cursor_at(const Program& program, std::int64_t index,
                                                   std::int64_t& offset) const {
  const auto segment_it =
      std::upper_bound(program.segments.begin(), program.segments.end(), index,
                       [](std::int64_t value, const Segment& s) { return value < s.task_begin; }) -
      1;
  const Segment& segment = *segment_it;
  const auto period = static_cast<std::int64_t>(segment.rep_prefix.size()) - 1;
  offset = index - segment.task_begin;
  const std::int64_t cycles = offset / segment.rep_prefix.back();
  offset -= cycles * segment.rep_prefix.back();
  const auto rep_in_cycle =
      std::upper_bound(segment.rep_prefix.begin(), segment.rep_prefix.end(), offset) -
      segment.rep_prefix.begin() - 1;
  offset -= segment.rep_prefix[rep_in_cycle];
  Cursor cursor;
  cursor.segment = static_cast<std::size_t>(segment_it - program.segments.begin());
  cursor.rep = cycles * period + rep_in_cycle;
  for (; cursor.position < segment.length; ++cursor.position) {
    const Unit unit = segment.units[cursor.position];
    const auto size =
        static_cast<std::int64_t>(bundle(program, unit, segment.first[unit] + cursor.rep).size());
    if (offset < size)
      return cursor;
    offset -= size;
  }
  IPUSIM_CHECK(false);
  return cursor;
}

Task OrderedSchedule::program_task(int ipu, std::int64_t index) const {
  IPUSIM_CHECK(index >= 0 && index < program_length(ipu));
  Task task;
  program_tasks(ipu, index, std::span<Task>(&task, 1));
  return task;
}

// Finds the first task as program_task does, then walks the units in order.
std::size_t OrderedSchedule::program_tasks(int ipu, std::int64_t first, std::span<Task> out) const {
  const std::int64_t length = program_length(ipu);
  IPUSIM_CHECK(first >= 0 && first <= length);
  const auto count =
      static_cast<std::size_t>(std::min(static_cast<std::int64_t>(out.size()), length - first));
  if (count == 0)
    return 0;
  const Program& program = programs_[ipu];
  std::int64_t offset = 0;
  Cursor cursor = cursor_at(program, first, offset);
  std::size_t written = 0;
  while (true) {
    const Segment& segment = program.segments[cursor.segment];
    const Unit unit = segment.units[cursor.position];
    const std::int64_t virtual_index = segment.first[unit] + cursor.rep;
    const auto& tasks = bundle(program, unit, virtual_index);
    Task stamped;
    stamped.microbatch = microbatch_of(virtual_index);
    stamp(stamped, program, segment,
          segment.unit_begin + cursor.rep * segment.length + cursor.position);
    for (; offset < static_cast<std::int64_t>(tasks.size()); ++offset) {
      Task& task = out[written] = tasks[offset];
      task.microbatch = stamped.microbatch;
      task.step = stamped.step;
      task.phase = stamped.phase;
      task.code_phase = stamped.code_phase;
      if (++written == count)
        return count;
    }
    offset = 0;
    advance(program, cursor);
  }
}

std::int64_t OrderedSchedule::unit_number(const Program& program, Unit unit, std::int64_t index,
                                          const Segment** found) const {
  for (const Segment& segment : program.segments) {
    for (int position = 0; position < segment.length; ++position) {
      if (segment.units[position] != unit || index < segment.first[unit] ||
          index >= segment.first[unit] + segment.reps)
        continue;
      *found = &segment;
      return segment.unit_begin + (index - segment.first[unit]) * segment.length + position;
    }
  }
  IPUSIM_CHECK(false);
  return -1;
}

void OrderedSchedule::locate(Task& task) const {
  Unit unit = kF;
  if (task.op == Op::kBackward || task.op == Op::kRecompute ||
      (task.op == Op::kCopy && task.copy == CopyKind::kGradient))
    unit = kB;
  else if (task.op == Op::kWeightGrad)
    unit = kW;
  const Program& program = programs_[task.ipu];
  const auto chunk_it =
      std::find(program.chunk_stages.begin(), program.chunk_stages.end(), task.stage);
  IPUSIM_CHECK(chunk_it != program.chunk_stages.end());
  const int chunk = static_cast<int>(chunk_it - program.chunk_stages.begin());
  const Segment* segment = nullptr;
  const std::int64_t number =
      unit_number(program, unit, index_of(unit, chunk, task.microbatch), &segment);
  stamp(task, program, *segment, number);
}

// The most micro-batches with F done and B pending. The warm-up runs forwards only, so it
// peaks there or within the next two periods of the steady part (which repeats every
// group * chunks repetitions), and only falls during the cool-down: the warm-up is counted
// and a bounded stretch after it walked.
void OrderedSchedule::find_stash_depth() {
  stash_depth_.assign(layout().stages(), 0);
  if (!shape().training)
    return;
  const std::int64_t period = group_ * chunks_;
  for (const Program& program : programs_) {
    if (program.units == 0)
      continue;
    std::vector<std::int64_t> in_flight(chunks_, 0);
    for (int chunk = 0; chunk < chunks_; ++chunk) {
      // Forward index i runs chunk (i / P) mod v: P of every period, part of the last one.
      const std::int64_t rest = program.warmup % period - chunk * group_;
      in_flight[chunk] =
          program.warmup / period * group_ + std::clamp<std::int64_t>(rest, 0, group_);
      const int stage = program.chunk_stages[chunk];
      stash_depth_[stage] = std::max(stash_depth_[stage], in_flight[chunk]);
    }
    Cursor cursor;
    cursor.segment = program.warmup > 0 ? 1 : 0;
    const std::int64_t horizon = std::min(program.units - program.warmup, 8 * period + 16);
    for (std::int64_t done = 0; done < horizon; ++done) {
      const Segment& segment = program.segments[cursor.segment];
      const Unit unit = segment.units[cursor.position];
      const int chunk = chunk_of(unit, segment.first[unit] + cursor.rep);
      const int stage = program.chunk_stages[chunk];
      // An entry lives until its last reader, as the replay frees it: W when the backward is
      // split (zero-bubble), so that the depth is what the memory model holds.
      if (unit == kF)
        stash_depth_[stage] = std::max(stash_depth_[stage], ++in_flight[chunk]);
      else if (unit == (splits_weight_grad() ? kW : kB))
        --in_flight[chunk];
      advance(program, cursor);
    }
  }
}

std::vector<StashKind> OrderedSchedule::stash_kind() const {
  const int n = layout().stages();
  if (!shape().training)
    return std::vector<StashKind>(n, StashKind::kNone);
  return std::vector<StashKind>(n,
                                recomputes(0) ? StashKind::kCheckpoints : StashKind::kActivations);
}

}  // namespace ipusim::schedules
