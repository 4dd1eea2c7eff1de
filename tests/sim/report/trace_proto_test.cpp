// The protobuf trace read back with a decoder of its own (protobuf's wire format: varints and
// length-delimited fields), checked against the field numbers of Perfetto's .proto files and
// against the JSON trace of the same run.

#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <set>

#include "sim/machine/cost_model.hpp"
#include "tests/sim/report/report_fixture.hpp"
#include "tests/test_support.hpp"

using namespace ipusim;

namespace {

const char* const kProtoTf1 = "configs/tf1_mnist_2ipu.json";

// One field of a message: its number, and its value as an integer (varint, fixed64) or bytes.
struct WireField {
  std::uint32_t number = 0;
  std::uint64_t integer = 0;
  std::string bytes;
};

std::uint64_t read_varint(std::string_view data, std::size_t& at) {
  std::uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    REQUIRE(at < data.size());
    const auto byte = static_cast<unsigned char>(data[at++]);
    value |= std::uint64_t(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0)
      return value;
  }
  FAIL("varint longer than ten bytes");
  return 0;
}

std::vector<WireField> decode_message(std::string_view data) {
  std::vector<WireField> fields;
  std::size_t at = 0;
  while (at < data.size()) {
    const std::uint64_t key = read_varint(data, at);
    WireField field;
    field.number = std::uint32_t(key >> 3);
    switch (key & 7) {
      case 0:
        field.integer = read_varint(data, at);
        break;
      case 1:
        REQUIRE(at + 8 <= data.size());
        for (int byte = 7; byte >= 0; --byte)
          field.integer = (field.integer << 8) | static_cast<unsigned char>(data[at + byte]);
        at += 8;
        break;
      case 2: {
        const auto length = read_varint(data, at);
        REQUIRE(at + length <= data.size());
        field.bytes = std::string(data.substr(at, length));
        at += length;
        break;
      }
      default:
        FAIL("unexpected wire type " << (key & 7));
    }
    fields.push_back(std::move(field));
  }
  return fields;
}

// A TrackEvent or TrackDescriptor, flattened to what the tests look at.
struct DecodedEvent {
  std::uint64_t timestamp = 0;
  std::uint64_t type = 0;
  std::uint64_t track = 0;
  std::string name;
  std::string category;
  std::map<std::string, std::int64_t> int_args;
  std::vector<std::uint64_t> flows;
  std::vector<std::uint64_t> terminating;
  std::int64_t counter = 0;
};

struct DecodedTrace {
  std::vector<DecodedEvent> events;
  std::map<std::uint64_t, std::string> track_names;  // by uuid
  std::map<std::uint64_t, std::uint64_t> parents;    // uuid -> parent uuid
  std::set<std::uint64_t> counter_tracks;
};

DecodedEvent decode_track_event(std::uint64_t timestamp, std::string_view bytes) {
  DecodedEvent event;
  event.timestamp = timestamp;
  for (const auto& field : decode_message(bytes)) {
    if (field.number == 9)
      event.type = field.integer;
    else if (field.number == 11)
      event.track = field.integer;
    else if (field.number == 23)
      event.name = field.bytes;
    else if (field.number == 22)
      event.category = field.bytes;
    else if (field.number == 47)
      event.flows.push_back(field.integer);
    else if (field.number == 48)
      event.terminating.push_back(field.integer);
    else if (field.number == 30)
      event.counter = std::int64_t(field.integer);
    else if (field.number == 4) {
      std::string key;
      std::int64_t value = 0;
      bool integer = false;
      for (const auto& part : decode_message(field.bytes)) {
        if (part.number == 10)
          key = part.bytes;
        if (part.number == 4) {
          value = std::int64_t(part.integer);
          integer = true;
        }
      }
      if (integer)
        event.int_args[key] = value;
    }
  }
  return event;
}

