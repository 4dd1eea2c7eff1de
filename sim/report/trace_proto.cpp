// Perfetto's native protobuf trace (perfetto.protos.Trace), encoded by hand: a trace is a
// sequence of TracePacket messages, each a track descriptor or a track event. A slice is a
// SLICE_BEGIN event on its track when opened and a SLICE_END when closed; Perfetto sorts the
// packets by timestamp, keeping the file's order among equal ones, so a track's slices must be
// written in time order (the replay reports them so) and a nested slice between its parent's
// begin and end (a task's operations are).
//
// Field numbers, from google/perfetto's protos/perfetto/trace/ (commit ec5d16b1):
//   trace.proto            Trace.packet = 1
//   trace_packet.proto     TracePacket.timestamp = 8, trusted_packet_sequence_id = 10,
//                          track_event = 11, sequence_flags = 13, track_descriptor = 60
//   track_event/track_descriptor.proto  TrackDescriptor.uuid = 1, name = 2, process = 3,
//                          parent_uuid = 5, counter = 8, child_ordering = 11 (EXPLICIT = 3),
//                          sibling_order_rank = 12, process_ordering = 19 (EXPLICIT = 1)
//   track_event/process_descriptor.proto  ProcessDescriptor.pid = 1, process_name = 6
//   track_event/counter_descriptor.proto  CounterDescriptor.unit = 3 (UNIT_SIZE_BYTES = 3)
//   track_event/track_event.proto  TrackEvent.debug_annotations = 4, type = 9 (SLICE_BEGIN =
//                          1, SLICE_END = 2, INSTANT = 3, COUNTER = 4), track_uuid = 11,
//                          categories = 22, name = 23, counter_value = 30, flow_ids = 47
//                          (fixed64), terminating_flow_ids = 48 (fixed64)
//   track_event/debug_annotation.proto  DebugAnnotation.int_value = 4, double_value = 5,
//                          string_value = 6, name = 10, array_values = 12

#include <bit>
#include <cmath>
#include <map>
#include <vector>

#include "sim/report/trace_encoder.hpp"

namespace ipusim::sim {
namespace {

constexpr std::size_t kProtoFlushBytes = std::size_t{1} << 20;
constexpr std::uint32_t kSequenceId = 1;
constexpr std::uint32_t kIncrementalStateCleared = 1;

enum WireType : std::uint32_t { kVarint = 0, kFixed64 = 1, kBytes = 2 };
enum EventType : std::uint64_t { kSliceBegin = 1, kSliceEnd = 2, kInstant = 3, kCounter = 4 };

// Encoded on the stack and appended once: appending byte by byte dominated the trace's time.
void put_varint(std::string& out, std::uint64_t value) {
  char bytes[10];
  std::size_t size = 0;
  while (value >= 0x80) {
    bytes[size++] = char((value & 0x7f) | 0x80);
    value >>= 7;
  }
  bytes[size++] = char(value);
  out.append(bytes, size);
}

std::size_t varint_size(std::uint64_t value) {
  std::size_t size = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++size;
  }
  return size;
}

// The bytes of a length-delimited field of a field number under 16 holding `length` bytes.
std::size_t bytes_field_size(std::size_t length) {
  return 1 + varint_size(length) + length;
}

void put_tag(std::string& out, std::uint32_t field, WireType wire) {
  put_varint(out, (std::uint64_t{field} << 3) | wire);
}

void put_uint(std::string& out, std::uint32_t field, std::uint64_t value) {
  put_tag(out, field, kVarint);
  put_varint(out, value);
}

// int64 fields encode negatives as ten-byte two's complement varints.
void put_int(std::string& out, std::uint32_t field, std::int64_t value) {
  put_uint(out, field, static_cast<std::uint64_t>(value));
}

void put_fixed64(std::string& out, std::uint32_t field, std::uint64_t value) {
  put_tag(out, field, kFixed64);
  char bytes[8];
  for (int byte = 0; byte < 8; ++byte)
    bytes[byte] = char((value >> (8 * byte)) & 0xff);
  out.append(bytes, 8);
}

void put_bytes(std::string& out, std::uint32_t field, std::string_view bytes) {
  put_tag(out, field, kBytes);
  put_varint(out, bytes.size());
  out.append(bytes);
}

// Track uuids: a group's is its pid in the high word; a track's adds its tid + 1, a counter
// series' its index with the top bit of the low word set.
std::uint64_t group_uuid(int pid) {
  return std::uint64_t(pid) << 32;
}
std::uint64_t track_uuid(const TrackRef& track) {
  return group_uuid(track.pid) | std::uint64_t(track.tid + 1);
}

class ProtoTraceEncoder : public TraceEncoder {
 public:
  ProtoTraceEncoder(core::ByteSink& sink, double clock_hz)
      : sink_(sink), ns_per_cycle_(1e9L / static_cast<long double>(clock_hz)) {
    // The root track lets groups take the order of their ranks.
    descriptor_.clear();
    put_uint(descriptor_, 1, 0);
    put_uint(descriptor_, 19, 1);
    packet_.clear();
    put_uint(packet_, 13, kIncrementalStateCleared);
    emit_descriptor();
  }

