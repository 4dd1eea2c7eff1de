#include "sim/report/trace.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "sim/core/format.hpp"
#include "sim/machine/cost_model.hpp"
#include "tests/sim/report/report_fixture.hpp"

using namespace ipusim;
using nlohmann::json;

namespace {

const char* const kTf1 = "configs/tf1_mnist_2ipu.json";

// Every phase the trace-event format defines.
const std::set<std::string> kFormatPhases = {"B", "E", "X", "i", "I", "C", "b", "n",
                                             "e", "s", "t", "f", "P", "N", "O", "D",
                                             "M", "V", "v", "R", "c", "(", ")"};

// Checks one event against the trace-event format; returns what is wrong, or "".
std::string format_error(const json& e) {
  if (!e.is_object())
    return "not an object";
  for (const char* key : {"name", "ph", "ts", "pid", "tid"}) {
    if (!e.contains(key))
      return std::string("no ") + key;
  }
  if (!e["name"].is_string() || !e["ph"].is_string())
    return "name or ph is not a string";
  if (!kFormatPhases.count(e["ph"].get<std::string>()))
    return "unknown ph " + e["ph"].dump();
  if (!e["ts"].is_number() || e["ts"].get<double>() < 0)
    return "ts is not a non-negative number";
  if (!e["pid"].is_number_integer() || !e["tid"].is_number_integer())
    return "pid or tid is not an integer";
  if (e.contains("args") && !e["args"].is_object())
    return "args is not an object";
  const auto ph = e["ph"].get<std::string>();
  if (ph == "X" && (!e.contains("dur") || !e["dur"].is_number() || e["dur"].get<double>() < 0))
    return "X without a non-negative dur";
  if (ph == "i" && !(e.contains("s") && (e["s"] == "g" || e["s"] == "p" || e["s"] == "t")))
    return "instant without scope g, p or t";
  if (ph == "C") {
    for (const auto& [key, value] : e["args"].items()) {
      if (!value.is_number())
        return "counter series " + key + " is not a number";
    }
  }
  if (ph == "M") {
    const auto name = e["name"].get<std::string>();
    const bool named = name == "process_name" || name == "thread_name";
    const bool sorted = name == "process_sort_index" || name == "thread_sort_index";
    if (!(named && e["args"]["name"].is_string()) &&
        !(sorted && e["args"]["sort_index"].is_number_integer()))
      return "bad metadata " + name;
  }
  return "";
}

// Task slices carry these argument types.
std::string task_args_error(const json& args) {
  if (!args["stage"].is_number_integer() || !args["micro_batch"].is_number_integer() ||
      !args["phase"].is_string() || !args["flops"].is_number() ||
      !args["bytes"].is_number_integer() || !args["cycles"].is_number_integer())
    return "bad task args " + args.dump();
  return "";
}

void check_format(const json& trace) {
  REQUIRE(trace["traceEvents"].is_array());
  // The format allows ns or ms; the viewer gets ms for a trace of a millisecond or more.
  double end = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X")
      end = std::max(end, e.value("ts", 0.0) + e.value("dur", 0.0));
  }
  CHECK(trace["displayTimeUnit"] == (end >= 1000.0 ? "ms" : "ns"));
  for (const auto& e : trace["traceEvents"]) {
    INFO(e.dump());
    CHECK(format_error(e) == "");
    CHECK(std::set<std::string>{"X", "i", "C", "M", "s", "t", "f"}.count(
              e["ph"].get<std::string>()) == 1);
    if (e["ph"] == "X" && e["cat"] == "compute")
      CHECK(task_args_error(e["args"]) == "");
  }
}

// The X slices of one track, by start, without the operations nested inside tasks.
std::vector<json> slices(const json& trace, int pid, int tid) {
  std::vector<json> out;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["pid"] == pid && e["tid"] == tid && e.value("cat", "") != "operation")
      out.push_back(e);
  }
  std::stable_sort(out.begin(), out.end(), [](const json& a, const json& b) {
    return a["ts"].get<double>() < b["ts"].get<double>();
  });
  return out;
}

