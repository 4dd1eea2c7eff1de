#include "sim/replay/readiness.hpp"

#include <catch2/catch.hpp>

#include "schedules/build.hpp"
#include "tests/schedules/shapes.hpp"

using namespace ipusim;
using schedules::Op;
using schedules::Task;

namespace {

// Completes IPU0's program in order until a completion wakes a waiter; returns that task.
Task complete_until_woken(sim::Readiness& readiness, const schedules::Schedule& schedule) {
  for (std::int64_t i = 0; i < schedule.program_length(0); ++i) {
    const Task task = schedule.program_task(0, i);
    REQUIRE(readiness.ready(task, 0));
    if (!readiness.complete(task).empty())
      return task;
  }
  FAIL("no completion woke a waiter");
  return {};
}

}  // namespace

TEST_CASE("readiness: the second stage's first forward waits for the copy of its input") {
  const auto schedule = schedules::build_schedule("gpipe", schedules::testing::one_per_ipu(2, 2));
  sim::Readiness readiness(*schedule);
  const Task first = schedule->program_task(1, 0);
  REQUIRE(first.op == Op::kForward);
  CHECK_FALSE(readiness.ready(first, 1));
  // IPU0 runs its infeed and F_0(0); only the activation copy to IPU1 wakes IPU1.
  const Task waker = complete_until_woken(readiness, *schedule);
  CHECK(waker.op == Op::kCopy);
  CHECK(waker.peer_ipu == 1);
  CHECK(waker.microbatch == 0);
  CHECK(readiness.ready(first, 1));
}

TEST_CASE("readiness: a completion hands back every waiter parked on its stream, in order") {
  const auto schedule = schedules::build_schedule("gpipe", schedules::testing::one_per_ipu(2, 2));
  sim::Readiness readiness(*schedule);
  const Task first = schedule->program_task(1, 0);
  CHECK_FALSE(readiness.ready(first, 1));
  CHECK_FALSE(readiness.ready(first, 7));
  Task copy;
  for (std::int64_t i = 0; copy.op != Op::kCopy; ++i) {
    const Task task = schedule->program_task(0, i);
    if (task.op == Op::kCopy)
      copy = task;
    else
      readiness.complete(task);
  }
  CHECK(readiness.complete(copy) == std::vector<int>{1, 7});
  CHECK(readiness.ready(first, 1));
}