  void process(int pid, std::string_view name, int sort_index) override {
    std::string process;
    put_int(process, 1, pid);
    put_bytes(process, 6, name);
    descriptor_.clear();
    put_uint(descriptor_, 1, group_uuid(pid));
    put_bytes(descriptor_, 2, name);
    put_bytes(descriptor_, 3, process);
    put_uint(descriptor_, 11, 3);
    put_int(descriptor_, 12, sort_index);
    packet_.clear();
    emit_descriptor();
  }

  void thread(const TrackRef& track, std::string_view name, int sort_index) override {
    child_track(track_uuid(track), track.pid, name, sort_index, false);
  }

  void open_slice(const TrackRef& track, std::string_view name, std::string_view category,
                  core::Cycles start, core::Cycles end, std::span<const TraceArg> args,
                  const SliceFlows& flows) override {
    event_.clear();
    put_uint(event_, 9, kSliceBegin);
    put_uint(event_, 11, track_uuid(track));
    put_bytes(event_, 23, name);
    put_bytes(event_, 22, category);
    for (const auto& arg : args)
      annotation(arg);
    annotation(TraceArg::of("cycles", (end - start).count));
    for (const auto id : flows.flows)
      put_fixed64(event_, 47, id);
    for (const auto id : flows.terminating)
      put_fixed64(event_, 48, id);
    emit_event(start);
  }

  void close_slice(const TrackRef& track, core::Cycles end) override {
    event_.clear();
    put_uint(event_, 9, kSliceEnd);
    put_uint(event_, 11, track_uuid(track));
    emit_event(end);
  }

  void marker(const TrackRef& track, std::string_view name, core::Cycles at) override {
    event_.clear();
    put_uint(event_, 9, kInstant);
    put_uint(event_, 11, track_uuid(track));
    put_bytes(event_, 23, name);
    emit_event(at);
  }

  // A counter track per series, named "<name> <key>" as Perfetto names a JSON counter's
  // series. A value equal to the series' last is left out: a counter holds until it changes.
  // A counter's series come in the same order at every sample.
  void counter(int pid, std::string_view name, core::Cycles at,
               std::span<const std::pair<std::string_view, std::int64_t>> series) override {
    auto found = counters_.find(name);
    if (found == counters_.end())
      found = counters_.emplace(std::string(name), std::vector<Series>{}).first;
    auto& tracks = found->second;
    for (std::size_t i = 0; i < series.size(); ++i) {
      const auto value = series[i].second;
      if (i == tracks.size()) {
        const auto index = std::uint64_t(counter_tracks_++);
        const std::uint64_t uuid = group_uuid(pid) | (std::uint64_t{1} << 31) | (index + 1);
        child_track(uuid, pid, std::string(name) + " " + std::string(series[i].first), int(index),
                    true);
        tracks.push_back(Series{uuid, value});
      } else if (tracks[i].last == value) {
        continue;
      }
      tracks[i].last = value;
      event_.clear();
      put_uint(event_, 9, kCounter);
      put_uint(event_, 11, tracks[i].uuid);
      put_int(event_, 30, value);
      emit_event(at);
    }
  }

  void flow(std::uint64_t, std::string_view, std::span<const FlowPoint>) override {}

  void finish(const TraceSummary& summary) override {
    event_.clear();
    put_uint(event_, 9, kInstant);
    put_uint(event_, 11, track_uuid(summary.summary_track));
    put_bytes(event_, 23, "ipusim run");
    annotation(TraceArg::of("config", std::string_view(summary.config)));
    annotation(TraceArg::of("model", std::string_view(summary.model)));
    annotation(TraceArg::of("schedule", std::string_view(summary.schedule)));
    annotation(TraceArg::of("clock_hz", double(1e9L / ns_per_cycle_)));
    annotation(TraceArg::of("step_cycles", summary.step_cycles));
    std::string physical;
    put_bytes(physical, 10, "physical_ipus");
    for (const int ipu : summary.physical_ipus) {
      std::string value;
      put_int(value, 4, ipu);
      put_bytes(physical, 12, value);
    }
    put_bytes(event_, 4, physical);
    emit_event(core::Cycles{0});
    sink_.write(out_);
    out_.clear();
  }