// Slices on one IPU's track never overlap (to within rounding of microseconds).
void check_no_overlap(const json& trace, int ipus) {
  for (int ipu = 0; ipu < ipus; ++ipu) {
    const auto track = slices(trace, 1, ipu);
    for (std::size_t i = 1; i < track.size(); ++i) {
      const double end = track[i - 1]["ts"].get<double>() + track[i - 1]["dur"].get<double>();
      INFO("IPU" << ipu << ": " << track[i - 1]["name"] << " and " << track[i]["name"]);
      CHECK(track[i]["ts"].get<double>() >= end - 1e-9 * std::max(1.0, end));
    }
  }
}

std::map<std::string, int> thread_names(const json& trace, int pid) {
  std::map<std::string, int> names;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == pid)
      names[e["args"]["name"].get<std::string>()] = e["tid"].get<int>();
  }
  return names;
}

std::vector<std::string> names_of(const std::vector<json>& track) {
  std::vector<std::string> names;
  for (const auto& e : track)
    names.push_back(e["name"].get<std::string>());
  return names;
}

// Stem on IPU0, two branches concurrently on IPU1 and IPU2, the join and loss on IPU3.
nlohmann::json concurrent_config() {
  return json::parse(R"({
    "model": {"name": "branches", "input": {"shape": [16]}, "classes": 4, "layers": [
      {"id": "stem", "type": "dense", "units": 8},
      {"id": "left", "type": "dense", "units": 8, "inputs": ["stem"]},
      {"id": "right", "type": "dense", "units": 8, "inputs": ["stem"]},
      {"id": "join", "type": "add", "inputs": ["left", "right"]},
      {"id": "head", "type": "dense", "units": 4},
      {"id": "loss", "type": "softmax_cross_entropy"}]},
    "pipeline": {"stages": [["stem"], [["left"], ["right"]], ["join", "head", "loss"]],
                 "device_mapping": [0, [1, 2], 3], "pipeline_schedule": "grouped",
                 "gradient_accumulation_count": 12},
    "hardware": {"preset": "gc200"}})");
}

}  // namespace

TEST_CASE("the tf1 grouped trace follows the trace-event format and starts with F1 s0 on IPU0") {
  const auto run = testing::trace_run(kTf1);
  const auto trace = json::parse(run->bytes);
  check_format(trace);
  check_no_overlap(trace, 2);

  const auto ipu0 = slices(trace, 1, 0);
  REQUIRE(ipu0.size() == 33);  // 16 F, 16 B and the on-chip weight update
  CHECK(ipu0[0]["name"] == "F1 s0");
  // The step's infeed runs on IPU0 first; the trace shows it on IPU0's host link.
  const auto infeed = slices(trace, 3, 0)[0];
  CHECK(infeed["name"] == "infeed m1");
  CHECK(ipu0[0]["ts"] == infeed["dur"]);
  CHECK(ipu0[0]["args"]["stage"] == 0);
  CHECK(ipu0[0]["args"]["micro_batch"] == 1);
  CHECK(ipu0[0]["args"]["phase"] == "ramp-up");
  CHECK(ipu0[0]["args"]["step"] == 1);
  const auto cost = sim::build_cost_model(run->spec);
  const auto forward = cost.stages[0][0].forward_cycles;
  CHECK(ipu0[0]["args"]["cycles"] == forward);
  CHECK(ipu0[0]["dur"].get<double>() == Approx(double(forward) / 1.33e9 * 1e6));
  CHECK(ipu0[1]["name"] == "F2 s0");
  CHECK(ipu0[31]["name"] == "B16 s0");
  CHECK(ipu0[32]["name"] == "weight update");

  const auto ipu1 = slices(trace, 1, 1);
  CHECK(names_of(ipu1)[0] == "F1 s1");
  CHECK(names_of(ipu1)[1] == "B1 s1");

  CHECK(thread_names(trace, 1) ==
        std::map<std::string, int>{{"IPU0 (physical IPU0)", 0}, {"IPU1 (physical IPU1)", 1}});
  CHECK(thread_names(trace, 2) ==
        std::map<std::string, int>{{"link IPU0->IPU1 (physical IPU0->IPU1)", 0},
                                   {"link IPU1->IPU0 (physical IPU1->IPU0)", 1}});
  CHECK(thread_names(trace, 3) ==
        std::map<std::string, int>{{"host link IPU0", 0},
                                   {"host link IPU1", 1},
                                   {"host 0: input pipeline and program", 2}});
  // The host prepares the next step's 512 samples (784 fp32 pixels and a label each, 1,607,680
  // bytes) at 12.5 GB/s in 128.61 µs = 171,058 cycles; the host call that starts the program
  // (10 µs, and 450 µs for each of the 5 dense layers' 10 weight tensors: 4,510 µs) is shared by
  // its 10 repeats and ends the step: 451 µs = 599,830 cycles.
  const auto host = slices(trace, 3, 2);
  REQUIRE(names_of(host) == std::vector<std::string>{"prepare next step's input", "host call"});
  CHECK(host[0]["args"]["cycles"] == 171058);
  CHECK(host[0]["args"]["bytes"] == 1607680);
  CHECK(host[1]["args"]["cycles"] == 599830);
  CHECK(thread_names(trace, 4) ==
        std::map<std::string, int>{{"sync / exchange", 0}, {"phases", 1}});
  CHECK(names_of(slices(trace, 4, 1)) ==
        std::vector<std::string>{"ramp-up", "main", "ramp-down", "weight update"});
  CHECK(slices(trace, 3, 0)[0]["name"] == "infeed m1");
  CHECK(trace["otherData"]["schedule"] == "grouped");
  CHECK(trace["otherData"]["truncated"] == false);
  CHECK(trace["otherData"]["physical_ipus"] == json::array({0, 1}));
  CHECK(thread_names(trace, 6).empty());  // nothing in streaming memory
}

