#include "sim/replay.hpp"

#include <algorithm>
#include <catch2/catch.hpp>

#include "sim/core/config_file.hpp"
#include "sim/report.hpp"

using namespace ipusim;

namespace {

// N equal stages of one dense layer each with profiled cycles, on the ideal hardware, so that
// step times follow the schedules' closed forms exactly.
nlohmann::json equal_stages(int stages, std::int64_t microbatches, const std::string& schedule,
                            std::int64_t forward, std::int64_t backward) {
  nlohmann::json layers = nlohmann::json::array();
  nlohmann::json splits = nlohmann::json::array();
  for (int k = 0; k < stages; ++k) {
    const std::string id = "d" + std::to_string(k);
    layers.push_back({{"id", id},
                      {"type", "dense"},
                      {"units", 4},
                      {"cycles", {{"forward", forward}, {"backward", backward}}}});
    if (k > 0)
      splits.push_back(id);
  }
  layers.push_back({{"id", "loss"},
                    {"type", "softmax_cross_entropy"},
                    {"cycles", {{"forward", 0}, {"backward", 0}}}});
  return {{"model", {{"name", "equal"}, {"input", {{"shape", {4}}}}, {"layers", layers}}},
          {"pipeline",
           {{"splits", splits},
            {"pipeline_schedule", schedule},
            {"gradient_accumulation_count", microbatches},
            {"relaxed_divisibility", true}}},
          {"hardware", {{"preset", "ideal"}}}};
}

sim::RunReport simulate(const nlohmann::json& config, sim::RunSpec& spec) {
  spec = sim::build_run_spec(core::ConfigDocument::from_json(config, "test.json"));
  return sim::simulate(spec, {});
}

// Graphcore's step schedules: each step costs the largest work of any IPU in it.
std::int64_t bsp_closed_form(int n, std::int64_t m, std::int64_t f, std::int64_t b, int slope) {
  const std::int64_t steps = slope * m + 2 * n;
  std::int64_t total = 0;
  for (std::int64_t t = 0; t < steps; ++t) {
    std::int64_t longest = 0;
    for (int k = 0; k < n; ++k) {
      auto runs = [&](std::int64_t s) {
        const std::int64_t offset = t - s;
        return offset >= 0 && offset % slope == 0 && offset / slope < m;
      };
      longest = std::max(longest, (runs(k) ? f : 0) + (runs(2 * n - 1 - k) ? b : 0));
    }
    total += longest;
  }
  return total;
}

}  // namespace

TEST_CASE("grouped and interleaved pipeline times equal the step-by-step closed forms") {
  for (int n : {1, 2, 3, 4, 6}) {
    for (std::int64_t m : {1, 2, 7, 8, 16, 33}) {
      sim::RunSpec spec;
      const auto grouped = simulate(equal_stages(n, m, "grouped", 100, 230), spec);
      CHECK(grouped.pipeline_cycles() == bsp_closed_form(n, m, 100, 230, 1));
      const auto interleaved = simulate(equal_stages(n, m, "interleaved", 100, 230), spec);
      CHECK(interleaved.pipeline_cycles() == bsp_closed_form(n, m, 100, 230, 2));
    }
  }
}

TEST_CASE("the N=2 M=8 grouped step with backward twice forward takes 2700 cycles") {
  sim::RunSpec spec;
  const auto report = simulate(equal_stages(2, 8, "grouped", 100, 200), spec);
  CHECK(report.pipeline_cycles() == 2700);
  CHECK(report.replay.phase_cycles[sim::kRampUp] == 500);  // steps 1-3: F, F F, F | B F
  CHECK(report.replay.phase_cycles[sim::kMain] == 1500);
  CHECK(report.replay.phase_cycles[sim::kRampDown] == 700);
}

TEST_CASE("sequential runs one IPU at a time: utilisation 1/N like sharding") {
  for (int n : {2, 3, 4}) {
    sim::RunSpec spec;
    const auto report = simulate(equal_stages(n, 6, "sequential", 100, 200), spec);
    CHECK(report.pipeline_cycles() == 6 * n * 300);
    for (const auto& ipu : report.replay.ipus) {
      CHECK(double(ipu.busy_in_phase[sim::kMain]) / double(report.pipeline_cycles()) ==
            Approx(1.0 / n));
    }
  }
}

