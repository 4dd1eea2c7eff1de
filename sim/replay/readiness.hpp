#pragma once
// What may run next in a dependency-ordered replay, apart from any cost or time (as a build
// system's plan is apart from running its commands): a task may start once every task it
// depends on has completed.
//
// Tasks complete in micro-batch order within each stream: one compute op (F, B, R, W) of one
// sub-stage, one IPU's infeed or outfeed, one copy route. So a count per stream says what has
// completed, and the state does not grow with the number of micro-batches. A task that is not
// ready parks its waiter (an IPU) on the first stream it misses; completing a task of that
// stream hands the parked waiters back to be woken.

#include <cstdint>
#include <vector>

#include "schedules/schedule.hpp"
#include "schedules/task.hpp"

namespace ipusim::sim {

// The dependency state of one replay (see the top): a completion count per stream, and the
// waiters parked on each stream.
class Readiness {
 public:
  explicit Readiness(const schedules::Schedule& schedule);

  // True when every dependency of `task` has completed; otherwise `waiter` is parked.
  bool ready(const schedules::Task& task, int waiter);
  // Marks `task` complete (tasks of a stream complete in micro-batch order) and returns the
  // waiters parked on its stream, in the order they were parked; valid until the next call.
  const std::vector<int>& complete(const schedules::Task& task);

 private:
  struct Route {
    int ipu = 0;
    int peer = 0;
    bool gradient = false;
    int id = 0;
  };

  // The task's stream; a stream seen for the first time is added.
  int stream(const schedules::Task& task);
  int route(const schedules::Task& task);

  const schedules::Schedule& schedule_;
  int ipus_ = 0;
  int substages_ = 0;
  std::vector<int> substage_base_;  // by stage
  int feed_base_ = 0;
  int streams_ = 0;
  std::vector<std::vector<Route>> routes_;  // by stage
  std::vector<std::int64_t> completed_;     // by stream: micro-batches done
  std::vector<std::vector<int>> waiters_;   // by stream
  std::vector<schedules::Task> dependencies_;
  std::vector<int> woken_;
};

}  // namespace ipusim::sim