namespace {

// Four equal stages on the ideal hardware: snake places logical IPUs 0, 1, 2, 3 on physical
// IPUs 0, 1, 3, 2.
nlohmann::json four_stages(const std::string& selection_order) {
  return json::parse(R"({
    "model": {"name": "four", "input": {"shape": [4]}, "layers": [
      {"id": "d0", "type": "dense", "units": 4, "cycles": {"forward": 100, "backward": 200}},
      {"id": "d1", "type": "dense", "units": 4, "cycles": {"forward": 100, "backward": 200}},
      {"id": "d2", "type": "dense", "units": 4, "cycles": {"forward": 100, "backward": 200}},
      {"id": "d3", "type": "dense", "units": 4, "cycles": {"forward": 100, "backward": 200}},
      {"id": "loss", "type": "softmax_cross_entropy", "cycles": {"forward": 0, "backward": 0}}]},
    "pipeline": {"splits": ["d1", "d2", "d3"], "gradient_accumulation_count": 8},
    "hardware": {"preset": "ideal", "clock": "1GHz", "streaming_memory_bandwidth": "16MB/s",
                 "selection_order": ")" +
                     selection_order + R"("}})");
}

}  // namespace

TEST_CASE("trace tracks name logical IPUs and the physical IPUs selection_order gives them") {
  // Links read top-down as the pipeline: activations stage by stage, then gradients back.
  const auto run = testing::trace_run(
      sim::build_run_spec(core::ConfigDocument::from_json(four_stages("snake"), "four.json")));
  const auto trace = json::parse(run->bytes);
  CHECK(thread_names(trace, 1) == std::map<std::string, int>{{"IPU0 (physical IPU0)", 0},
                                                             {"IPU1 (physical IPU1)", 1},
                                                             {"IPU2 (physical IPU3)", 2},
                                                             {"IPU3 (physical IPU2)", 3}});
  CHECK(thread_names(trace, 2) ==
        std::map<std::string, int>{{"link IPU0->IPU1 (physical IPU0->IPU1)", 0},
                                   {"link IPU1->IPU2 (physical IPU1->IPU3)", 1},
                                   {"link IPU2->IPU3 (physical IPU3->IPU2)", 2},
                                   {"link IPU3->IPU2 (physical IPU2->IPU3)", 3},
                                   {"link IPU2->IPU1 (physical IPU3->IPU1)", 4},
                                   {"link IPU1->IPU0 (physical IPU1->IPU0)", 5}});
  CHECK(trace["otherData"]["physical_ipus"] == json::array({0, 1, 3, 2}));
  // A copy from logical IPU2 to IPU3 is drawn on the link between physical IPUs 3 and 2.
  const auto copies = slices(trace, 2, 2);
  REQUIRE(!copies.empty());
  CHECK(copies[0]["args"]["from_ipu"] == 2);
  CHECK(copies[0]["args"]["to_ipu"] == 3);
}

