#include "sim/core/event_queue.hpp"
#include "sim/core/resource.hpp"

#include <catch2/catch.hpp>

using namespace ipusim::core;

namespace {
// A payload of the tests' own: which subject the event is about.
struct Subject {
  std::int64_t id = 0;
};
using Queue = EventQueue<Subject>;

struct Recorder {
  std::vector<std::int64_t> subjects;
  std::vector<std::int64_t> times;
  void operator()(const Event<Subject>& event) {
    subjects.push_back(event.payload.id);
    times.push_back(event.time.count);
  }
};
}  // namespace

TEST_CASE("events run in time order, then by priority, then in insertion order") {
  Queue queue;
  queue.schedule({Cycles{10}, EventPriority::kStart, {1}});
  queue.schedule({Cycles{10}, EventPriority::kComputeDone, {2}});
  queue.schedule({Cycles{5}, EventPriority::kStart, {3}});
  queue.schedule({Cycles{10}, EventPriority::kComputeDone, {4}});
  queue.schedule({Cycles{10}, EventPriority::kTransferDone, {5}});
  Recorder recorder;
  queue.run(recorder);
  CHECK(recorder.subjects == std::vector<std::int64_t>{3, 5, 2, 4, 1});
  CHECK(recorder.times == std::vector<std::int64_t>{5, 10, 10, 10, 10});
  CHECK(queue.now() == Cycles{10});
}

TEST_CASE("an event for now with the last priority runs after every other event for now") {
  Queue queue;
  queue.schedule({Cycles{4}, EventPriority::kStart, {1}});
  queue.schedule({Cycles{4}, EventPriority::kComputeDone, {2}});
  std::vector<std::int64_t> subjects;
  auto handler = [&queue, &subjects](const Event<Subject>& event) {
    subjects.push_back(event.payload.id);
    // At cycle 4: a wake-up for now, then a finished transfer for now, which runs first, and
    // one for later.
    if (event.payload.id == 2) {
      queue.schedule({Cycles{4}, EventPriority::kStart, {3}});
      queue.schedule({Cycles{4}, EventPriority::kTransferDone, {4}});
      queue.schedule({Cycles{5}, EventPriority::kTransferDone, {5}});
    }
  };
  queue.run(handler);
  CHECK(subjects == std::vector<std::int64_t>{2, 4, 1, 3, 5});
}

TEST_CASE("step advances one event at a time") {
  Queue queue;
  queue.schedule({Cycles{3}, EventPriority::kStart, {7}});
  queue.schedule({Cycles{4}, EventPriority::kStart, {8}});
  Recorder recorder;
  CHECK(queue.step(recorder));
  CHECK(queue.now() == Cycles{3});
  CHECK(recorder.subjects == std::vector<std::int64_t>{7});
  CHECK(queue.step(recorder));
  CHECK_FALSE(queue.step(recorder));
}

TEST_CASE("scheduling an event before the current time is an internal error") {
  Queue queue;
  queue.schedule({Cycles{10}, EventPriority::kStart, {1}});
  Recorder recorder;
  queue.step(recorder);
  CHECK_THROWS_WITH(queue.schedule({Cycles{9}, EventPriority::kStart, {2}}),
                    "internal error (this is a bug in ipusim): an event was scheduled at cycle 9, "
                    "before the current cycle 10");
}

TEST_CASE("a resource serves requests one at a time in arrival order") {
  ipusim::core::Resource link;
  const auto first = link.occupy(ipusim::core::Cycles{0}, 10);
  const auto queued = link.occupy(ipusim::core::Cycles{5}, 3);
  const auto later = link.occupy(ipusim::core::Cycles{20}, 1);
  CHECK(first.begin.count == 0);
  CHECK(first.end.count == 10);
  CHECK(queued.begin.count == 10);  // waits for the first request
  CHECK(queued.end.count == 13);
  CHECK(later.begin.count == 20);  // idle in between
  CHECK(link.busy_cycles() == 14);
  CHECK(link.uses() == 3);
}
