#pragma once
// The discrete-event engine: a queue of events ordered by (time, priority, insertion order),
// so that simultaneous events always run in the same order and a run is reproducible to the
// byte. Time never goes backwards: scheduling into the past is an internal error.
// Events are plain values; the owner of the queue dispatches them (no callbacks, no casts).

#include <cstdint>
#include <queue>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/core/time.hpp"

namespace ipusim::core {

// Why simultaneous events sort as they do.
enum class EventPriority : std::uint8_t {
  // Finished transfers first: they free links and satisfy dependencies that work starting
  // at the same instant may need.
  kTransferDone = 0,
  // Finished compute next, for the same reason.
  kComputeDone = 1,
  // New work last, so it sees the state left by everything that finished at this time.
  kStart = 2,
};

// An event carries its owner's typed payload (what happened, to what).
template <typename Payload>
struct Event {
  Cycles time;
  EventPriority priority = EventPriority::kStart;
  Payload payload{};
  std::uint64_t sequence = 0;  // insertion order, set by the queue
};

// The queue and its clock: pops events in (time, priority, sequence) order; now() never
// decreases.
template <typename Payload>
class EventQueue {
 public:
  using Event = core::Event<Payload>;

  Cycles now() const { return now_; }
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }

  void schedule(Event event) {
    if (event.time < now_) {
      throw InternalError("an event was scheduled at cycle " + std::to_string(event.time.count) +
                          ", before the current cycle " + std::to_string(now_.count));
    }
    event.sequence = next_sequence_++;
    heap_.push(event);
  }

  // Removes the next event and advances the clock to it.
  Event pop() {
    IPUSIM_CHECK(!heap_.empty());
    Event event = heap_.top();
    heap_.pop();
    IPUSIM_CHECK(event.time >= now_);
    now_ = event.time;
    return event;
  }

  // Runs one event through `handler`; false when nothing is left.
  template <typename Handler>
  bool step(Handler& handler) {
    if (heap_.empty())
      return false;
    handler(pop());
    return true;
  }

  template <typename Handler>
  void run(Handler& handler) {
    while (step(handler)) {
    }
  }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      if (a.time != b.time)
        return a.time > b.time;
      if (a.priority != b.priority)
        return a.priority > b.priority;
      return a.sequence > b.sequence;
    }
  };

  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  Cycles now_{0};
  std::uint64_t next_sequence_ = 0;
};

}  // namespace ipusim::core
