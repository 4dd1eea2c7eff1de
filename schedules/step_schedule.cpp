#include "schedules/step_schedule.hpp"

#include <algorithm>

#include "sim/core/error.hpp"

namespace ipusim::schedules {
namespace {

std::int64_t floor_mod(std::int64_t a, std::int64_t b) {
  const std::int64_t r = a % b;
  return r < 0 ? r + b : r;
}

}  // namespace

StepSchedule::StepSchedule(const StepRule& rule, PipelineShape shape, RecomputationMode resolved,
                           bool relaxed)
    : Schedule(std::move(shape), resolved, relaxed, false), rule_(&rule) {
  const int n = layout().stages();
  const std::int64_t m = this->shape().microbatches;
  const bool training = this->shape().training;
  slots_per_microbatch_ = training ? 2 * n : n;
  const int s = slots_per_microbatch_;
  period_ = rule_->period(s, training);
  steps_ = period_ * m + (rule_->pipelined() ? s : 0);
  if (rule_->pipelined()) {
    code_ramp_up_ = std::min<std::int64_t>(s, steps_);
    code_ramp_down_ = std::min<std::int64_t>(s, steps_ - code_ramp_up_);
  }
  build_slots();
  index_slots_by_residue();
  find_full_steps();
}

std::string StepSchedule::name() const {
  return rule_->name();
}

std::int64_t StepSchedule::offset_of(Op op, int stage) const {
  const int n = layout().stages();
  const std::int64_t backward = 2 * n - 1 - stage;
  switch (op) {
    case Op::kForward:
      return stage;
    case Op::kBackward:
      return backward;
    case Op::kRecompute:
      // recompute_then_backpropagate runs R_k(m) one step before B_k(m).
      return recomputation() == RecomputationMode::kRecomputeThenBackpropagate ? backward - 1
                                                                               : backward;
    default:
      break;
  }
  IPUSIM_CHECK(false);
  return 0;
}

// Feeds and copies run in the step of the stage program they serve.
std::int64_t StepSchedule::offset_of(const Task& task) const {
  switch (task.op) {
    case Op::kInfeed:
      return offset_of(Op::kForward, 0);
    case Op::kOutfeed:
      return offset_of(Op::kForward, layout().stages() - 1);
    case Op::kCopy:
      return offset_of(task.copy == CopyKind::kActivation ? Op::kForward : Op::kBackward,
                       task.stage);
    default:
      return offset_of(task.op, task.stage);
  }
}

void StepSchedule::add_copies(int ipu, int stage, CopyKind kind, std::vector<Slot>& slots) const {
  std::vector<Task> copies;
  append_boundary_copies(ipu, stage, kind, copies);
  for (const Task& copy : copies)
    slots.push_back({copy, offset_of(copy)});
}

void StepSchedule::build_slots() {
  const int last = layout().stages() - 1;
  const bool training = shape().training;
  const bool then_backpropagate = recomputation() == RecomputationMode::kRecomputeThenBackpropagate;
  slots_.resize(layout().ipus());
  for (int ipu = 0; ipu < layout().ipus(); ++ipu) {
    const auto& hosted = layout().hosted(ipu);  // ascending stage
    auto& slots = slots_[ipu];
    const auto add = [&](Op op, int stage) {
      const Task task = work(op, stage, ipu, -1);
      slots.push_back({task, offset_of(task)});
    };
    if (!hosted.empty() && hosted.front().stage == 0)
      add(Op::kInfeed, 0);
    if (training) {
      for (const auto& h : hosted) {
        if (recomputes(h.stage) && !then_backpropagate)
          add(Op::kRecompute, h.stage);
        add(Op::kBackward, h.stage);
      }
    }
    for (auto h = hosted.rbegin(); h != hosted.rend(); ++h)
      add(Op::kForward, h->stage);
    for (auto h = hosted.rbegin(); h != hosted.rend(); ++h) {
      if (recomputes(h->stage) && then_backpropagate)
        add(Op::kRecompute, h->stage);
    }
    if (training) {
      for (const auto& h : hosted)
        add_copies(ipu, h.stage, CopyKind::kGradient, slots);
    }
    for (auto h = hosted.rbegin(); h != hosted.rend(); ++h)
      add_copies(ipu, h->stage, CopyKind::kActivation, slots);
    if (!hosted.empty() && hosted.back().stage == last)
      add(Op::kOutfeed, last);
  }
  slot_offsets_.assign(slots_.size(), {0, 0});
  for (std::size_t ipu = 0; ipu < slots_.size(); ++ipu) {
    if (slots_[ipu].empty())
      continue;
    auto& [low, high] = slot_offsets_[ipu];
    low = high = slots_[ipu].front().offset;
    for (const Slot& slot : slots_[ipu]) {
      low = std::min(low, slot.offset);
      high = std::max(high, slot.offset);
    }
  }
}

std::int64_t StepSchedule::microbatch_at(const Slot& slot, std::int64_t step) const {
  const std::int64_t since = step - slot.offset;
  if (since < 0 || since % period_ != 0)
    return -1;
  const std::int64_t m = since / period_;
  return m < shape().microbatches ? m : -1;
}

std::int64_t StepSchedule::runs_before(const Slot& slot, std::int64_t step) const {
  const std::int64_t since = step - slot.offset;
  if (since <= 0)
    return 0;
  return std::min((since + period_ - 1) / period_, shape().microbatches);
}

std::int64_t StepSchedule::tasks_before(int ipu, std::int64_t step) const {
  std::int64_t count = 0;
  for (const Slot& slot : slots_[ipu])
    count += runs_before(slot, step);
  return count;
}

Phase StepSchedule::step_phase(std::int64_t step) const {
  if (first_full_ < 0)
    return Phase::kMain;
  if (step < first_full_)
    return Phase::kRampUp;
  return step > last_full_ ? Phase::kRampDown : Phase::kMain;
}

CodePhase StepSchedule::step_code_phase(std::int64_t step) const {
  if (step < code_ramp_up_)
    return CodePhase::kRampUp;
  return step >= steps_ - code_ramp_down_ ? CodePhase::kRampDown : CodePhase::kMain;
}

Task StepSchedule::stamped(const Task& work, std::int64_t microbatch, std::int64_t step) const {
  Task task = work;
  task.microbatch = microbatch;
  task.step = step;
  task.phase = step_phase(step);
  task.code_phase = step_code_phase(step);
  return task;
}

namespace {

// Periods up to this many steps are tabulated by residue (a table entry per IPU and residue).
constexpr std::int64_t kMaxTabulatedPeriod = 1 << 16;

std::int64_t residue(std::int64_t step, std::int64_t period) {
  return ((step % period) + period) % period;
}

}  // namespace

void StepSchedule::index_slots_by_residue() {
  slots_by_residue_.clear();
  if (period_ > kMaxTabulatedPeriod)
    return;
  slots_by_residue_.resize(slots_.size());
  for (std::size_t ipu = 0; ipu < slots_.size(); ++ipu) {
    auto& table = slots_by_residue_[ipu];
    table.resize(std::size_t(period_));
    for (std::size_t k = 0; k < slots_[ipu].size(); ++k)
      table[std::size_t(residue(slots_[ipu][k].offset, period_))].push_back(int(k));
  }
}

template <class Visit>
void StepSchedule::visit_slots_in_step(int ipu, std::int64_t step, Visit visit) const {
  const auto& slots = slots_[std::size_t(ipu)];
  if (slots_by_residue_.empty()) {
    for (const Slot& slot : slots)
      visit(slot);
    return;
  }
  for (const int k : slots_by_residue_[std::size_t(ipu)][std::size_t(residue(step, period_))])
    visit(slots[std::size_t(k)]);
}

void StepSchedule::tasks_in_step(std::int64_t step, int ipu, std::vector<Task>& out) const {
  IPUSIM_CHECK(step >= 0 && step < steps_ && ipu >= 0 && ipu < layout().ipus());
  out.clear();
  visit_slots_in_step(ipu, step, [&](const Slot& slot) {
    const std::int64_t m = microbatch_at(slot, step);
    if (m >= 0)
      out.push_back(stamped(slot.work, m, step));
  });
}

void StepSchedule::exchange_in_step(std::int64_t step, std::vector<Task>& out) const {
  IPUSIM_CHECK(step >= 0 && step < steps_ && copies_every_slot());
  out.clear();
  slot_copies(step, out);
}

void StepSchedule::slot_copies(std::int64_t step, std::vector<Task>& out) const {
  const bool every_step = rule_->every_slot_every_step();
  for (int k = 0; k < layout().stages(); ++k) {
    const bool forward_slot = every_step || (step - k) % 2 == 0;
    const bool backward_slot = every_step || (step - k) % 2 != 0;
    for (const int ipu : layout().ipus_of(k)) {
      if (forward_slot)
        append_boundary_copies(ipu, k, CopyKind::kActivation, out);
      if (backward_slot && shape().training)
        append_boundary_copies(ipu, k, CopyKind::kGradient, out);
    }
  }
}

bool StepSchedule::fifo_runs(std::int64_t step, int stage) const {
  if (step_code_phase(step) == CodePhase::kRampUp) {
    const std::int64_t since = step - offset_of(Op::kForward, stage);
    return since >= 0 && since % period_ == 0 && since / period_ < shape().microbatches;
  }
  return rule_->every_slot_every_step() || (step - stage) % 2 == 0;
}

std::int64_t StepSchedule::next_busy_step(int ipu, std::int64_t from) const {
  IPUSIM_CHECK(ipu >= 0 && ipu < layout().ipus());
  // Most often `from` itself is busy, which its residue's slots tell at once.
  bool busy = false;
  if (from >= 0 && from < steps_) {
    visit_slots_in_step(ipu, from,
                        [&](const Slot& slot) { busy = busy || microbatch_at(slot, from) >= 0; });
  }
  if (busy)
    return from;
  std::int64_t next = steps_;
  for (const Slot& slot : slots_[ipu]) {
    const std::int64_t since = std::max<std::int64_t>(0, from - slot.offset);
    const std::int64_t m = (since + period_ - 1) / period_;
    if (m < shape().microbatches)
      next = std::min(next, slot.offset + m * period_);
  }
  return next;
}

std::int64_t StepSchedule::program_length(int ipu) const {
  IPUSIM_CHECK(ipu >= 0 && ipu < layout().ipus());
  return static_cast<std::int64_t>(slots_[ipu].size()) * shape().microbatches;
}

Task StepSchedule::program_task(int ipu, std::int64_t index) const {
  IPUSIM_CHECK(index >= 0 && index < program_length(ipu));
  // The task's step is the last one whose earlier steps hold at most `index` tasks. Each slot
  // runs once per period, so after index / slots periods the step is at most one period and
  // the spread of slot offsets away: search only there.
  const auto& slots = slots_[ipu];
  const std::int64_t periods = index / static_cast<std::int64_t>(slots.size());
  std::int64_t lo = std::max<std::int64_t>(0, slot_offsets_[ipu].first + period_ * (periods - 1));
  std::int64_t hi = std::min(steps_ - 1, slot_offsets_[ipu].second + period_ * (periods + 1));
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo + 1) / 2;
    if (tasks_before(ipu, mid) <= index)
      lo = mid;
    else
      hi = mid - 1;
  }
  std::int64_t rank = index - tasks_before(ipu, lo);
  for (const Slot& slot : slots) {
    const std::int64_t m = microbatch_at(slot, lo);
    if (m >= 0 && rank-- == 0)
      return stamped(slot.work, m, lo);
  }
  IPUSIM_CHECK(false);
  return {};
}