TEST_CASE("the trace draws each offloaded FIFO read and write on its IPU's streaming track") {
  auto config = four_stages("snake");
  config["pipeline"]["offload_activations"] = true;
  const auto run =
      testing::trace_run(sim::build_run_spec(core::ConfigDocument::from_json(config, "four.json")));
  const auto trace = json::parse(run->bytes);
  check_format(trace);
  CHECK(thread_names(trace, 6) == std::map<std::string, int>{{"streaming memory IPU0", 0},
                                                             {"streaming memory IPU1", 1},
                                                             {"streaming memory IPU2", 2},
                                                             {"streaming memory IPU3", 3}});
  // Grouped N=4 M=8: stage k's FIFO runs with F_k in ramp-up steps k+1..8 and in all 8 steps
  // of the ramp-down, M + 2N - k times; the last stage has none.
  for (int stage = 0; stage < 4; ++stage) {
    const auto track = slices(trace, 6, stage);
    INFO("stage " << stage);
    REQUIRE(track.size() == std::size_t(stage == 3 ? 0 : 2 * (16 - stage)));
    if (track.empty())
      continue;
    CHECK(track[0]["name"] == "stash read s" + std::to_string(stage));
    CHECK(track[1]["name"] == "stash write s" + std::to_string(stage));
    CHECK(track[0]["args"]["step"] == stage + 1);
    CHECK(track[0]["args"]["bytes"] == 16);
    CHECK(track[0]["args"]["cycles"] == 1000);
    CHECK(track[0]["cat"] == "streaming");
  }
}

TEST_CASE("the trace has one memory counter per IPU with a series per category") {
  const auto run = testing::trace_run(kTf1);
  const auto trace = json::parse(run->bytes);
  std::map<std::string, std::set<std::string>> series;
  std::map<std::string, double> peak;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "C")
      continue;
    double total = 0;
    for (const auto& [key, value] : e["args"].items()) {
      series[e["name"]].insert(key);
      total += value.get<double>();
    }
    peak[e["name"]] = std::max(peak[e["name"]], total);
  }
  const std::set<std::string> categories = {
      "activations", "always_live",     "copy_buffers", "gradient_accumulators",
      "stash",       "optimizer_state", "weights"};
  CHECK(series == std::map<std::string, std::set<std::string>>{{"IPU0 memory", categories},
                                                               {"IPU1 memory", categories}});
  CHECK(peak["IPU0 memory"] == double(run->report.replay.ipus[0].peak_memory_bytes));
  CHECK(peak["IPU1 memory"] == double(run->report.replay.ipus[1].peak_memory_bytes));
}

TEST_CASE("a 1f1b trace keeps each IPU's tasks apart and ends IPU0 with B16 s0") {
  const auto run = testing::trace_run(kTf1, {"pipeline.pipeline_schedule=1f1b"});
  const auto trace = json::parse(run->bytes);
  check_format(trace);
  check_no_overlap(trace, 2);
  const auto ipu0 = names_of(slices(trace, 1, 0));
  REQUIRE(ipu0.size() == 33);
  CHECK(ipu0[0] == "F1 s0");
  CHECK(ipu0[1] == "F2 s0");
  CHECK(ipu0[31] == "B16 s0");
  CHECK(names_of(slices(trace, 1, 1))[0] == "F1 s1");
  CHECK(slices(trace, 4, 0).empty());  // no BSP sync
  CHECK(trace["otherData"]["schedule"] == "1f1b");
}

