// The dependency-ordered replay without observers, where nobody needs events in time order.
// Each IPU-Link route and host link carries only its source IPU's transfers and memory is kept
// per IPU, so every time follows from the programs alone (max-plus): a task starts at the
// latest of its IPU's free time and the completion times of its dependencies; a compute task
// frees its IPU at its end, a transfer at its start. IPUs advance through their programs from
// a worklist while the times they need are known: no event queue. Memory is observed and links
// are reserved in each IPU's program order, as the event engine does. The phase boundaries are
// known only late, so the ledger logs the compute spans and splits them once they are.
// tests/sim/replay/program_replay_test.cpp holds the two engines' results equal.
//
// Completion times are kept only for the streams someone needs them from (transfers, and any
// compute on another IPU), for their last kTimedSpan micro-batches, and a producer waits while
// a reader lags kWriteAhead behind, so memory stays flat in M. Where these bounds or the span
// logs cannot follow a schedule (a reader found too late, a stall, a deadlock), the fast path
// gives up and the caller replays the step on the event engine.

#include <algorithm>
#include <optional>

#include "sim/core/resource.hpp"
#include "sim/replay/readiness.hpp"
#include "sim/replay/replay_state.hpp"

namespace ipusim::sim::detail {
namespace {

using core::Cycles;
using schedules::Op;
using schedules::Task;

// Tasks an IPU reads ahead of its program, as the event engine does.
constexpr std::size_t kProgramWindow = 64;
// Micro-batches of a stream whose completion times are kept: a power of two, well above how
// far a consumer lags its producer in these schedules (about the pipeline's depth).
constexpr std::int64_t kTimedSpan = 256;
// How far a producer may write ahead of what its readers have read: small, so that no IPU runs
// far ahead of the others and the compute spans waiting for the phase boundaries stay few.
constexpr std::int64_t kWriteAhead = 16;
// Compute spans the ledger may hold for one IPU before the phase boundaries settle them.
constexpr std::size_t kSpanLogLimit = std::size_t{1} << 16;

// Where one IPU is in its program.
struct ProgramCursor {
  std::int64_t next = 0;
  std::int64_t length = 0;
  std::int64_t last_compute = -1;
  std::int64_t free_at = 0;  // when the IPU reached task `next`
  bool queued = false;
  bool started = false;
  bool finished = false;  // its last compute task has run
  std::int64_t last_end = 0;
  std::int64_t window_first = 0;
  std::vector<Task> window;
  std::vector<int> streams;
};

// A dependency of a stream's tasks: its stream, and whether its completion time matters (a
// compute task on the same IPU ran before, so its end is at most the IPU's free time).
struct Need {
  int stream = 0;
  bool timed = false;
};

// A stream's completion times (by micro-batch modulo kTimedSpan, from micro-batch `first`),
// kept once some consumer needs them, and the streams that read them.
struct StreamTimes {
  std::vector<std::int64_t> ends;
  std::int64_t first = 0;
  std::vector<int> readers;
  int needs_begin = -1;  // this stream's own dependencies in needs_; -1 until known
  int needs_end = -1;
};

class ProgramReplay {
 public:
  explicit ProgramReplay(ReplayState& state)
      : state_(state),
        schedule_(state.schedule),
        readiness_(state.schedule),
        stash_depth_(state.schedule.stash_depth()),
        last_reader_(state.schedule.splits_weight_grad() ? Op::kWeightGrad : Op::kBackward),
        cursors_(std::size_t(state.ipus)),
        host_links_(std::size_t(state.ipus)) {}

  std::optional<Cycles> run();

 private:
  enum class Inputs { kReady, kWaiting, kLost };

  bool advance(int ipu);
  void read_ahead(int ipu);
  void learn(const Task& task, int stream, int ipu);
  StreamTimes& times(int stream);
  Inputs inputs(int ipu, const Task& task, int stream, std::int64_t& start);
  bool may_write(int ipu, int stream, std::int64_t microbatch);
  bool run_compute(int ipu, const Task& task, int stream, std::int64_t start);
  void run_transfer(int ipu, const Task& task, int stream, std::int64_t start);
  void complete(int stream, std::int64_t microbatch, std::int64_t end);
  void enqueue(int ipu);
  void mark_started(int ipu, std::int64_t start);
  std::int64_t ramp_down_bound() const;

