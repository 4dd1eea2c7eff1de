// The event engine for dependency-ordered schedules (GPipe, 1F1B, interleaved 1F1B,
// zero-bubble): each IPU walks its program order and starts the next task as soon as
// Readiness says its dependencies are met; compute, transfers and wake-ups are events on the
// queue. Copies and host transfers run on their links without blocking the IPU that starts
// them. Phases: ramp-up until the last IPU starts its first compute task, ramp-down from when
// the first IPU finishes its last one.

#include <algorithm>
#include <string>

#include "sim/core/event_queue.hpp"
#include "sim/core/resource.hpp"
#include "sim/replay/readiness.hpp"
#include "sim/replay/replay_state.hpp"

namespace ipusim::sim::detail {
namespace {

using core::Cycles;
using core::EventPriority;
using schedules::Op;
using schedules::Task;

struct ReplayEvent {
  enum class Kind : std::uint8_t { kComputeDone, kTransferDone, kWake };
  Kind kind = Kind::kWake;
  int id = 0;                   // the IPU, or for kTransferDone the transfer's stream
  std::int64_t microbatch = 0;  // kTransferDone: the transfer's micro-batch
};

// Tasks an IPU reads ahead of its program: a few units' worth, so that the schedule walks its
// program in order and memory stays flat in M.
constexpr std::size_t kWindow = 64;

// Where one IPU is in its program.
struct IpuCursor {
  std::int64_t next = 0;
  std::int64_t length = 0;
  bool busy = false;
  bool started = false;
  std::int64_t running_index = -1;
  Task running;
  int running_stream = 0;
  // Tasks [window_first, window_first + window.size()) of the program, and their streams.
  std::int64_t window_first = 0;
  std::vector<Task> window;
  std::vector<int> streams;
};

class OrderedReplay {
 public:
  explicit OrderedReplay(ReplayState& state)
      : state_(state),
        schedule_(state.schedule),
        readiness_(state.schedule),
        stash_depth_(state.schedule.stash_depth()),
        last_reader_(state.schedule.splits_weight_grad() ? Op::kWeightGrad : Op::kBackward),
        cursors_(std::size_t(state.ipus)),
        host_links_(std::size_t(state.ipus)) {}

  Cycles run();

 private:
  void handle(const core::Event<ReplayEvent>& event);
  void advance(int ipu);
  void read_ahead(int ipu);
  void start_compute(int ipu, const Task& task, int stream);
  void finish_compute(int ipu);
  void start_transfer(int ipu, const Task& task, int stream);
  void complete(int stream, std::int64_t microbatch);
  [[gnu::noinline]] void wake(const std::vector<int>& ipus);
  void release_stash(int ipu, const Task& task);
  void mark_started(int ipu);
  schedules::Phase phase_now() const;
  [[noreturn]] void report_deadlock() const;