TEST_CASE("a concurrent stage's sub-tasks run on both of its IPUs at once in the trace") {
  const auto run = testing::trace_run(
      sim::build_run_spec(core::ConfigDocument::from_json(concurrent_config(), "branches.json")));
  const auto trace = json::parse(run->bytes);
  check_format(trace);
  check_no_overlap(trace, 4);
  const auto ipu1 = slices(trace, 1, 1);
  const auto ipu2 = slices(trace, 1, 2);
  REQUIRE(!ipu1.empty());
  REQUIRE(!ipu2.empty());
  CHECK(ipu1[0]["name"] == "F1 s1");
  CHECK(ipu2[0]["name"] == "F1 s1");
  CHECK(ipu1[0]["ts"] == ipu2[0]["ts"]);
  CHECK(ipu1[0]["args"]["substage"] == 0);
  CHECK(ipu2[0]["args"]["substage"] == 1);
}

TEST_CASE("the same run gives a byte-identical trace in either format") {
  for (const auto format : {sim::TraceFormat::kJson, sim::TraceFormat::kProto}) {
    const auto a = testing::trace_run(kTf1, {}, format);
    const auto b = testing::trace_run(kTf1, {}, format);
    CHECK(!a->bytes.empty());
    CHECK(a->bytes == b->bytes);
  }
}

TEST_CASE("past max_events a BSP timeline keeps whole steps and says how many") {
  const auto full = testing::record(kTf1);
  const auto cut = testing::record(kTf1, {}, {40, 4096});
  const auto& t = cut->timeline();
  CHECK(!full->timeline().truncated);
  REQUIRE(t.truncated);
  CHECK(t.steps == full->timeline().steps);
  CHECK(t.spans_seen == full->timeline().spans_seen);
  CHECK(t.spans_kept <= 40);
  for (const auto& span : t.tasks)
    CHECK(span.task.step < t.recorded_steps);
  // Every span of the kept steps is there.
  std::int64_t expected = 0;
  for (const auto& span : full->timeline().tasks)
    expected += span.task.step < t.recorded_steps ? 1 : 0;
  CHECK(std::int64_t(t.tasks.size()) == expected);
  CHECK(t.truncation_note() == "showing the first " + std::to_string(t.recorded_steps) +
                                   " of 20 steps (" + sim::with_commas(t.recorded_until.count) +
                                   " of " + sim::with_commas(t.end.count) + " cycles)");
  CHECK(t.recorded_steps == 4);
  CHECK(t.weight_updates.size() == 2);
}

TEST_CASE("past max_events a 1f1b timeline keeps everything that starts before the cut") {
  const auto full = testing::record(kTf1, {"pipeline.pipeline_schedule=1f1b"});
  const auto cut = testing::record(kTf1, {"pipeline.pipeline_schedule=1f1b"}, {30, 4096});
  const auto& t = cut->timeline();
  REQUIRE(t.truncated);
  CHECK(t.recorded_until > core::Cycles{0});
  std::int64_t expected = 0;
  for (const auto& span : full->timeline().tasks)
    expected += span.start < t.recorded_until ? 1 : 0;
  CHECK(std::int64_t(t.tasks.size()) == expected);
  CHECK(t.truncation_note() == "showing the first " + sim::with_commas(t.recorded_until.count) +
                                   " of " + sim::with_commas(t.end.count) + " cycles");
}