  ReplayState& state_;
  const schedules::Schedule& schedule_;
  Readiness readiness_;
  const std::vector<std::int64_t> stash_depth_;  // per stage
  const Op last_reader_;                         // of a stash entry: W when the backward is split
  std::vector<ProgramCursor> cursors_;
  std::vector<core::Resource> host_links_;
  std::vector<StreamTimes> times_;  // by stream
  std::vector<Need> needs_;
  std::vector<Task> dependencies_;
  std::vector<int> worklist_;
  std::int64_t end_ = 0;  // the latest completion so far
  int started_ = 0;
  std::int64_t ramp_up_end_ = 0;  // once known; before, the latest first start so far
  bool any_finished_ = false;
  std::int64_t ramp_down_begin_ = 0;  // the earliest last end so far
};

std::optional<Cycles> ProgramReplay::run() {
  bool up_never = false;  // an IPU without compute never starts: the ramp-up never ends
  for (int ipu = 0; ipu < state_.ipus; ++ipu) {
    auto& cursor = cursors_[ipu];
    cursor.length = schedule_.program_length(ipu);
    cursor.last_compute = last_compute_index(schedule_, ipu);
    up_never = up_never || cursor.last_compute < 0;
    // Every IPU reads its first tasks before any runs, so that their consumers are known
    // before producers fill their times.
    if (cursor.length > 0)
      read_ahead(ipu);
  }
  if (up_never)
    state_.ledger.ramp_up_ends(Cycles{0});
  for (int ipu = state_.ipus - 1; ipu >= 0; --ipu)
    enqueue(ipu);
  while (!worklist_.empty()) {
    const int ipu = worklist_.back();
    worklist_.pop_back();
    cursors_[ipu].queued = false;
    if (!advance(ipu))
      return std::nullopt;
    state_.check_progress();
  }
  for (const auto& cursor : cursors_) {
    if (cursor.next < cursor.length)
      return std::nullopt;
  }
  if (any_finished_)
    state_.ledger.ramp_down_begins(Cycles{ramp_down_begin_});
  return Cycles{end_};
}

void ProgramReplay::enqueue(int ipu) {
  if (cursors_[ipu].queued)
    return;
  cursors_[ipu].queued = true;
  worklist_.push_back(ipu);
}

// Runs `ipu`'s program until a task waits; false when the fast path gives up.
bool ProgramReplay::advance(int ipu) {
  auto& cursor = cursors_[ipu];
  while (cursor.next < cursor.length) {
    if (cursor.next == cursor.window_first + std::int64_t(cursor.window.size()))
      read_ahead(ipu);
    const auto at = std::size_t(cursor.next - cursor.window_first);
    const Task& task = cursor.window[at];
    const int stream = cursor.streams[at];
    std::int64_t start = cursor.free_at;
    const Inputs ready = inputs(ipu, task, stream, start);
    if (ready != Inputs::kReady)
      return ready == Inputs::kWaiting;
    if (!times_[stream].ends.empty() && !may_write(ipu, stream, task.microbatch))
      return true;
    ++cursor.next;
    ++state_.tasks;
    if (!schedules::is_compute(task.op)) {
      run_transfer(ipu, task, stream, start);
      continue;
    }
    if (!run_compute(ipu, task, stream, start))
      return false;
  }
  return true;
}

void ProgramReplay::read_ahead(int ipu) {
  auto& cursor = cursors_[ipu];
  cursor.window.resize(kProgramWindow);
  cursor.window.resize(schedule_.program_tasks(ipu, cursor.next, cursor.window));
  cursor.window_first = cursor.next;
  cursor.streams.clear();
  for (const Task& task : cursor.window) {
    const int stream = readiness_.stream(task);
    cursor.streams.push_back(stream);
    // Inline: most tasks' streams are known already.
    if (std::size_t(stream) >= times_.size() || times_[stream].needs_begin < 0)
      learn(task, stream, ipu);
  }
}

StreamTimes& ProgramReplay::times(int stream) {
  if (std::size_t(stream) >= times_.size())
    times_.resize(std::size_t(stream) + 1);
  return times_[stream];
}

// A task's dependencies are the same micro-batch of streams fixed by its own stream, so the
// first task of a stream finds them for all; those whose times matter start keeping them.
void ProgramReplay::learn(const Task& task, int stream, int ipu) {
  schedule_.dependencies(task, dependencies_, false);
  const int begin = int(needs_.size());
  for (const Task& dependency : dependencies_) {
    IPUSIM_CHECK(dependency.microbatch == task.microbatch);
    const int id = readiness_.stream(dependency);
    const bool timed = !schedules::is_compute(dependency.op) || dependency.ipu != ipu;
    needs_.push_back({id, timed});
    if (!timed)
      continue;
    auto& producer = times(id);
    if (producer.ends.empty()) {
      producer.ends.assign(std::size_t(kTimedSpan), 0);
      producer.first = readiness_.completed(id);
    }
    producer.readers.push_back(stream);
  }
  auto& own = times(stream);
  own.needs_begin = begin;
  own.needs_end = int(needs_.size());
}

// Whether `task`'s dependencies have completed, moving `start` to the latest time among them;
// kLost when a time it needs was not kept.
ProgramReplay::Inputs ProgramReplay::inputs(int ipu, const Task& task, int stream,
                                            std::int64_t& start) {
  const auto& own = times_[stream];
  const std::int64_t microbatch = task.microbatch;
  for (int i = own.needs_begin; i < own.needs_end; ++i) {
    const Need need = needs_[i];
    const std::int64_t done = readiness_.completed(need.stream);
    if (done <= microbatch) {
      readiness_.park(need.stream, ipu);
      return Inputs::kWaiting;
    }
    if (!need.timed)
      continue;
    const auto& producer = times_[need.stream];
    if (microbatch < producer.first || done - microbatch > kTimedSpan)
      return Inputs::kLost;
    start = std::max(start, producer.ends[std::size_t(microbatch & (kTimedSpan - 1))]);
  }
  return Inputs::kReady;
}

// A writer waits while a reader lags kWriteAhead micro-batches behind, well before it could
// overwrite a time that reader has not read.
bool ProgramReplay::may_write(int ipu, int stream, std::int64_t microbatch) {
  for (const int reader : times_[stream].readers) {
    if (readiness_.completed(reader) + kWriteAhead <= microbatch) {
      readiness_.park(reader, ipu);
      return false;
    }
  }
  return true;
}

void ProgramReplay::complete(int stream, std::int64_t microbatch, std::int64_t end) {
  auto& own = times_[stream];
  if (!own.ends.empty())
    own.ends[std::size_t(microbatch & (kTimedSpan - 1))] = end;
  end_ = std::max(end_, end);
  for (const int ipu : readiness_.complete(stream, microbatch))
    enqueue(ipu);
}

// The event engine's start and finish of a compute task, back to back: nothing else touches
// this IPU's memory in between.
bool ProgramReplay::run_compute(int ipu, const Task& task, int stream, std::int64_t start) {
  auto& cursor = cursors_[ipu];
  const std::int64_t cycles = state_.costs.compute_cycles(task);
  const std::int64_t end = start + cycles;
  if (!cursor.started)
    mark_started(ipu, start);
  const auto& sub = state_.costs.substage(task);
  const bool stashes = stash_depth_[task.stage] > 0;
  if (task.op == Op::kForward && stashes)
    state_.memory.add_stash(ipu, sub.stash_bytes);
  state_.memory.set_live(ipu, state_.costs.live_bytes(task));
  state_.memory.observe(ipu, 0, Cycles{start});
  state_.memory.set_live(ipu, 0);
  if (task.op == last_reader_ && stashes)
    state_.memory.add_stash(ipu, -sub.stash_bytes);
  cursor.free_at = end;
  complete(stream, task.microbatch, end);
  if (cursor.next - 1 == cursor.last_compute) {
    cursor.finished = true;
    cursor.last_end = end;
    ramp_down_begin_ = any_finished_ ? std::min(ramp_down_begin_, end) : end;
    any_finished_ = true;
  }
  if (!state_.ledger.compute_span(ipu, Cycles{start}, Cycles{end}))
    return true;
  // Until every IPU has started, the ramp-up ends no earlier than the latest first start yet.
  return state_.ledger.settle(ipu, Cycles{ramp_up_end_}, Cycles{ramp_down_bound()}) < kSpanLogLimit;
}

void ProgramReplay::run_transfer(int ipu, const Task& task, int stream, std::int64_t start) {
  Cycles end{start};
  if (task.op == Op::kCopy) {
    // Its route then carries only this IPU's copies, reserved in this program's order.
    IPUSIM_CHECK(task.ipu == ipu);
    const auto bytes = state_.costs.copy_bytes(task);
    end = state_.topology.send(task.ipu, task.peer_ipu, bytes, end).end;
  } else if (task.op == Op::kInfeed || task.op == Op::kOutfeed) {
    const auto cycles = state_.costs.host_cycles(state_.costs.host_bytes(task));
    end = host_links_[ipu].occupy(end, cycles).end;
    state_.ledger.host_transfer(ipu, cycles);
  }
  cursors_[ipu].free_at = start;
  complete(stream, task.microbatch, end.count);
}

// The ramp-up ends when the last IPU starts its first compute task.
void ProgramReplay::mark_started(int ipu, std::int64_t start) {
  cursors_[ipu].started = true;
  ramp_up_end_ = std::max(ramp_up_end_, start);
  if (++started_ == state_.ipus)
    state_.ledger.ramp_up_ends(Cycles{ramp_up_end_});
}

// The ramp-down begins no earlier than this: no IPU's last compute task ends earlier.
std::int64_t ProgramReplay::ramp_down_bound() const {
  std::int64_t bound = -1;
  for (const auto& other : cursors_) {
    if (other.last_compute < 0)
      continue;
    const std::int64_t at = other.finished ? other.last_end : other.free_at;
    bound = bound < 0 ? at : std::min(bound, at);
  }
  return bound;
}

}  // namespace

std::optional<Cycles> replay_in_program_order(ReplayState& state) {
  return ProgramReplay(state).run();
}

}  // namespace ipusim::sim::detail
