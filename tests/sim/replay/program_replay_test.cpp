// The program-order fast path (runs without observers) against the event engine (which any
// observer selects): every field of the result must match, on every dependency-ordered
// schedule, over configs, settings and gradient accumulation counts.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "schedules/build.hpp"
#include "sim/core/config_file.hpp"
#include "sim/core/error.hpp"
#include "sim/machine/cost_model.hpp"
#include "sim/replay/replay.hpp"
#include "sim/replay/replay_state.hpp"
#include "sim/report/report.hpp"

using namespace ipusim;

namespace {

// Hears everything and does nothing: its presence alone makes the replay use the event engine.
class SilentObserver : public sim::ReplayObserver {};

void require_same(const sim::MemoryPeak& fast, const sim::MemoryPeak& events) {
  CHECK(fast.peak_memory_bytes == events.peak_memory_bytes);
  CHECK(fast.peak_stash_bytes == events.peak_stash_bytes);
  CHECK(fast.memory_at_peak == events.memory_at_peak);
  CHECK(fast.streaming_memory == events.streaming_memory);
}

void require_same(const sim::IpuStats& fast, const sim::IpuStats& events) {
  require_same(static_cast<const sim::MemoryPeak&>(fast),
               static_cast<const sim::MemoryPeak&>(events));
  CHECK(fast.physical == events.physical);
  CHECK(fast.busy_cycles == events.busy_cycles);
  CHECK(fast.busy_in_phase == events.busy_in_phase);
  CHECK(fast.host_busy_cycles == events.host_busy_cycles);
  CHECK(fast.streaming_busy_cycles == events.streaming_busy_cycles);
  CHECK(fast.streaming_bytes == events.streaming_bytes);
}

void require_same(const sim::OutOfMemory& fast, const sim::OutOfMemory& events) {
  CHECK(fast.capacity == events.capacity);
  REQUIRE(fast.ipus.size() == events.ipus.size());
  for (std::size_t i = 0; i < fast.ipus.size(); ++i) {
    const auto& a = fast.ipus[i];
    const auto& b = events.ipus[i];
    CHECK(a.ipu == b.ipu);
    CHECK(a.physical == b.physical);
    CHECK(a.step == b.step);
    CHECK(a.cycle == b.cycle);
    CHECK(a.bytes == b.bytes);
    REQUIRE(a.largest.size() == b.largest.size());
    for (std::size_t k = 0; k < a.largest.size(); ++k) {
      CHECK(a.largest[k].category == b.largest[k].category);
      CHECK(a.largest[k].name == b.largest[k].name);
      CHECK(a.largest[k].bytes == b.largest[k].bytes);
    }
  }
  CHECK(fast.message() == events.message());
}

void require_same(const sim::ReplayResult& fast, const sim::ReplayResult& events) {
  CHECK(fast.step_cycles == events.step_cycles);
  CHECK(fast.phase_cycles == events.phase_cycles);
  CHECK(fast.tasks == events.tasks);
  REQUIRE(fast.ipus.size() == events.ipus.size());
  for (std::size_t ipu = 0; ipu < fast.ipus.size(); ++ipu)
    require_same(fast.ipus[ipu], events.ipus[ipu]);
  REQUIRE(fast.links.size() == events.links.size());
  for (std::size_t i = 0; i < fast.links.size(); ++i) {
    const auto& a = fast.links[i];
    const auto& b = events.links[i];
    CHECK(a.from_ipu == b.from_ipu);
    CHECK(a.to_ipu == b.to_ipu);
    CHECK(a.from_physical == b.from_physical);
    CHECK(a.to_physical == b.to_physical);
    CHECK(a.busy_cycles == b.busy_cycles);
    CHECK(a.bytes == b.bytes);
  }
  REQUIRE(fast.out_of_memory.has_value() == events.out_of_memory.has_value());
  if (fast.out_of_memory)
    require_same(*fast.out_of_memory, *events.out_of_memory);
}

// Replays `config` on `schedule` with each override set and gradient accumulation count, on
// both engines; returns how many runs were compared (none for a step-based schedule).
int compare_schedule(const core::ConfigDocument& config, const std::string& schedule,
                     const std::vector<std::vector<core::Override>>& settings,
                     const std::vector<std::int64_t>& gacs) {
  int compared = 0;
  for (const std::int64_t gac : gacs) {
    for (const auto& setting : settings) {
      auto overrides = setting;
      overrides.push_back({"pipeline.pipeline_schedule", schedule, "schedule"});
      overrides.push_back({"pipeline.gradient_accumulation_count", std::to_string(gac), "gac"});
      std::optional<sim::RunSpec> spec;
      try {
        spec = sim::build_run_spec(config.with_overrides(overrides));
      } catch (const core::ConfigError&) {
        continue;  // a setting this schedule or count does not take
      }
      if (spec->schedule->step_based())
        return 0;
      INFO(schedule << " gac " << gac << " setting " << compared);
      const sim::CostModel cost = sim::build_cost_model(*spec);
      SilentObserver silent;
      const auto fast = sim::replay(*spec, cost, {true, {}, {}});
      const auto events = sim::replay(*spec, cost, {true, {&silent}, {}});
      require_same(fast, events);
      ++compared;
    }
  }
  return compared;
}

// Small counts, and large ones that wrap the fast path's buffers of times and spans.
const std::vector<std::int64_t> kCounts = {1, 2, 3, 5, 8, 13, 64, 100};
const std::vector<std::int64_t> kMoreCounts = {1, 2, 3, 5, 8, 13, 64, 100, 320, 1000};

int compare_engines(const core::ConfigDocument& config,
                    const std::vector<std::vector<core::Override>>& settings,
                    const std::vector<std::int64_t>& gacs = kCounts) {
  int compared = 0;
  for (const auto& info : schedules::schedule_catalogue())
    compared += compare_schedule(config, info.name, settings, gacs);
  return compared;
}

const std::vector<std::vector<core::Override>> kSettings = {
    {},
    {{"pipeline.recomputation_mode", "recompute_and_backpropagate_interleaved", "recompute"}},
    {{"pipeline.training", "false", "inference"}},
    {{"pipeline.offload_activations", "true", "offload"}},
    {{"pipeline.replication_factor", "2", "replicas"}, {"hardware.ipus", "16", "ipus"}},
};

// Stages of unequal sizes and cycles, so that copies differ in length and links queue.
nlohmann::json varied_stages(int stages, const std::string& preset) {
  nlohmann::json layers = nlohmann::json::array();
  nlohmann::json splits = nlohmann::json::array();
  for (int k = 0; k < stages; ++k) {
    const std::string id = "d" + std::to_string(k);
    layers.push_back(
        {{"id", id},
         {"type", "dense"},
         {"units", 16 + 8 * (k % 4)},
         {"cycles", {{"forward", 1000 + 37 * (k % 5)}, {"backward", 2000 - 51 * (k % 3)}}}});
    if (k > 0)
      splits.push_back(id);
  }
  layers.push_back({{"id", "loss"}, {"type", "softmax_cross_entropy"}});
  return {{"model", {{"name", "equal"}, {"input", {{"shape", {16}}}}, {"layers", layers}}},
          {"pipeline", {{"splits", splits}, {"relaxed_divisibility", true}}},
          {"hardware", {{"preset", preset}, {"ipus", 16}}}};
}

}  // namespace

