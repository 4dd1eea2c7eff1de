#pragma once
// What may run next in a dependency-ordered replay, apart from any cost or time (as a build
// system's plan is apart from running its commands): a task may start once every task it
// depends on has completed.
//
// Tasks complete in micro-batch order within each stream: one compute op (F, B, R, W) of one
// sub-stage, one IPU's infeed or outfeed, one copy route. So a count per stream says what has
// completed, and the state does not grow with the number of micro-batches. A task depends on
// the same micro-batch of a fixed list of streams, so that list is worked out once per stream.
// A task that is not ready parks its waiter (an IPU) on the first stream it misses; completing
// a task of that stream hands the parked waiters back to be woken.

#include <cstdint>
#include <vector>

#include "schedules/schedule.hpp"
#include "schedules/task.hpp"
#include "sim/core/error.hpp"

namespace ipusim::sim {

// The dependency state of one replay (see the top): a completion count per stream, and the
// waiters parked on each stream.
class Readiness {
 public:
  explicit Readiness(const schedules::Schedule& schedule);

  // The task's stream; a stream seen for the first time is added. Callers that ask again for
  // the same task may keep the id instead.
  int stream(const schedules::Task& task);

  // True when every dependency of `task` has completed; otherwise `waiter` is parked.
  bool ready(const schedules::Task& task, int waiter) { return ready(task, stream(task), waiter); }
  // The same for a task whose stream is known.
  bool ready(const schedules::Task& task, int stream, int waiter);
  // Marks `task` complete (tasks of a stream complete in micro-batch order) and returns the
  // waiters parked on its stream, in the order they were parked; valid until the next call.
  const std::vector<int>& complete(const schedules::Task& task) {
    return complete(stream(task), task.microbatch);
  }
  // The same for micro-batch `microbatch` of a known stream.
  const std::vector<int>& complete(int stream, std::int64_t microbatch);

  // Micro-batches of `stream` completed so far.
  std::int64_t completed(int stream) const { return completed_[stream]; }
  // Parks `waiter` on `stream` until its next completion, for callers that check dependencies
  // themselves (the program-order replay, which also needs their times).
  void park(int stream, int waiter) { waiters_[stream].push_back(waiter); }

 private:
  struct Route {
    int ipu = 0;
    int peer = 0;
    bool gradient = false;
    int id = 0;
  };

  // Where a stream's inputs lie in inputs_; begin < 0 until its first task asks.
  struct Inputs {
    int begin = -1;
    int end = -1;
  };

  int route(const schedules::Task& task);
  int add_route(const schedules::Task& task);
  int add_stream();
  void find_inputs(const schedules::Task& task, int stream);

  const schedules::Schedule& schedule_;
  int ipus_ = 0;
  int substages_ = 0;
  std::vector<int> substage_base_;  // by stage
  int feed_base_ = 0;
  std::vector<std::vector<Route>> routes_;  // by stage
  std::vector<std::int64_t> completed_;     // by stream: micro-batches done
  std::vector<std::vector<int>> waiters_;   // by stream
  std::vector<Inputs> inputs_of_;           // by stream
  std::vector<int> inputs_;                 // the streams each stream's tasks depend on
  std::vector<schedules::Task> dependencies_;
  std::vector<int> woken_;
};

// Inline: the replay asks for every task.

inline int Readiness::stream(const schedules::Task& task) {
  if (schedules::is_compute(task.op))
    return int(task.op) * substages_ + substage_base_[task.stage] + task.substage;
  if (task.op == schedules::Op::kInfeed)
    return feed_base_ + task.ipu;
  if (task.op == schedules::Op::kOutfeed)
    return feed_base_ + ipus_ + task.ipu;
  return route(task);
}

// A stage sends on a route or two: a scan beats a map.
inline int Readiness::route(const schedules::Task& task) {
  IPUSIM_CHECK(task.op == schedules::Op::kCopy);
  const bool gradient = task.copy == schedules::CopyKind::kGradient;
  for (const auto& r : routes_[task.stage]) {
    if (r.ipu == task.ipu && r.peer == task.peer_ipu && r.gradient == gradient)
      return r.id;
  }
  return add_route(task);
}

inline bool Readiness::ready(const schedules::Task& task, int stream, int waiter) {
  if (inputs_of_[stream].begin < 0)
    find_inputs(task, stream);
  const auto [begin, end] = inputs_of_[stream];
  for (int i = begin; i < end; ++i) {
    const int id = inputs_[i];
    if (completed_[id] > task.microbatch)
      continue;
    waiters_[id].push_back(waiter);
    return false;
  }
  return true;
}

inline const std::vector<int>& Readiness::complete(int stream, std::int64_t microbatch) {
  IPUSIM_CHECK(completed_[stream] == microbatch);
  ++completed_[stream];
  woken_.clear();
  if (!waiters_[stream].empty())
    woken_.swap(waiters_[stream]);
  return woken_;
}

}  // namespace ipusim::sim