  ReplayState& state_;
  const schedules::Schedule& schedule_;
  Readiness readiness_;
  const std::vector<std::int64_t> stash_depth_;  // per stage; the schedule builds it on each call
  const Op last_reader_;                         // of a stash entry: W when the backward is split
  core::EventQueue<ReplayEvent> queue_;
  std::vector<IpuCursor> cursors_;
  std::vector<std::int64_t> last_compute_;
  std::vector<core::Resource> host_links_;
  int started_ipus_ = 0;
  bool first_finished_ = false;
};

Cycles OrderedReplay::run() {
  for (int ipu = 0; ipu < state_.ipus; ++ipu) {
    last_compute_.push_back(last_compute_index(schedule_, ipu));
    cursors_[ipu].length = schedule_.program_length(ipu);
  }
  // An IPU without compute never starts, so the ramp-up never ends.
  if (std::ranges::find(last_compute_, -1) != last_compute_.end())
    state_.ledger.ramp_up_ends(Cycles{0});
  for (int ipu = 0; ipu < state_.ipus; ++ipu)
    queue_.schedule({Cycles{0}, EventPriority::kStart, {ReplayEvent::Kind::kWake, ipu, 0}});
  state_.observers.phase(schedules::Phase::kRampUp, Cycles{0});
  auto handler = [this](const core::Event<ReplayEvent>& event) { handle(event); };
  queue_.run(handler);
  for (int ipu = 0; ipu < state_.ipus; ++ipu) {
    if (cursors_[ipu].next < schedule_.program_length(ipu))
      report_deadlock();
  }
  return queue_.now();
}

void OrderedReplay::report_deadlock() const {
  std::string stuck;
  for (int ipu = 0; ipu < state_.ipus; ++ipu) {
    if (cursors_[ipu].next >= schedule_.program_length(ipu))
      continue;
    stuck += " IPU" + std::to_string(ipu) + " waits to run " +
             schedules::to_string(schedule_.program_task(ipu, cursors_[ipu].next)) + ";";
  }
  throw core::InternalError("the schedule deadlocked:" + stuck);
}

void OrderedReplay::handle(const core::Event<ReplayEvent>& event) {
  state_.check_progress();
  const auto& payload = event.payload;
  if (payload.kind == ReplayEvent::Kind::kTransferDone) {
    complete(payload.id, payload.microbatch);
    return;
  }
  if (payload.kind == ReplayEvent::Kind::kComputeDone)
    finish_compute(payload.id);
  advance(payload.id);
}

// Most completions wake nobody: the wake-up loop stays out of line (noinline), which keeps
// this small on the path every task takes.
void OrderedReplay::complete(int stream, std::int64_t microbatch) {
  const std::vector<int>& woken = readiness_.complete(stream, microbatch);
  if (!woken.empty())
    wake(woken);
}

void OrderedReplay::wake(const std::vector<int>& ipus) {
  for (const int ipu : ipus)
    queue_.schedule({queue_.now(), EventPriority::kStart, {ReplayEvent::Kind::kWake, ipu, 0}});
}

void OrderedReplay::finish_compute(int ipu) {
  auto& cursor = cursors_[ipu];
  cursor.busy = false;
  state_.memory.set_live(ipu, 0);
  release_stash(ipu, cursor.running);
  state_.observers.memory(state_.memory, ipu, queue_.now());
  complete(cursor.running_stream, cursor.running.microbatch);
  if (cursor.running_index == last_compute_[ipu] && !first_finished_) {
    first_finished_ = true;
    state_.ledger.ramp_down_begins(queue_.now());
    state_.observers.phase(schedules::Phase::kRampDown, queue_.now());
  }
}

void OrderedReplay::advance(int ipu) {
  auto& cursor = cursors_[ipu];
  if (cursor.busy)
    return;
  while (cursor.next < cursor.length) {
    if (cursor.next == cursor.window_first + std::int64_t(cursor.window.size()))
      read_ahead(ipu);
    const auto at = std::size_t(cursor.next - cursor.window_first);
    const Task& task = cursor.window[at];
    const int stream = cursor.streams[at];
    if (!readiness_.ready(task, stream, ipu))
      return;
    ++cursor.next;
    ++state_.tasks;
    if (schedules::is_compute(task.op)) {
      start_compute(ipu, task, stream);
      return;
    }
    start_transfer(ipu, task, stream);
  }
}

void OrderedReplay::read_ahead(int ipu) {
  auto& cursor = cursors_[ipu];
  cursor.window.resize(kWindow);
  cursor.window.resize(schedule_.program_tasks(ipu, cursor.next, cursor.window));
  cursor.window_first = cursor.next;
  cursor.streams.clear();
  for (const Task& task : cursor.window)
    cursor.streams.push_back(readiness_.stream(task));
}

void OrderedReplay::start_compute(int ipu, const Task& task, int stream) {
  auto& cursor = cursors_[ipu];
  const auto cycles = state_.costs.compute_cycles(task);
  cursor.busy = true;
  cursor.running = task;
  cursor.running_stream = stream;
  cursor.running_index = cursor.next - 1;
  if (!cursor.started)
    mark_started(ipu);
  const auto& sub = state_.costs.substage(task);
  if (task.op == Op::kForward && stash_depth_[task.stage] > 0)
    state_.memory.add_stash(ipu, sub.stash_bytes);
  const auto live = state_.costs.live_bytes(task);
  state_.memory.set_live(ipu, live);
  state_.memory.observe(ipu, 0, queue_.now());
  const double flops = state_.observers.any() ? state_.costs.flops(task) : 0.0;
  state_.observers.task(task, queue_.now(), cycles, phase_now(), flops, live);
  state_.observers.memory(state_.memory, ipu, queue_.now());
  const Cycles end = queue_.now() + Cycles{cycles};
  // Events come in time order: the boundaries not told yet come no earlier than now.
  if (state_.ledger.compute_span(ipu, queue_.now(), end))
    state_.ledger.settle(ipu, queue_.now(), queue_.now());
  queue_.schedule({end, EventPriority::kComputeDone, {ReplayEvent::Kind::kComputeDone, ipu, 0}});
}

// A stash entry lives until the last task that reads it: W when the backward is split.
void OrderedReplay::release_stash(int ipu, const Task& task) {
  if (task.op != last_reader_ || stash_depth_[task.stage] == 0)
    return;
  state_.memory.add_stash(ipu, -state_.costs.substage(task).stash_bytes);
}

void OrderedReplay::mark_started(int ipu) {
  cursors_[ipu].started = true;
  if (++started_ipus_ < state_.ipus)
    return;
  state_.ledger.ramp_up_ends(queue_.now());
  state_.observers.phase(schedules::Phase::kMain, queue_.now());
}

schedules::Phase OrderedReplay::phase_now() const {
  if (first_finished_)
    return schedules::Phase::kRampDown;
  return started_ipus_ == state_.ipus ? schedules::Phase::kMain : schedules::Phase::kRampUp;
}

void OrderedReplay::start_transfer(int ipu, const Task& task, int stream) {
  Cycles end = queue_.now();
  if (task.op == Op::kCopy) {
    const auto bytes = state_.costs.copy_bytes(task);
    const auto use = state_.topology.send(task.ipu, task.peer_ipu, bytes, end);
    state_.observers.transfer(task, bytes, use);
    end = use.end;
  } else if (task.op == Op::kInfeed || task.op == Op::kOutfeed) {
    const auto bytes = state_.costs.host_bytes(task);
    const auto cycles = state_.costs.host_cycles(bytes);
    const auto held = host_links_[ipu].occupy(end, cycles);
    end = held.end;
    state_.ledger.host_transfer(ipu, cycles);
    state_.observers.task(task, held.begin, cycles, phase_now(), 0.0, bytes);
  }
  queue_.schedule({end,
                   EventPriority::kTransferDone,
                   {ReplayEvent::Kind::kTransferDone, stream, task.microbatch}});
}

}  // namespace

Cycles replay_in_dependency_order(ReplayState& state) {
  return OrderedReplay(state).run();
}

}  // namespace ipusim::sim::detail