TEST_CASE("the fast path and the event engine agree on every shipped config") {
  int compared = 0;
  for (const std::string name :
       {"configs/bert_tiny_4ipu.json", "configs/bert_tiny_halves_4ipu.json",
        "configs/bert_large_4ipu.json", "configs/keras_cnn_2stage.json",
        "configs/popxl_mnist_3stage.json", "configs/tf1_mnist_2ipu.json",
        "configs/vit_tiny_fashion_mnist.json", "tests/golden/four_stages.json"}) {
    const auto config = core::ConfigDocument::load(std::string(IPUSIM_SOURCE_DIR) + "/" + name, {});
    compared += compare_engines(config, kSettings);
  }
  // interleaved_1f1b runs none of these layouts (it needs two stages an IPU); the deep
  // pipelines below interleave.
  CHECK(compared > 450);
}

TEST_CASE("the fast path and the event engine agree on deep pipelines with shared links") {
  int compared = 0;
  for (const int stages : {2, 5, 8, 16}) {
    for (const std::string preset : {"gc200", "ideal"}) {
      const auto config = core::ConfigDocument::from_json(varied_stages(stages, preset), "deep");
      // Stage k on IPU k mod stages/2, interleaved_1f1b's layout (the others refuse it).
      std::string round_robin = "[";
      for (int k = 0; k < stages; ++k)
        round_robin += (k > 0 ? ", " : "") + std::to_string(k % std::max(stages / 2, 1));
      compared += compare_engines(config,
                                  {{},
                                   {{"pipeline.training", "false", "inference"}},
                                   {{"pipeline.device_mapping", round_robin + "]", "interleaved"}}},
                                  kMoreCounts);
    }
  }
  CHECK(compared > 100);
}