void decode_descriptor(std::string_view bytes, DecodedTrace& trace) {
  std::uint64_t uuid = 0;
  std::string name;
  std::uint64_t parent = 0;
  bool counter = false;
  for (const auto& field : decode_message(bytes)) {
    if (field.number == 1)
      uuid = field.integer;
    else if (field.number == 2)
      name = field.bytes;
    else if (field.number == 5)
      parent = field.integer;
    else if (field.number == 8)
      counter = true;
  }
  if (uuid == 0)
    return;  // the root, which only orders the groups
  trace.track_names[uuid] = name;
  trace.parents[uuid] = parent;
  if (counter)
    trace.counter_tracks.insert(uuid);
}

DecodedTrace decode_trace(std::string_view bytes) {
  DecodedTrace trace;
  for (const auto& packet : decode_message(bytes)) {
    REQUIRE(packet.number == 1);  // Trace.packet
    std::uint64_t timestamp = 0;
    std::string event;
    for (const auto& field : decode_message(packet.bytes)) {
      if (field.number == 8)
        timestamp = field.integer;
      else if (field.number == 11)
        event = field.bytes;
      else if (field.number == 60)
        decode_descriptor(field.bytes, trace);
      else if (field.number == 10)
        CHECK(field.integer == 1);  // one sequence
    }
    if (!event.empty())
      trace.events.push_back(decode_track_event(timestamp, event));
  }
  return trace;
}

// Which SLICE_END closes which SLICE_BEGIN (by index), each END closing its track's innermost
// open slice, taking the events in the order of `order`.
std::map<std::size_t, std::size_t> slice_pairs(const std::vector<DecodedEvent>& events,
                                               const std::vector<std::size_t>& order) {
  std::map<std::uint64_t, std::vector<std::size_t>> open;
  std::map<std::size_t, std::size_t> pairs;
  for (const auto index : order) {
    const auto& event = events[index];
    if (event.type == 1)
      open[event.track].push_back(index);
    if (event.type != 2)
      continue;
    auto& stack = open[event.track];
    REQUIRE(!stack.empty());
    pairs[stack.back()] = index;
    stack.pop_back();
  }
  for (const auto& [track, stack] : open)
    CHECK(stack.empty());
  return pairs;
}

std::vector<std::size_t> file_order(const DecodedTrace& trace) {
  std::vector<std::size_t> order(trace.events.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  return order;
}

std::int64_t ns_of(std::int64_t cycles) {
  return std::llround(double(cycles) / 1.33);  // tf1's clock is 1.33 GHz
}

}  // namespace

TEST_CASE("the protobuf trace holds the tf1 run's tracks, slices and first task in ns") {
  const auto run = testing::trace_run(kProtoTf1, {}, sim::TraceFormat::kProto);
  auto trace = decode_trace(run->bytes);
  std::set<std::string> names;
  for (const auto& [uuid, name] : trace.track_names) {
    if (!trace.counter_tracks.count(uuid))
      names.insert(name);
  }
  CHECK(names == std::set<std::string>{"IPUs", "IPU0 (physical IPU0)", "IPU1 (physical IPU1)",
                                       "IPU-Links", "link IPU0->IPU1 (physical IPU0->IPU1)",
                                       "link IPU1->IPU0 (physical IPU1->IPU0)", "Host links",
                                       "host link IPU0", "host link IPU1",
                                       "host 0: input pipeline and program", "BSP",
                                       "sync / exchange", "phases", "Memory"});
  CHECK(trace.counter_tracks.size() == 14);  // 7 categories on each of 2 IPUs
  // Grouped, 2 stages, M = 16, 20 BSP steps: F and B of each micro-batch on each stage, its
  // infeed and outfeed, the copies of the steps' exchanges (an activation and a gradient copy
  // in each step), the weight update on each IPU and a sync and an exchange in each step.
  std::map<std::string, int> by_category;
  int begins = 0;
  int ends = 0;
  for (auto& event : trace.events) {
    begins += event.type == 1 ? 1 : 0;
    ends += event.type == 2 ? 1 : 0;
    if (event.type == 1 && trace.track_names[event.track] != "host 0: input pipeline and program")
      ++by_category[event.category];
  }
  CHECK(begins == ends);
  CHECK(by_category["compute"] == 64);
  CHECK(by_category["link"] == 40);
  CHECK(by_category["host"] == 32);
  CHECK(by_category["bsp"] == 40);
  CHECK(by_category["weight_update"] == 2);
  CHECK(run->report.replay.tasks == 64 + 40 + 32 + 2);

  // F1 s0 starts on IPU0 after the infeed's 17,342 cycles (13,039 ns at 1.33 GHz) and runs
  // stage 0's forward pass, 9,878 cycles.
  auto first = std::find_if(trace.events.begin(), trace.events.end(), [](const DecodedEvent& e) {
    return e.type == 1 && e.category == "compute";
  });
  REQUIRE(first != trace.events.end());
  auto& args = first->int_args;
  CHECK(first->name == "F1 s0");
  CHECK(trace.track_names[first->track] == "IPU0 (physical IPU0)");
  CHECK(first->timestamp == 13039);
  CHECK(args["cycles"] == 9878);
  CHECK(args["micro_batch"] == 1);
  CHECK(sim::build_cost_model(run->spec).stages[0][0].forward_cycles == 9878);
  // Its end, after the operations nested in it.
  const auto pairs = slice_pairs(trace.events, file_order(trace));
  const auto end =
      trace.events.begin() + std::ptrdiff_t(pairs.at(std::size_t(first - trace.events.begin())));
  CHECK(std::int64_t(end->timestamp) == ns_of(17342 + 9878));
}