TEST_CASE("gpipe and 1f1b bubbles are (p-1)/(m+p-1) for equal stages") {
  for (const char* schedule : {"gpipe", "1f1b"}) {
    for (int p : {2, 3, 4, 8}) {
      for (std::int64_t m : {1, 4, 8, 32}) {
        sim::RunSpec spec;
        const auto report = simulate(equal_stages(p, m, schedule, 100, 100), spec);
        INFO(schedule << " p=" << p << " m=" << m);
        CHECK(report.pipeline_cycles() == (m + p - 1) * 200);
        CHECK(report.bubble_fraction() == Approx(double(p - 1) / double(m + p - 1)));
      }
    }
  }
}

TEST_CASE("interleaved 1f1b's bubble over busy time is (p-1)/(v m)") {
  for (int p : {2, 4}) {
    for (int v : {2, 3}) {
      for (std::int64_t m : {4, 8, 16}) {
        auto config = equal_stages(p * v, m, "interleaved_1f1b", 100, 100);
        nlohmann::json mapping = nlohmann::json::array();
        for (int k = 0; k < p * v; ++k)
          mapping.push_back(k % p);
        config["pipeline"]["device_mapping"] = mapping;
        sim::RunSpec spec;
        const auto report = simulate(config, spec);
        INFO("p=" << p << " v=" << v << " m=" << m);
        CHECK(report.bubble_ratio() == Approx(double(p - 1) / double(v * m)));
      }
    }
  }
}

TEST_CASE("peak stash per IPU follows the FIFO depths 2(N-1-k) grouped and N-1-k interleaved") {
  // A dense layer of 4 units on 4 inputs keeps its 4 inputs: 16 bytes per sample.
  for (const auto& [schedule, multiplier] :
       std::vector<std::pair<std::string, int>>{{"grouped", 2}, {"interleaved", 1}}) {
    sim::RunSpec spec;
    const auto report = simulate(equal_stages(4, 8, schedule, 10, 20), spec);
    for (int k = 0; k < 4; ++k) {
      INFO(schedule << " IPU" << k);
      CHECK(report.replay.ipus[k].peak_stash_bytes == multiplier * (3 - k) * 16);
    }
  }
}

TEST_CASE("sequential keeps no stash") {
  sim::RunSpec spec;
  const auto report = simulate(equal_stages(4, 8, "sequential", 10, 20), spec);
  for (const auto& ipu : report.replay.ipus)
    CHECK(ipu.peak_stash_bytes == 0);
}

TEST_CASE("out of memory names every IPU over its capacity, the worst first") {
  // Stage 1 has a dense of 8 units: IPU1 holds more than IPU0 and is named first.
  auto config = equal_stages(2, 8, "grouped", 10, 20);
  config["model"]["layers"][1]["units"] = 8;
  config["hardware"]["memory_per_ipu"] = "100B";
  sim::RunSpec spec;
  CHECK_THROWS_WITH(
      simulate(config, spec),
      // IPU1: d1's 40 parameters of 4 bytes as weights and accumulators; copy buffers of 4
      // activations and a label in and 4 gradients out; while F1 s1 runs in step 2 (after the
      // 10 cycles of F1 s0) d1's 8 outputs and the 4-byte loss.
      "out of memory on 2 IPUs, the worst first: IPU1 (physical IPU1) needs 392 B but has 100 B "
      "at step 2 (cycle 10). Largest consumers:\n"
      "  160 B  weights of d1\n"
      "  160 B  gradient accumulators of d1\n"
      "  36 B  inter-IPU copy buffers\n"
      "  36 B  activations of the running task\n"
      // IPU0: 20 parameters as weights and accumulators, the same copy buffers, two FIFO entries
      // of d0's 4 inputs and, from the first task on, d0's 4 outputs.
      "IPU0 (physical IPU0) needs 244 B but has 100 B at step 1 (cycle 0)");
}

TEST_CASE("out of memory on one IPU names it with its largest consumers at its peak") {
  auto config = equal_stages(2, 8, "grouped", 10, 20);
  config["hardware"]["memory_per_ipu"] = "230B";
  sim::RunSpec spec;
  // IPU1 needs 80 + 80 + 36 + 20 = 216 B and fits; IPU0 needs 228 B before any task runs.
  CHECK_THROWS_WITH(simulate(config, spec),
                    "out of memory: IPU0 (physical IPU0) needs 244 B but has 230 B at step 1 "
                    "(cycle 0). Largest consumers:\n"
                    "  80 B  weights of d0\n"
                    "  80 B  gradient accumulators of d0\n"
                    "  36 B  inter-IPU copy buffers\n"
                    "  32 B  stash FIFO of stage 0 (2 x 16 B)\n"
                    "  16 B  activations of the running task");
}