void StepSchedule::locate(Task& task) const {
  task = stamped(task, task.microbatch, offset_of(task) + period_ * task.microbatch);
}

bool StepSchedule::full(std::int64_t step) const {
  for (int ipu = 0; ipu < layout().ipus(); ++ipu) {
    if (layout().hosted(ipu).empty())
      continue;
    bool due = false;
    for (const Slot& slot : slots_[ipu]) {
      if (!is_compute(slot.work.op) || floor_mod(step - slot.offset, period_) != 0)
        continue;
      due = true;
      if (microbatch_at(slot, step) < 0)
        return false;
    }
    if (!due)
      return false;
  }
  return true;
}

// Fullness depends only on step % period once every slot has started and none has finished,
// and slots only drop out before and after that. So unless the program is short, the first
// full step lies within max_offset + 2 periods of the start and the last within S + 2 periods
// of the end, and every step in between is full.
void StepSchedule::find_full_steps() {
  std::int64_t max_offset = 0;
  std::int64_t last_compute = -1;
  for (const auto& slots : slots_) {
    for (const Slot& slot : slots) {
      if (!is_compute(slot.work.op))
        continue;
      max_offset = std::max(max_offset, slot.offset);
      last_compute = std::max(last_compute, slot.offset + period_ * (shape().microbatches - 1));
    }
  }
  idle_tail_ = steps_ - 1 - last_compute;
  const std::int64_t head = max_offset + 2 * period_ + 1;
  const std::int64_t tail = slots_per_microbatch_ + 2 * period_ + 1;
  if (steps_ <= 2 * (head + tail)) {
    for (std::int64_t step = 0; step < steps_; ++step) {
      if (!full(step))
        continue;
      if (first_full_ < 0)
        first_full_ = step;
      last_full_ = step;
      ++full_steps_;
    }
    return;
  }
  for (std::int64_t step = 0; step < head && first_full_ < 0; ++step) {
    if (full(step))
      first_full_ = step;
  }
  for (std::int64_t step = steps_ - 1; step >= steps_ - tail && last_full_ < 0; --step) {
    if (full(step))
      last_full_ = step;
  }
  IPUSIM_CHECK((first_full_ < 0) == (last_full_ < 0));
  if (first_full_ >= 0)
    full_steps_ = last_full_ - first_full_ + 1;
}