TEST_CASE("the fast path and the event engine agree on concurrent stages and shared IPUs") {
  const auto config = core::ConfigDocument::from_json(
      nlohmann::json::parse(R"({"model": {"name": "branches", "input": {"shape": [6, 6]},
        "classes": 4, "layers": [{"id": "flatten", "type": "flatten"},
        {"id": "trunk", "type": "dense", "units": 12, "activation": "relu"},
        {"id": "left", "type": "dense", "units": 8, "activation": "gelu", "inputs": ["trunk"]},
        {"id": "right", "type": "dense", "units": 8, "activation": "tanh", "inputs": ["trunk"]},
        {"id": "both", "type": "concat", "inputs": ["left", "right"]},
        {"id": "logits", "type": "dense", "units": 4},
        {"id": "loss", "type": "softmax_cross_entropy"}]},
        "pipeline": {"stages": [["flatten", "trunk"], [["left"], ["right"]],
        ["both", "logits", "loss"]], "device_mapping": [0, [1, 2], 3], "micro_batch_size": 3,
        "relaxed_divisibility": true}, "hardware": {"preset": "gc200"}})"),
      "concurrent");
  const std::vector<std::vector<core::Override>> mappings = {
      {},
      {{"pipeline.device_mapping", "[0, [1, 2], 0]", "shared"}},
      {{"pipeline.device_mapping", "[1, [0, 3], 2]", "swapped"}},
  };
  CHECK(compare_engines(config, mappings, kMoreCounts) > 40);
}

// The comparisons above would pass if the fast path gave up and left every run to the event
// engine; the bench's sizes must stay on it (its bounds are in kTimedSpan and kWriteAhead).
TEST_CASE("the fast path follows every dependency-ordered schedule at large M without giving up") {
  int followed = 0;
  for (const auto& info : schedules::schedule_catalogue()) {
    for (const int stages : {4, 16, 64}) {
      auto json = varied_stages(stages, "gc200");
      json["hardware"]["ipus"] = 64;
      json["pipeline"]["pipeline_schedule"] = info.name;
      json["pipeline"]["gradient_accumulation_count"] = 64 * 40;
      if (info.name == "interleaved_1f1b") {  // four stages an IPU, stage k on IPU k mod n/4
        json["pipeline"]["device_mapping"] = nlohmann::json::array();
        for (int k = 0; k < stages; ++k)
          json["pipeline"]["device_mapping"].push_back(k % (stages / 4));
      }
      const auto spec = sim::build_run_spec(core::ConfigDocument::from_json(json, "large"));
      if (spec.schedule->step_based())
        continue;
      INFO(info.name << " with " << stages << " stages");
      const sim::CostModel cost = sim::build_cost_model(spec);
      const sim::ReplayOptions options{true, {}, {}};
      sim::detail::ReplayState state(spec, *spec.schedule, cost, options);
      CHECK(sim::detail::replay_in_program_order(state).has_value());
      ++followed;
    }
  }
  CHECK(followed == 12);
}

TEST_CASE(
    "each replay engine tells its progress once 65,536 more tasks have run, and no figure moves") {
  const auto config = core::ConfigDocument::load(
      std::string(IPUSIM_SOURCE_DIR) + "/configs/tf1_mnist_2ipu.json", {});
  // 8 tasks a micro-batch x 30,000: 240,000 tasks, past 65,536 three times. The BSP engine
  // (grouped), the fast path (1f1b) and the event engine (1f1b with an observer) each tell at
  // the end of the step, run of tasks or event that passes the count.
  for (const std::string schedule : {"grouped", "1f1b"}) {
    const auto spec = sim::build_run_spec(
        config.with_overrides({{"pipeline.pipeline_schedule", schedule, "schedule"},
                               {"pipeline.gradient_accumulation_count", "30000", "gac"}}));
    const sim::CostModel cost = sim::build_cost_model(spec);
    SilentObserver silent;
    for (const bool observed : {false, true}) {
      INFO(schedule << (observed ? " observed" : ""));
      std::vector<std::int64_t> told;
      sim::ReplayOptions options{true, {}, [&told](std::int64_t tasks) { told.push_back(tasks); }};
      if (observed)
        options.observers.push_back(&silent);
      const auto with = sim::replay(spec, cost, options);
      options.progress = {};
      require_same(with, sim::replay(spec, cost, options));
      REQUIRE(told.size() == 3);
      for (std::size_t i = 0; i < told.size(); ++i) {
        CHECK(told[i] >= std::int64_t(i + 1) * 65'536);
        CHECK(told[i] < std::int64_t(i + 1) * 65'536 + 8);
      }
    }
  }
}