 private:
  struct Series {
    std::uint64_t uuid = 0;
    std::int64_t last = 0;
  };

  std::uint64_t ns(core::Cycles at) const {
    return std::uint64_t(std::llround(static_cast<long double>(at.count) * ns_per_cycle_));
  }

  void child_track(std::uint64_t uuid, int pid, std::string_view name, int rank, bool bytes) {
    descriptor_.clear();
    put_uint(descriptor_, 1, uuid);
    put_uint(descriptor_, 5, group_uuid(pid));
    put_bytes(descriptor_, 2, name);
    if (bytes) {
      std::string counter;
      put_uint(counter, 3, 3);
      put_bytes(descriptor_, 8, counter);
    }
    put_int(descriptor_, 12, rank);
    packet_.clear();
    emit_descriptor();
  }

  // Written straight into the event, its length worked out first: a copy through a scratch
  // buffer per argument was a good part of the trace's time.
  void annotation(const TraceArg& arg) {
    std::size_t value_size = 0;
    switch (arg.kind) {
      case TraceArg::Kind::kInt:
        value_size = 1 + varint_size(static_cast<std::uint64_t>(arg.integer));
        break;
      case TraceArg::Kind::kDouble:
        value_size = 9;
        break;
      case TraceArg::Kind::kString:
        value_size = bytes_field_size(arg.text.size());
        break;
    }
    put_tag(event_, 4, kBytes);
    put_varint(event_, bytes_field_size(arg.key.size()) + value_size);
    put_bytes(event_, 10, arg.key);
    switch (arg.kind) {
      case TraceArg::Kind::kInt:
        put_int(event_, 4, arg.integer);
        break;
      case TraceArg::Kind::kDouble:
        put_fixed64(event_, 5, std::bit_cast<std::uint64_t>(arg.number));
        break;
      case TraceArg::Kind::kString:
        put_bytes(event_, 6, arg.text);
        break;
    }
  }

  // packet_ may already hold fields of the packet (sequence flags).
  void emit_descriptor() {
    put_uint(packet_, 10, kSequenceId);
    put_bytes(packet_, 60, descriptor_);
    emit_packet();
  }

  // The packet goes straight into the output, its length worked out first.
  void emit_event(core::Cycles at) {
    const std::uint64_t timestamp = ns(at);
    const std::size_t size =
        1 + varint_size(timestamp) + 1 + varint_size(kSequenceId) + bytes_field_size(event_.size());
    put_tag(out_, 1, kBytes);
    put_varint(out_, size);
    put_uint(out_, 8, timestamp);
    put_uint(out_, 10, kSequenceId);
    put_bytes(out_, 11, event_);
    flush_if_full();
  }

  void emit_packet() {
    put_bytes(out_, 1, packet_);
    flush_if_full();
  }

  void flush_if_full() {
    if (out_.size() >= kProtoFlushBytes) {
      sink_.write(out_);
      out_.clear();
    }
  }

  core::ByteSink& sink_;
  long double ns_per_cycle_;
  std::string out_;
  std::string packet_;
  std::string event_;
  std::string descriptor_;
  std::map<std::string, std::vector<Series>, std::less<>> counters_;  // by counter name
  int counter_tracks_ = 0;
};

}  // namespace

std::unique_ptr<TraceEncoder> make_json_trace_encoder(core::ByteSink& sink, double clock_hz);

std::unique_ptr<TraceEncoder> make_trace_encoder(TraceFormat format, core::ByteSink& sink,
                                                 double clock_hz) {
  if (format == TraceFormat::kProto)
    return std::make_unique<ProtoTraceEncoder>(sink, clock_hz);
  return make_json_trace_encoder(sink, clock_hz);
}

TraceFormat trace_format_of_path(std::string_view path) {
  const auto ends_with = [path](std::string_view suffix) {
    return path.size() >= suffix.size() && path.substr(path.size() - suffix.size()) == suffix;
  };
  return ends_with(".pftrace") || ends_with(".perfetto-trace") ? TraceFormat::kProto
                                                               : TraceFormat::kJson;
}

}  // namespace ipusim::sim