TEST_CASE("with allow_oom the report keeps every overflow and the run finishes") {
  auto config = equal_stages(2, 8, "grouped", 10, 20);
  config["hardware"]["memory_per_ipu"] = "100B";
  const auto spec = sim::build_run_spec(core::ConfigDocument::from_json(config, "test.json"));
  sim::SimulateOptions options;
  options.allow_oom = true;
  const auto report = sim::simulate(spec, options);
  REQUIRE(report.replay.out_of_memory);
  const auto& ipus = report.replay.out_of_memory->ipus;
  REQUIRE(ipus.size() == 2);
  CHECK(ipus[0].ipu == 0);
  CHECK(ipus[0].bytes == 244);
  CHECK(ipus[1].ipu == 1);
  CHECK(ipus[1].bytes == 216);
  CHECK(report.pipeline_cycles() == bsp_closed_form(2, 8, 10, 20, 1));
}

namespace {
sim::RunReport run_shipped(const std::string& config, const std::vector<std::string>& sets,
                           sim::RunSpec& spec) {
  std::vector<core::Override> overrides;
  for (const auto& set : sets)
    overrides.push_back(core::parse_set_argument(set));
  spec = sim::load_run_spec(config, overrides);
  return sim::simulate(spec, {});
}
}  // namespace

TEST_CASE("on the default config ramp overhead falls as gradient accumulation grows") {
  for (const char* schedule : {"grouped", "interleaved", "1f1b", "gpipe"}) {
    double previous = 1.0;
    for (int gac : {8, 16, 32, 64, 128}) {
      sim::RunSpec spec;
      const auto report =
          run_shipped("configs/tf1_mnist_2ipu.json",
                      {"pipeline.pipeline_schedule=" + std::string(schedule),
                       "pipeline.gradient_accumulation_count=" + std::to_string(gac)},
                      spec);
      INFO(schedule << " GAC " << gac);
      CHECK(report.ramp_overhead() < previous);
      previous = report.ramp_overhead();
    }
  }
}

TEST_CASE("with backward twice forward grouped is faster than interleaved, which stashes less") {
  // BERT-Large's encoders cost about twice as much backward as forward, and its stages are
  // balanced, so compute rather than copies or host I/O sets the step time.
  sim::RunSpec spec;
  // Without recomputation its grouped stash does not fit IPU0, so it keeps the config's auto.
  const auto grouped = run_shipped("configs/bert_large_4ipu.json", {}, spec);
  const auto interleaved =
      run_shipped("configs/bert_large_4ipu.json", {"pipeline.pipeline_schedule=interleaved"}, spec);
  CHECK(grouped.replay.step_cycles < interleaved.replay.step_cycles);
  CHECK(interleaved.replay.ipus[0].peak_stash_bytes < grouped.replay.ipus[0].peak_stash_bytes);
  CHECK(interleaved.replay.ipus[0].peak_stash_bytes * 2 == grouped.replay.ipus[0].peak_stash_bytes);
}

TEST_CASE("sequential behaves like sharding: one IPU busy at a time and no stash") {
  sim::RunSpec spec;
  const auto report =
      run_shipped("configs/tf1_mnist_2ipu.json", {"pipeline.pipeline_schedule=sequential"}, spec);
  std::int64_t busy = 0;
  for (const auto& ipu : report.replay.ipus) {
    busy += ipu.busy_in_phase[sim::kMain];
    CHECK(ipu.peak_stash_bytes == 0);
  }
  CHECK(busy <= report.pipeline_cycles());  // never two IPUs computing at once
}

