#pragma once
// How a trace's events become bytes: Chrome trace-event JSON or Perfetto's protobuf trace. The
// trace writer (trace.hpp) decides what the trace shows and calls an encoder as the replay
// produces it; the encoder formats each event into its buffer at once and hands the buffer to
// the sink whenever it holds a megabyte, so memory stays flat however long the trace.
//
// Tracks are named by (pid, tid) as in the JSON format: a process is a group of tracks and a
// thread one track. A track is declared before its first event; a counter track is declared
// with its series by counter().

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/core/output_file.hpp"
#include "sim/core/time.hpp"

namespace ipusim::sim {

enum class TraceFormat { kJson, kProto };

// One argument of a slice ("stage": 3): an integer, a number or a text.
struct TraceArg {
  enum class Kind { kInt, kDouble, kString };
  std::string_view key;
  Kind kind = Kind::kInt;
  std::int64_t integer = 0;
  double number = 0;
  std::string_view text;

  static TraceArg of(std::string_view key, std::int64_t value) {
    return {key, Kind::kInt, value, 0, {}};
  }
  static TraceArg of(std::string_view key, int value) { return of(key, std::int64_t{value}); }
  static TraceArg of(std::string_view key, double value) {
    return {key, Kind::kDouble, 0, value, {}};
  }
  static TraceArg of(std::string_view key, std::string_view value) {
    return {key, Kind::kString, 0, 0, value};
  }
};

struct TrackRef {
  int pid = 0;
  int tid = 0;
};

// The flows a slice takes part in. Perfetto's protobuf binds flows to slices by id: a flow
// starts at the first slice that lists it in `flows`, passes through every later one and ends
// at the one that lists it in `terminating`. The JSON format draws flows as separate events
// instead (TraceEncoder::flow), so its encoder ignores these.
struct SliceFlows {
  std::span<const std::uint64_t> flows;
  std::span<const std::uint64_t> terminating;
};

// Where a flow arrow passes: a point in the middle of a slice on a track.
struct FlowPoint {
  TrackRef track;
  core::Cycles start;
  core::Cycles end;
};

// The trace-wide facts written last: the JSON format's otherData and displayTimeUnit; the
// protobuf format puts them in the arguments of an instant "ipusim run" at time 0.
struct TraceSummary {
  std::string config;
  std::string model;
  std::string schedule;
  std::int64_t step_cycles = 0;
  std::vector<int> physical_ipus;
  core::Cycles end;        // of the step: sets the display unit
  TrackRef summary_track;  // where the protobuf format's "ipusim run" instant goes
};

class TraceEncoder {
 public:
  virtual ~TraceEncoder() = default;

  // Groups (processes) show in the order of `sort_index`, tracks within a group in that of
  // theirs.
  virtual void process(int pid, std::string_view name, int sort_index) = 0;
  virtual void thread(const TrackRef& track, std::string_view name, int sort_index) = 0;
  // A slice over [start, end], its arguments, then "cycles": end - start. Slices opened on
  // a track before this one is closed nest in it.
  virtual void open_slice(const TrackRef& track, std::string_view name, std::string_view category,
                          core::Cycles start, core::Cycles end, std::span<const TraceArg> args,
                          const SliceFlows& flows = {}) = 0;
  virtual void close_slice(const TrackRef& track, core::Cycles end) = 0;
  void slice(const TrackRef& track, std::string_view name, std::string_view category,
             core::Cycles start, core::Cycles end, std::span<const TraceArg> args,
             const SliceFlows& flows = {}) {
    open_slice(track, name, category, start, end, args, flows);
    close_slice(track, end);
  }
  // A marker at `at` across the whole trace (JSON scope "g"; protobuf: on `track`).
  virtual void marker(const TrackRef& track, std::string_view name, core::Cycles at) = 0;
  // One sample of a counter `name` in group `pid`, one series per (key, value).
  virtual void counter(int pid, std::string_view name, core::Cycles at,
                       std::span<const std::pair<std::string_view, std::int64_t>> series) = 0;
  // A whole flow arrow (JSON only; see SliceFlows): from the middle of `points[0]` through
  // the others.
  virtual void flow(std::uint64_t id, std::string_view name, std::span<const FlowPoint> points) = 0;
  // Writes what ends the trace and hands the last bytes to the sink.
  virtual void finish(const TraceSummary& summary) = 0;
};

// An encoder writing to `sink` (which must outlive it); times are converted with `clock_hz`.
std::unique_ptr<TraceEncoder> make_trace_encoder(TraceFormat format, core::ByteSink& sink,
                                                 double clock_hz);

// The format a trace file's name asks for: .pftrace and .perfetto-trace are protobuf, anything
// else JSON.
TraceFormat trace_format_of_path(std::string_view path);

}  // namespace ipusim::sim