TEST_CASE("protobuf flows go from stage to stage through the copy and end at the next stage") {
  const auto run = testing::trace_run(kProtoTf1, {}, sim::TraceFormat::kProto);
  auto trace = decode_trace(run->bytes);
  std::map<std::uint64_t, std::vector<std::string>> path;  // id -> categories passed
  std::map<std::uint64_t, int> terminated;
  for (const auto& event : trace.events) {
    for (const auto id : event.flows)
      path[id].push_back(event.category);
    for (const auto id : event.terminating)
      ++terminated[id];
  }
  // 16 micro-batches, forward from stage 0 to 1 and backward from 1 to 0.
  CHECK(path.size() == 32);
  CHECK(terminated.size() == 32);
  for (const auto& [id, categories] : path) {
    INFO(id);
    CHECK(categories == std::vector<std::string>{"compute", "link"});
    CHECK(terminated[id] == 1);
  }
}

TEST_CASE("the protobuf trace's memory counters reach each IPU's peak") {
  const auto run = testing::trace_run(kProtoTf1, {}, sim::TraceFormat::kProto);
  auto trace = decode_trace(run->bytes);
  // Each series holds its value until it changes: sum the latest of every series per IPU.
  std::map<std::uint64_t, std::int64_t> latest;
  std::map<std::string, std::int64_t> peak;
  for (const auto& event : trace.events) {
    if (event.type != 4)
      continue;
    latest[event.track] = event.counter;
    const std::string series = trace.track_names[event.track];
    const std::string ipu = series.substr(0, series.find(' '));
    std::int64_t total = 0;
    for (const auto& [uuid, value] : latest)
      total += trace.track_names[uuid].rfind(ipu + " ", 0) == 0 ? value : 0;
    peak[ipu] = std::max(peak[ipu], total);
  }
  CHECK(peak["IPU0"] == run->report.replay.ipus[0].peak_memory_bytes);
  CHECK(peak["IPU1"] == run->report.replay.ipus[1].peak_memory_bytes);
}