TEST_CASE("recomputation changes the stash to what each mode keeps, at the same FIFO depths") {
  // tf1 MLP stage 0 (flatten, dense256, dense128, dense64 with relu) on micro-batches of 32:
  // all activations keep the input and output of each dense: (784+256 + 256+128 + 128+64) x 4
  // bytes; recompute_then_backpropagate keeps the stage input, 784 x 4 bytes per sample.
  const std::int64_t all = (784 + 256 + 256 + 128 + 128 + 64) * 4 * 32;
  const std::int64_t inputs = 784 * 4 * 32;
  sim::RunSpec spec;
  const auto none = run_shipped("configs/tf1_mnist_2ipu.json", {}, spec);
  CHECK(none.replay.ipus[0].peak_stash_bytes == 2 * all);
  const auto rtb = run_shipped("configs/tf1_mnist_2ipu.json",
                               {"pipeline.recomputation_mode=recompute_then_backpropagate"}, spec);
  CHECK(rtb.replay.ipus[0].peak_stash_bytes == 2 * inputs);
  const auto rtb_interleaved =
      run_shipped("configs/tf1_mnist_2ipu.json",
                  {"pipeline.recomputation_mode=recompute_then_backpropagate",
                   "pipeline.pipeline_schedule=interleaved"},
                  spec);
  CHECK(rtb_interleaved.replay.ipus[0].peak_stash_bytes == inputs);
  const auto rabi =
      run_shipped("configs/tf1_mnist_2ipu.json",
                  {"pipeline.recomputation_mode=recompute_and_backpropagate_interleaved"}, spec);
  CHECK(rabi.replay.ipus[0].peak_stash_bytes == 2 * inputs);
  const auto automatic =
      run_shipped("configs/tf1_mnist_2ipu.json", {"pipeline.recomputation_mode=auto"}, spec);
  CHECK(automatic.replay.ipus[0].peak_stash_bytes == 2 * inputs);
}

TEST_CASE("the same config gives a byte-identical JSON report") {
  sim::RunSpec spec;
  const auto first = sim::to_json(run_shipped("configs/bert_large_4ipu.json", {}, spec)).dump(2);
  const auto second = sim::to_json(run_shipped("configs/bert_large_4ipu.json", {}, spec)).dump(2);
  CHECK(first == second);
}

namespace {

// Dense stages of 400 units (160,400 parameters each) on a 1 GHz clock with 1 GB/s per link
// and 100 cycles of latency, so that every transfer's cycles equal its bytes plus latency.
nlohmann::json linked_stages(int stages, std::int64_t microbatches, const std::string& schedule) {
  auto config = equal_stages(stages, microbatches, schedule, 1000, 2000);
  for (auto& layer : config["model"]["layers"]) {
    if (layer["type"] == "dense")
      layer["units"] = 400;
  }
  config["model"]["input"]["shape"] = {400};
  config["hardware"] = {{"preset", "ideal"},
                        {"ipus", 8},
                        {"clock", "1 GHz"},
                        {"ipu_link", {{"bandwidth", "1 GB/s"}, {"latency_cycles", 100}}}};
  return config;
}

// The busy cycles of each link used, keyed "from->to" in physical IPUs.
std::map<std::string, std::int64_t> link_busy(const sim::RunReport& report) {
  std::map<std::string, std::int64_t> busy;
  for (const auto& link : report.replay.links)
    busy[std::to_string(link.from_physical) + "->" + std::to_string(link.to_physical)] =
        link.busy_cycles;
  return busy;
}

// Records the copies the replay sends, to check when they crossed each link.
struct TransferLog : sim::ReplayObserver {
  std::vector<sim::TransferSpan> transfers;
  void on_transfer(const sim::TransferSpan& span) override { transfers.push_back(span); }
};

}  // namespace

// An activation copy carries 400 floats and a label (1,604 B), a gradient 1,600 B. A copy
// costs 100 cycles of latency plus its bytes over the links joining the two IPUs: 4 in a
// pair, 2 up or down a rail, 1 across.
TEST_CASE("copies cross the ladder links that the selection order puts between stages") {
  const std::map<std::string, std::map<std::string, std::int64_t>> expected = {
      // physical IPUs 0,1,3,2: pair, rail, pair
      {"snake",
       {{"0->1", 4 * 501},
        {"1->0", 4 * 500},
        {"1->3", 4 * 902},
        {"3->1", 4 * 900},
        {"3->2", 4 * 501},
        {"2->3", 4 * 500}}},
      // 0,2,3,1: rail, pair, rail
      {"hoof",
       {{"0->2", 4 * 902},
        {"2->0", 4 * 900},
        {"2->3", 4 * 501},
        {"3->2", 4 * 500},
        {"3->1", 4 * 902},
        {"1->3", 4 * 900}}},
      // 0,1,2,3: pair, the single cross link, pair
      {"zigzag",
       {{"0->1", 4 * 501},
        {"1->0", 4 * 500},
        {"1->2", 4 * 1704},
        {"2->1", 4 * 1700},
        {"2->3", 4 * 501},
        {"3->2", 4 * 500}}},
  };
  for (const auto& [order, busy] : expected) {
    auto config = linked_stages(4, 4, "1f1b");
    config["hardware"]["selection_order"] = order;
    sim::RunSpec spec;
    INFO(order);
    CHECK(link_busy(simulate(config, spec)) == busy);
  }
}

