#pragma once
// The discrete-event engine: a queue of events ordered by (time, priority, insertion order),
// so that simultaneous events always run in the same order and a run is reproducible to the
// byte. Time never goes backwards: scheduling into the past is an internal error.
// Events are plain values; the owner of the queue dispatches them (no callbacks, no casts).

#include <cstdint>
#include <string>
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
// decreases. A binary heap holds them, keyed by the time and one number for the priority and
// the sequence together. Events for the current time with the last priority (wake-ups) wait
// in a FIFO instead: everything scheduled after them sorts after them. The heap's top stays in
// place once popped until the next event is filed or popped: a handler mostly schedules an
// event, which then takes the top's place with one sift down instead of a removal and an
// insertion.
template <typename Payload>
class EventQueue {
 public:
  using Event = core::Event<Payload>;

  Cycles now() const { return now_; }
  bool empty() const { return size() == 0; }
  std::size_t size() const {
    return heap_.size() - (top_taken_ ? 1 : 0) + lane_.size() - lane_head_;
  }

  void schedule(const Event& event) {
    if (event.time < now_)
      in_the_past(event.time);
    const std::uint64_t sequence = next_sequence_++;
    if (event.time == now_ && event.priority == kLast) {
      lane_.push_back(event);
      lane_.back().sequence = sequence;
      return;
    }
    IPUSIM_CHECK(sequence < kSequenceLimit);
    const Entry entry{event.time.count, order(event.priority, sequence), event.payload};
    if (top_taken_) {
      top_taken_ = false;
      sink(entry);
      return;
    }
    push(entry);
  }

  // Removes the next event and advances the clock to it. The heap's events for now come before
  // the FIFO's: they have a lower priority, or the last one and were scheduled before the clock
  // reached now.
  Event pop() {
    IPUSIM_CHECK(!empty());
    if (top_taken_) {
      top_taken_ = false;
      remove_top();
    }
    if (lane_head_ < lane_.size() && (heap_.empty() || heap_.front().time != now_.count))
      return take_from_lane();
    const Entry entry = heap_.front();
    top_taken_ = true;
    IPUSIM_CHECK(entry.time >= now_.count);
    now_ = Cycles{entry.time};
    return {now_, EventPriority(entry.order >> kSequenceBits), entry.payload,
            entry.order & (kSequenceLimit - 1)};
  }

  // Runs one event through `handler`; false when nothing is left.
  template <typename Handler>
  bool step(Handler& handler) {
    if (empty())
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
  static constexpr EventPriority kLast = EventPriority::kStart;
  // Priority and sequence share one key, so that ties compare one number.
  static constexpr int kSequenceBits = 56;
  static constexpr std::uint64_t kSequenceLimit = std::uint64_t{1} << kSequenceBits;

  struct Entry {
    std::int64_t time = 0;
    std::uint64_t order = 0;  // priority, then sequence
    Payload payload{};
  };

  static std::uint64_t order(EventPriority priority, std::uint64_t sequence) {
    return (std::uint64_t(priority) << kSequenceBits) | sequence;
  }
  // Out of line and cold: schedule() runs for most tasks of a replay.
  [[noreturn, gnu::cold, gnu::noinline]] void in_the_past(Cycles time) const {
    throw InternalError("an event was scheduled at cycle " + std::to_string(time.count) +
                        ", before the current cycle " + std::to_string(now_.count));
  }

  static bool before(const Entry& a, const Entry& b) {
    return a.time < b.time || (a.time == b.time && a.order < b.order);
  }

  Event take_from_lane() {
    const Event event = lane_[lane_head_++];
    if (lane_head_ == lane_.size()) {
      lane_.clear();
      lane_head_ = 0;
    }
    return event;
  }

  void push(const Entry& entry) {
    heap_.push_back(entry);
    std::size_t hole = heap_.size() - 1;
    while (hole > 0) {
      const std::size_t parent = (hole - 1) / 2;
      if (!before(entry, heap_[parent]))
        break;
      heap_[hole] = heap_[parent];
      hole = parent;
    }
    heap_[hole] = entry;
  }

  // Puts `entry` in the top's place and moves it down past its earlier children.
  void sink(const Entry& entry) {
    const std::size_t size = heap_.size();
    std::size_t hole = 0;
    for (std::size_t child = 1; child < size; child = 2 * hole + 1) {
      if (child + 1 < size && before(heap_[child + 1], heap_[child]))
        ++child;
      if (!before(heap_[child], entry))
        break;
      heap_[hole] = heap_[child];
      hole = child;
    }
    heap_[hole] = entry;
  }

  // Moves the hole at the top down to a leaf along the earlier children, then fills it with
  // the last entry, which rarely climbs far: fewer comparisons than sifting that entry down.
  void remove_top() {
    const Entry last = heap_.back();
    heap_.pop_back();
    const std::size_t size = heap_.size();
    if (size == 0)
      return;
    std::size_t hole = 0;
    for (std::size_t child = 1; child < size; child = 2 * hole + 1) {
      if (child + 1 < size && before(heap_[child + 1], heap_[child]))
        ++child;
      heap_[hole] = heap_[child];
      hole = child;
    }
    while (hole > 0) {
      const std::size_t parent = (hole - 1) / 2;
      if (!before(last, heap_[parent]))
        break;
      heap_[hole] = heap_[parent];
      hole = parent;
    }
    heap_[hole] = last;
  }

  std::vector<Entry> heap_;  // a binary heap, earliest first
  bool top_taken_ = false;   // heap_'s top was popped and waits to be replaced or removed
  std::vector<Event> lane_;  // events for now with the last priority, from lane_head_ on
  std::size_t lane_head_ = 0;
  Cycles now_{0};
  std::uint64_t next_sequence_ = 0;
};

}  // namespace ipusim::core