TEST_CASE("a trace keeps every task past the 200,000 spans the HTML chart keeps") {
  // 1F1B on 2 stages: 8 tasks a micro-batch (F and B on each stage, 2 copies, infeed and
  // outfeed), so 26,000 micro-batches are 208,000 tasks.
  const auto run = testing::trace_run(
      kProtoTf1, {"pipeline.pipeline_schedule=1f1b", "pipeline.gradient_accumulation_count=26000"},
      sim::TraceFormat::kProto);
  auto trace = decode_trace(run->bytes);
  std::map<std::string, int> by_category;
  for (const auto& event : trace.events) {
    if (event.type == 1 && trace.track_names[event.track] != "host 0: input pipeline and program")
      ++by_category[event.category];
  }
  CHECK(by_category["compute"] == 104'000);
  CHECK(by_category["link"] == 52'000);
  CHECK(by_category["host"] == 52'000);
  CHECK(run->report.replay.tasks == 208'002);  // and a weight update on each IPU
}

TEST_CASE("a trace larger than the free space is refused before the replay, with its estimate") {
  // tf1 runs 8 tasks a micro-batch; at 400 bytes a task in JSON and 260 bytes for each of the
  // 4,097 memory samples of its 2 IPUs, 1,000,000 micro-batches take 3,202,130,440 bytes.
  const auto spec = sim::load_run_spec(
      kProtoTf1, {core::parse_set_argument("pipeline.gradient_accumulation_count=1000000")});
  CHECK(sim::estimated_trace_bytes(spec, sim::TraceFormat::kJson) == 3'202'130'440.0);
  CHECK(sim::estimated_trace_bytes(spec, sim::TraceFormat::kProto) == 1'361'229'100.0);
  const auto refusal = [&](sim::TraceFormat format, const std::string& path) {
    return testing::error_of<core::ConfigError>(
        [&] { sim::refuse_oversized_trace(spec, path, "--trace", format, 1'000'000'000); });
  };
  CHECK(refusal(sim::TraceFormat::kJson, "t.json") ==
        "t.json: cannot write the --trace output: the trace would take about 3.2 GB (8e+06 tasks "
        "at about 400 bytes each in JSON), more than the 1 GB free on its file system; name it "
        ".pftrace for Perfetto's protobuf format (about 1.36 GB), or lower "
        "gradient_accumulation_count");
  CHECK(refusal(sim::TraceFormat::kProto, "t.pftrace") ==
        "t.pftrace: cannot write the --trace output: the trace would take about 1.36 GB (8e+06 "
        "tasks at about 170 bytes each in protobuf), more than the 1 GB free on its file system; "
        "lower gradient_accumulation_count");
  // Within the free space, or when it cannot be told, nothing is refused.
  CHECK_NOTHROW(
      sim::refuse_oversized_trace(spec, "t.json", "--trace", sim::TraceFormat::kJson, 4e9));
  CHECK_NOTHROW(
      sim::refuse_oversized_trace(spec, "t.json", "--trace", sim::TraceFormat::kJson, -1));
}

TEST_CASE("a trace file's name picks its format") {
  CHECK(sim::trace_format_of_path("run.pftrace") == sim::TraceFormat::kProto);
  CHECK(sim::trace_format_of_path("out/run.perfetto-trace") == sim::TraceFormat::kProto);
  CHECK(sim::trace_format_of_path("run.json") == sim::TraceFormat::kJson);
  CHECK(sim::trace_format_of_path("run.pftrace.json") == sim::TraceFormat::kJson);
  CHECK(sim::trace_format_of_path("run") == sim::TraceFormat::kJson);
}

TEST_CASE("protobuf slices nest the same once Perfetto sorts the packets by time") {
  // Perfetto sorts by timestamp, keeping the file's order among equal ones.
  for (const auto& sets :
       std::vector<std::vector<std::string>>{{},
                                             {"pipeline.pipeline_schedule=zero_bubble_h1"},
                                             {"pipeline.offload_activations=true"}}) {
    const auto run = testing::trace_run(kProtoTf1, sets, sim::TraceFormat::kProto);
    const auto trace = decode_trace(run->bytes);
    const auto in_file = file_order(trace);
    auto by_time = in_file;
    std::stable_sort(by_time.begin(), by_time.end(), [&](std::size_t a, std::size_t b) {
      return trace.events[a].timestamp < trace.events[b].timestamp;
    });
    const auto written = slice_pairs(trace.events, in_file);
    CHECK(written.size() > 200);
    CHECK(slice_pairs(trace.events, by_time) == written);
  }
}