TEST_CASE("coarser memory buckets keep each IPU's peak") {
  const auto full = testing::record(kTf1, {"pipeline.pipeline_schedule=1f1b"});
  const auto coarse = testing::record(kTf1, {"pipeline.pipeline_schedule=1f1b"}, {200'000, 4});
  auto peak = [](const std::vector<sim::MemoryPoint>& points) {
    std::int64_t best = 0;
    for (const auto& p : points)
      best = std::max(best, p.stash_bytes + p.live_bytes);
    return best;
  };
  for (int ipu = 0; ipu < 2; ++ipu) {
    CHECK(coarse->timeline().memory[ipu].size() <= 4);
    CHECK(peak(coarse->timeline().memory[ipu]) == peak(full->timeline().memory[ipu]));
    CHECK(peak(full->timeline().memory[ipu]) > 0);
  }
  CHECK(coarse->timeline().memory_bucket_cycles > 1);
}

TEST_CASE("micro-batch 1's compute slices hold their operations, end to end") {
  for (const auto& sets :
       std::vector<std::vector<std::string>>{{},
                                             {"pipeline.pipeline_schedule=zero_bubble_h1"},
                                             {"pipeline.recomputation_mode=auto"}}) {
    INFO((sets.empty() ? "grouped" : sets[0]));
    const auto run = testing::trace_run(kTf1, sets);
    const auto trace = json::parse(run->bytes);
    int nested_tasks = 0;
    for (const auto& task : trace["traceEvents"]) {
      if (task.value("cat", "") != "compute" || task["args"]["micro_batch"] != 1)
        continue;
      // The operations on the task's track, from its start, sum to its cycles.
      std::int64_t cycles = 0;
      double at = task["ts"].get<double>();
      for (const auto& op : trace["traceEvents"]) {
        if (op.value("cat", "") != "operation" || op["tid"] != task["tid"] ||
            op["ts"].get<double>() < task["ts"].get<double>() - 1e-9 ||
            op["ts"].get<double>() >= task["ts"].get<double>() + task["dur"].get<double>() - 1e-9)
          continue;
        CHECK(op["ts"].get<double>() == Approx(at));
        at += op["dur"].get<double>();
        cycles += op["args"]["cycles"].get<std::int64_t>();
      }
      CHECK(cycles == task["args"]["cycles"].get<std::int64_t>());
      ++nested_tasks;
    }
    CHECK(nested_tasks >= 4);  // F and B on each of the 2 IPUs, and R or W when there are any
  }
}

TEST_CASE("flow arrows follow each micro-batch from stage to stage through its copy") {
  const auto run = testing::trace_run(kTf1);
  const auto trace = json::parse(run->bytes);
  std::map<std::int64_t, std::vector<json>> flows;  // by id, in order
  for (const auto& e : trace["traceEvents"])
    if (e.value("cat", "") == "flow")
      flows[e["id"].get<std::int64_t>()].push_back(e);
  // 16 micro-batches, forward from stage 0 to 1 and backward from 1 to 0.
  REQUIRE(flows.size() == 32);
  std::size_t forward = 0;
  for (const auto& [id, points] : flows) {
    INFO(id);
    REQUIRE(points.size() == 3);
    CHECK(points[0]["ph"] == "s");
    CHECK(points[1]["ph"] == "t");
    CHECK(points[2]["ph"] == "f");
    CHECK(points[1]["pid"] == 2);  // the IPU-Links
    CHECK(points[0]["ts"].get<double>() < points[1]["ts"].get<double>());
    CHECK(points[1]["ts"].get<double>() < points[2]["ts"].get<double>());
    const bool is_forward = points[0]["name"].get<std::string>().rfind("forward", 0) == 0;
    forward += is_forward ? 1 : 0;
    // Forward goes from IPU0 to IPU1, backward back; each point sits inside a slice of its track.
    CHECK(points[0]["tid"] == (is_forward ? 0 : 1));
    CHECK(points[2]["tid"] == (is_forward ? 1 : 0));
    for (const auto& point : points) {
      const auto track = slices(trace, point["pid"], point["tid"]);
      const double ts = point["ts"];
      CHECK(std::any_of(track.begin(), track.end(), [&](const json& slice) {
        return slice["ts"].get<double>() <= ts &&
               ts <= slice["ts"].get<double>() + slice["dur"].get<double>();
      }));
    }
  }
  CHECK(forward == 16);
}

TEST_CASE("the trace's display unit is ns for a step under a millisecond, ms beyond") {
  const auto short_run = testing::trace_run(kTf1);
  CHECK(json::parse(short_run->bytes)["displayTimeUnit"] == "ns");
  CHECK(short_run->report.figures.step_seconds < 1e-3);
  const auto long_run = testing::trace_run(kTf1, {"pipeline.gradient_accumulation_count=64"});
  CHECK(long_run->report.figures.step_seconds > 1e-3);
  CHECK(json::parse(long_run->bytes)["displayTimeUnit"] == "ms");
}