TEST_CASE("a copy between IPUs that are not neighbours is routed over the rungs between them") {
  auto config = linked_stages(2, 4, "1f1b");
  config["pipeline"]["device_mapping"] = {0, 5};
  config["hardware"]["selection_order"] = "zigzag";
  sim::RunSpec spec;
  // Rungs 0 to 2: three hops of latency over the rails' 2 links.
  CHECK(link_busy(simulate(config, spec)) ==
        std::map<std::string, std::int64_t>{{"0->5", 4 * (300 + 802)}, {"5->0", 4 * 1100}});
}

TEST_CASE("copies that meet on a busy link wait for it: transfers share a link in turn") {
  // Forwards of 1,000 cycles feed copies of 16,004 B over the pair's 4 links, 100 + 4,001
  // cycles each: from the second copy on, each waits for the one before.
  auto config = linked_stages(2, 4, "gpipe");
  config["model"]["layers"][0]["units"] = 4000;
  sim::RunSpec spec;
  spec = sim::build_run_spec(core::ConfigDocument::from_json(config, "test.json"));
  TransferLog log;
  sim::SimulateOptions options;
  options.observers = {&log};
  sim::simulate(spec, options);
  std::vector<std::int64_t> activation_ends;
  for (const auto& transfer : log.transfers) {
    if (transfer.task.copy == schedules::CopyKind::kActivation)
      activation_ends.push_back(transfer.end.count);
  }
  CHECK(activation_ends == std::vector<std::int64_t>{5101, 9202, 13303, 17404});
}

TEST_CASE("offloaded optimizer state streams in and out during the weight update") {
  auto config = linked_stages(2, 4, "grouped");
  config["pipeline"]["optimizer"] = {{"type", "adam"}, {"learning_rate", 0.001}};
  config["hardware"]["streaming_memory_bandwidth"] = "1 GB/s";
  sim::RunSpec spec;
  const auto on_chip = simulate(config, spec);
  config["pipeline"]["offload_weight_update_variables"] = true;
  const auto offloaded = simulate(config, spec);
  // Adam's two fp32 moments of 160,400 parameters, read and written back: 2,566,400 B.
  CHECK(offloaded.replay.phase_cycles[sim::kWeightUpdate] -
            on_chip.replay.phase_cycles[sim::kWeightUpdate] ==
        2'566'400);
  CHECK(on_chip.replay.ipus[0].memory_at_peak.at("optimizer_state") == 1'283'200);
  CHECK(offloaded.replay.ipus[0].memory_at_peak.count("optimizer_state") == 0);
  CHECK(offloaded.replay.ipus[0].peak_memory_bytes ==
        on_chip.replay.ipus[0].peak_memory_bytes - 1'283'200);
}

TEST_CASE("replicas all-reduce their gradients in a ring over the rail links") {
  // 641,600 B of fp32 gradients per IPU in 2(R-1) steps of 1/R of them over 2 links.
  const std::map<int, std::int64_t> all_reduce = {
      {1, 0}, {2, 2 * (100 + 160'400)}, {4, 6 * (100 + 80'200)}};
  sim::RunSpec spec;
  auto config = linked_stages(2, 4, "grouped");
  const auto alone = simulate(config, spec).replay.phase_cycles[sim::kWeightUpdate];
  for (const auto& [replicas, cycles] : all_reduce) {
    config["pipeline"]["replication_factor"] = replicas;
    INFO(replicas << " replicas");
    CHECK(simulate(config, spec).replay.phase_cycles[sim::kWeightUpdate] - alone == cycles);
  }
}