std::vector<std::int64_t> StepSchedule::stash_depth() const {
  const int n = layout().stages();
  std::vector<std::int64_t> depth(n, 0);
  if (!shape().training || !rule_->pipelined())
    return depth;
  // TF's FIFO depth multiplier: grouped pushes the FIFO every step, interleaved every other.
  const std::int64_t multiplier = rule_->every_slot_every_step() ? 2 : 1;
  for (int k = 0; k < n; ++k)
    depth[k] = multiplier * (n - 1 - k);
  return depth;
}

// TF's FIFO of depth d keeps d buffers and an output, which the backward reads a step later;
// without a FIFO (the last stage, every stage of Sequential) the forward's output is a plain
// copy the backward reads: one micro-batch more than the depth either way
// (graphcore-schedules.md, section 3: "live" = FIFO buffers + its current input/output).
std::vector<std::int64_t> StepSchedule::microbatches_held() const {
  std::vector<std::int64_t> held = stash_depth();
  if (!shape().training)
    return held;
  for (auto& count : held)
    ++count;
  return held;
}

std::vector<StashKind> StepSchedule::stash_kind() const {
  const int n = layout().stages();
  if (!shape().training)
    return std::vector<StashKind>(n, StashKind::kNone);
  std::vector<StashKind> kinds(n, StashKind::kActivations);
  for (int k = 0; k < n; ++k) {
    if (!recomputes(k))
      continue;
    kinds[k] = recomputation() == RecomputationMode::kRecomputeThenBackpropagate
                   ? StashKind::kStageInputs
                   : StashKind::kCheckpoints;
  }
  return kinds;
}

PhaseCounts StepSchedule::phase_counts() const {
  PhaseCounts counts;
  counts.code_ramp_up = code_ramp_up_;
  counts.code_ramp_down = code_ramp_down_;
  counts.code_main = steps_ - code_ramp_up_ - code_ramp_down_;
  counts.full = full_steps_;
  counts.idle_tail = idle_tail_;
  if (first_full_ < 0) {
    counts.main = steps_;
    return counts;
  }
  counts.ramp_up = first_full_;
  counts.main = last_full_ - first_full_ + 1;
  counts.ramp_down = steps_ - 1 - last_full_;
  return counts;
}

}  // namespace ipusim::schedules
