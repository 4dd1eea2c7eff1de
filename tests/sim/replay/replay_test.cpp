#include "sim/replay/replay.hpp"

#include <algorithm>
#include <catch2/catch.hpp>

#include "sim/core/config_file.hpp"
#include "sim/core/error.hpp"
#include "sim/report/report.hpp"

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
      CHECK(grouped.figures.pipeline_cycles == bsp_closed_form(n, m, 100, 230, 1));
      const auto interleaved = simulate(equal_stages(n, m, "interleaved", 100, 230), spec);
      CHECK(interleaved.figures.pipeline_cycles == bsp_closed_form(n, m, 100, 230, 2));
    }
  }
}

TEST_CASE("the N=2 M=8 grouped step with backward twice forward takes 2700 cycles") {
  sim::RunSpec spec;
  const auto report = simulate(equal_stages(2, 8, "grouped", 100, 200), spec);
  CHECK(report.figures.pipeline_cycles == 2700);
  CHECK(report.replay.phase_cycles[schedules::index(schedules::Phase::kRampUp)] ==
        500);  // steps 1-3: F, F F, F | B F
  CHECK(report.replay.phase_cycles[schedules::index(schedules::Phase::kMain)] == 1500);
  CHECK(report.replay.phase_cycles[schedules::index(schedules::Phase::kRampDown)] == 700);
}

TEST_CASE("sequential runs one IPU at a time: utilisation 1/N like sharding") {
  for (int n : {2, 3, 4}) {
    sim::RunSpec spec;
    const auto report = simulate(equal_stages(n, 6, "sequential", 100, 200), spec);
    CHECK(report.figures.pipeline_cycles == 6 * n * 300);
    for (const auto& ipu : report.replay.ipus) {
      CHECK(double(ipu.busy_in_phase[schedules::index(schedules::Phase::kMain)]) /
                double(report.figures.pipeline_cycles) ==
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
        CHECK(report.figures.pipeline_cycles == (m + p - 1) * 200);
        CHECK(report.figures.bubble_fraction == Approx(double(p - 1) / double(m + p - 1)));
      }
    }
  }
}

TEST_CASE("ramp overhead is the IPU time idle in the ramps, whatever the schedule's phases") {
  // 4 stages of 100 + 200 cycles, M = 32: the pipeline phases take (M + 3) x 300 cycles and
  // the ideal chip's weight update 1, 4 IPUs x 10,501 IPU-cycles a step.
  const double ipu_cycles = 4.0 * (35 * 300 + 1);
  sim::RunSpec spec;
  // Grouped: every idle IPU-cycle of the pipeline, 4 x 3 x 300, is in its ramps (its main phase
  // is of full steps): the bubble.
  const auto grouped = simulate(equal_stages(4, 32, "grouped", 100, 200), spec);
  REQUIRE(grouped.replay.step_cycles == 35 * 300 + 1);
  CHECK(grouped.figures.ramp_overhead == Approx(3600 / ipu_cycles));
  CHECK(grouped.figures.bubble_fraction == Approx(3600 / (4.0 * 35 * 300)));
  // GPipe: ramp-up lasts until IPU3 starts, 3 forwards, in which IPU k waits k of them; ramp-down
  // from IPU3's end, 3 backwards, in which IPU 3 - k waits 3 - k of them.
  const auto gpipe = simulate(equal_stages(4, 32, "gpipe", 100, 200), spec);
  REQUIRE(gpipe.replay.step_cycles == 35 * 300 + 1);
  CHECK(gpipe.figures.ramp_overhead == Approx((6 * 100 + 6 * 200) / ipu_cycles));
  CHECK(simulate(equal_stages(4, 32, "sequential", 100, 200), spec).figures.ramp_overhead == 0);
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
        CHECK(report.figures.bubble_ratio == Approx(double(p - 1) / double(v * m)));
      }
    }
  }
}

TEST_CASE("peak stash per IPU is the micro-batches live, 2(N-1-k)+1 grouped and N-k interleaved") {
  // graphcore-schedules.md, section 3: a FIFO of depth d keeps d buffers and its output, and
  // the last stage its one micro-batch as a plain copy. A dense layer of 4 units on 4 inputs
  // keeps its 4 inputs, 16 bytes per sample; the last stage's loss also keeps its 4
  // probabilities and a 4-byte label: 36 bytes.
  for (const auto& [schedule, multiplier] :
       std::vector<std::pair<std::string, int>>{{"grouped", 2}, {"interleaved", 1}}) {
    sim::RunSpec spec;
    const auto report = simulate(equal_stages(4, 8, schedule, 10, 20), spec);
    for (int k = 0; k < 3; ++k) {
      INFO(schedule << " IPU" << k);
      CHECK(report.replay.ipus[k].peak_stash_bytes == (multiplier * (3 - k) + 1) * 16);
    }
    CHECK(report.replay.ipus[3].peak_stash_bytes == 36);
  }
}

TEST_CASE("sequential keeps each stage's micro-batch until its backward") {
  // No FIFO: stage k holds its one micro-batch while the later stages run.
  sim::RunSpec spec;
  const auto report = simulate(equal_stages(4, 8, "sequential", 10, 20), spec);
  for (int k = 0; k < 3; ++k)
    CHECK(report.replay.ipus[k].peak_stash_bytes == 16);
  CHECK(report.replay.ipus[3].peak_stash_bytes == 36);
}

TEST_CASE("out of memory names every IPU over its capacity, the worst first") {
  // Stage 1 has a dense of 8 units: IPU1 holds more than IPU0 and is named first.
  auto config = equal_stages(2, 8, "grouped", 10, 20);
  config["model"]["layers"][1]["units"] = 8;
  config["hardware"]["memory_per_ipu"] = "100B";
  sim::RunSpec spec;
  CHECK_THROWS_WITH(
      simulate(config, spec),
      // IPU1: d1's 40 parameters of 4 bytes as weights and accumulators; its one micro-batch
      // between forward and backward: d1's 4 inputs, the loss's 8 probabilities and a 4-byte
      // label, 52 B; copy buffers of 4 activations and a label in and 4 gradients out; while
      // F1 s1 runs in step 2 (after the 10 cycles of F1 s0) the loss's one-hot of the 8 logits,
      // 32 B (d1's 8 outputs and the 4-byte loss are within the 52 B it holds).
      "out of memory on 2 IPUs, the worst first: IPU1 (physical IPU1) needs 440 B but has 100 B "
      "at step 2 (cycle 10). Largest consumers:\n"
      "  160 B  weights of d1\n"
      "  160 B  gradient accumulators of d1\n"
      "  52 B  stash of stage 1 (1 x 52 B)\n"
      "  36 B  inter-IPU copy buffers\n"
      "  32 B  activations of the running task\n"
      "In all: 160 B gradient accumulators, 160 B weights, 52 B stash, 36 B copy buffers, 32 B "
      "activations\n"
      // IPU0: 20 parameters as weights and accumulators, the same copy buffers, and a FIFO of
      // depth 2 with the micro-batch between forward and backward: 3 x d0's 4 inputs.
      "IPU0 (physical IPU0) needs 244 B but has 100 B at step 1 (cycle 0)\n"
      // Nothing recomputes, offloads or could shrink a micro-batch of 1.
      "What would help: recomputation (--set pipeline.recomputation_mode=auto), --set "
      "pipeline.offload_weight_update_variables=true, --set pipeline.offload_activations=true, "
      "more IPUs per replica (ipusim plan CONFIG --ipus-per-replica 4)");
}

TEST_CASE("out of memory on one IPU names it with its largest consumers at its peak") {
  auto config = equal_stages(2, 8, "grouped", 10, 20);
  config["hardware"]["memory_per_ipu"] = "246B";
  sim::RunSpec spec;
  // IPU0 needs 80 + 80 + 36 + 3 x 16 (a FIFO of depth 2 and the micro-batch between forward
  // and backward) = 244 B and fits; IPU1 needs 80 + 80 + 36 + 36 (d1's 4 inputs, the loss's 4
  // probabilities and label) + 16 (the loss's one-hot of 4 logits) = 248 B from its first task.
  CHECK_THROWS_WITH(simulate(config, spec),
                    "out of memory: IPU1 (physical IPU1) needs 248 B but has 246 B at step 2 "
                    "(cycle 10). Largest consumers:\n"
                    "  80 B  weights of d1\n"
                    "  80 B  gradient accumulators of d1\n"
                    "  36 B  inter-IPU copy buffers\n"
                    "  36 B  stash of stage 1 (1 x 36 B)\n"
                    "  16 B  activations of the running task\n"
                    "In all: 80 B gradient accumulators, 80 B weights, 36 B copy buffers, 36 B "
                    "stash, 16 B activations\n"
                    "What would help: recomputation (--set pipeline.recomputation_mode=auto), "
                    "--set pipeline.offload_weight_update_variables=true, --set "
                    "pipeline.offload_activations=true, more IPUs per replica (ipusim plan "
                    "CONFIG --ipus-per-replica 4)");
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
  CHECK(ipus[0].ipu == 1);
  CHECK(ipus[0].bytes == 248);  // 232 B and the loss's one-hot of 4 logits
  CHECK(ipus[1].ipu == 0);
  CHECK(ipus[1].bytes == 244);
  CHECK(report.figures.pipeline_cycles == bsp_closed_form(2, 8, 10, 20, 1));
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
  for (const std::string schedule : {"grouped", "interleaved", "1f1b", "gpipe"}) {
    double previous = 1.0;
    for (int gac : {8, 16, 32, 64, 128}) {
      std::vector<std::string> sets = {
          "pipeline.pipeline_schedule=" + schedule,
          "pipeline.gradient_accumulation_count=" + std::to_string(gac)};
      // GPipe's ramp-down grows with the micro-batches, so its share tends to about 8%: from
      // above when the step's fixed part is small, from below (rising) when the host call's
      // 450 µs a weight tensor makes it large. Without those it falls.
      if (schedule == "gpipe")
        sets.push_back("hardware.host_call.per_tensor=0s");
      sim::RunSpec spec;
      const auto report = run_shipped("configs/tf1_mnist_2ipu.json", sets, spec);
      INFO(schedule << " GAC " << gac);
      CHECK(report.figures.ramp_overhead < previous);
      previous = report.figures.ramp_overhead;
    }
  }
}

TEST_CASE("with backward twice forward grouped is faster than interleaved, which stashes less") {
  // BERT-Large's encoders cost about twice as much backward as forward, and its stages are
  // balanced, so compute rather than copies or host I/O sets the step time.
  // Interleaved refuses two stages on one IPU, so the MLM head, untied, joins the last stage.
  sim::RunSpec spec;
  std::vector<std::string> four_stages = {
      "pipeline.splits=[\"encoder4\", \"encoder11\", \"encoder18\"]",
      "pipeline.device_mapping=[0, 1, 2, 3]", "pipeline.gradient_accumulation_count=256",
      "/model/layers/27={\"id\": \"mlm_decoder\", \"type\": \"dense\", \"units\": 30522}"};
  // Interleaved has no recompute_and_backpropagate_interleaved: both recompute with auto. The
  // last stage, which TF never recomputes, then holds its 6 encoders' and the head's state
  // whole (1.1 GB on IPU3): this compares time and stash, on IPUs given room for it.
  four_stages.push_back("pipeline.recomputation_mode=\"auto\"");
  four_stages.push_back("hardware.memory_per_ipu=\"2GB\"");
  four_stages.push_back("pipeline.recompute_checkpoint_every_layer=false");
  auto interleaved_sets = four_stages;
  interleaved_sets.push_back("pipeline.pipeline_schedule=interleaved");
  const auto grouped = run_shipped("configs/bert_large_4ipu.json", four_stages, spec);
  const auto interleaved = run_shipped("configs/bert_large_4ipu.json", interleaved_sets, spec);
  CHECK(grouped.replay.step_cycles < interleaved.replay.step_cycles);
  // Stage 0 holds 2 x 3 + 1 micro-batches grouped and 3 + 1 interleaved.
  CHECK(interleaved.replay.ipus[0].peak_stash_bytes * 7 ==
        grouped.replay.ipus[0].peak_stash_bytes * 4);
}

TEST_CASE("sequential behaves like sharding: one IPU busy at a time, one micro-batch held") {
  sim::RunSpec spec;
  const auto report =
      run_shipped("configs/tf1_mnist_2ipu.json", {"pipeline.pipeline_schedule=sequential"}, spec);
  // Stage 0 keeps the inputs and outputs of its three dense layers for one micro-batch of 32.
  CHECK(report.replay.ipus[0].peak_stash_bytes == (784 + 256 + 256 + 128 + 128 + 64) * 4 * 32);
  std::int64_t busy = 0;
  for (const auto& ipu : report.replay.ipus)
    busy += ipu.busy_in_phase[schedules::index(schedules::Phase::kMain)];
  CHECK(busy <= report.figures.pipeline_cycles);  // never two IPUs computing at once
}

TEST_CASE("recomputation changes the stash to what each mode keeps, at the same FIFO depths") {
  // tf1 MLP stage 0 (flatten, dense256, dense128, dense64 with relu) on micro-batches of 32:
  // all activations keep the input and output of each dense: (784+256 + 256+128 + 128+64) x 4
  // bytes; recompute_then_backpropagate keeps the stage input, 784 x 4 bytes per sample.
  const std::int64_t all = (784 + 256 + 256 + 128 + 128 + 64) * 4 * 32;
  const std::int64_t inputs = 784 * 4 * 32;
  sim::RunSpec spec;
  // Stage 0 of two holds 2 x 1 + 1 micro-batches grouped, 1 + 1 interleaved.
  const auto none = run_shipped("configs/tf1_mnist_2ipu.json", {}, spec);
  CHECK(none.replay.ipus[0].peak_stash_bytes == 3 * all);
  const auto rtb = run_shipped("configs/tf1_mnist_2ipu.json",
                               {"pipeline.recomputation_mode=recompute_then_backpropagate"}, spec);
  CHECK(rtb.replay.ipus[0].peak_stash_bytes == 3 * inputs);
  const auto rtb_interleaved =
      run_shipped("configs/tf1_mnist_2ipu.json",
                  {"pipeline.recomputation_mode=recompute_then_backpropagate",
                   "pipeline.pipeline_schedule=interleaved"},
                  spec);
  CHECK(rtb_interleaved.replay.ipus[0].peak_stash_bytes == 2 * inputs);
  const auto rabi =
      run_shipped("configs/tf1_mnist_2ipu.json",
                  {"pipeline.recomputation_mode=recompute_and_backpropagate_interleaved"}, spec);
  CHECK(rabi.replay.ipus[0].peak_stash_bytes == 3 * inputs);
  const auto automatic =
      run_shipped("configs/tf1_mnist_2ipu.json", {"pipeline.recomputation_mode=auto"}, spec);
  CHECK(automatic.replay.ipus[0].peak_stash_bytes == 3 * inputs);
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
  CHECK(offloaded.replay.phase_cycles[schedules::index(schedules::Phase::kWeightUpdate)] -
            on_chip.replay.phase_cycles[schedules::index(schedules::Phase::kWeightUpdate)] ==
        2'566'400);
  CHECK(on_chip.replay.ipus[0].memory_at_peak.at(sim::MemoryCategory::kOptimizerState) ==
        1'283'200);
  CHECK(offloaded.replay.ipus[0].memory_at_peak.count(sim::MemoryCategory::kOptimizerState) == 0);
  CHECK(offloaded.replay.ipus[0].peak_memory_bytes ==
        on_chip.replay.ipus[0].peak_memory_bytes - 1'283'200);
}

TEST_CASE("replicas all-reduce their gradients in a ring over the rail links") {
  // 641,600 B of fp32 gradients per IPU in 2(R-1) steps of 1/R of them over 2 links.
  const std::map<int, std::int64_t> all_reduce = {
      {1, 0}, {2, 2 * (100 + 160'400)}, {4, 6 * (100 + 80'200)}};
  sim::RunSpec spec;
  auto config = linked_stages(2, 4, "grouped");
  const auto alone =
      simulate(config, spec).replay.phase_cycles[schedules::index(schedules::Phase::kWeightUpdate)];
  for (const auto& [replicas, cycles] : all_reduce) {
    config["pipeline"]["replication_factor"] = replicas;
    INFO(replicas << " replicas");
    CHECK(simulate(config, spec)
                  .replay.phase_cycles[schedules::index(schedules::Phase::kWeightUpdate)] -
              alone ==
          cycles);
  }
}

namespace {

// Two equal stages of profiled cycles on the ideal hardware at 1 GHz with a 16 MB/s link to
// streaming memory: stage 0's FIFO entry (d0's 4 fp32 inputs, 16 B) takes 1,000 cycles each way.
nlohmann::json offload_stages(const std::string& schedule, bool offload) {
  auto config = equal_stages(2, 4, schedule, 100, 200);
  config["hardware"]["clock"] = "1GHz";
  config["hardware"]["streaming_memory_bandwidth"] = "16MB/s";
  config["pipeline"]["offload_activations"] = offload;
  return config;
}

// Records the stash FIFOs' traffic with streaming memory.
struct StreamLog : sim::ReplayObserver {
  std::vector<sim::StreamSpan> streams;
  void on_stream(const sim::StreamSpan& span) override { streams.push_back(span); }
};

std::vector<sim::StreamSpan> stream_log(const nlohmann::json& config) {
  const auto spec = sim::build_run_spec(core::ConfigDocument::from_json(config, "test.json"));
  StreamLog log;
  sim::SimulateOptions options;
  options.observers = {&log};
  sim::simulate(spec, options);
  return log.streams;
}

}  // namespace

TEST_CASE("offloaded stash FIFOs leave IPU memory for streaming memory") {
  sim::RunSpec spec;
  const auto on_chip = simulate(offload_stages("grouped", false), spec);
  const auto offloaded = simulate(offload_stages("grouped", true), spec);
  // Grouped N=2: stage 0's FIFO holds 2(N-1) = 2 entries of 16 B and its output one more,
  // which stays on chip (TF's FifoOp copies the buffer to it); the last stage has no FIFO.
  CHECK(on_chip.replay.ipus[0].peak_stash_bytes == 48);
  CHECK(on_chip.replay.ipus[0].streaming_memory.empty());
  CHECK(offloaded.replay.ipus[0].peak_stash_bytes == 16);
  CHECK(offloaded.replay.ipus[0].memory_at_peak.at(sim::MemoryCategory::kStash) == 16);
  CHECK(offloaded.replay.ipus[0].peak_memory_bytes ==
        on_chip.replay.ipus[0].peak_memory_bytes - 32);
  CHECK(offloaded.replay.ipus[0].streaming_memory ==
        sim::MemoryByCategory{{sim::MemoryCategory::kStash, 32}});
  CHECK(offloaded.replay.ipus[1].streaming_memory.empty());
}

// Grouped N=2 M=4 runs 8 steps: IPU0 F1-F3, B1 F4, B2, B3, B4, idle; IPU1 idle, F1, B1 F2,
// B2 F3, B3 F4, B4, idle, idle. With F=100 and B=200 the steps cost 100, 100, 300, 300, 300,
// 200, 200, 0: 1,500 cycles. Stage 0's FIFO runs with F0 in the 4 ramp-up steps and in every
// step of the ramp-down, and each run reads an entry back and writes one out: IPU0 gains
// 2,000 cycles in all 8 steps, which then cost 2,100, 2,100, 2,100, 2,300, 2,200, 2,200,
// 2,200 and 2,000: 17,200 cycles.
TEST_CASE("grouped streams stage 0's FIFO in all 8 steps and each step waits for it") {
  sim::RunSpec spec;
  const auto on_chip = simulate(offload_stages("grouped", false), spec);
  const auto offloaded = simulate(offload_stages("grouped", true), spec);
  CHECK(on_chip.figures.pipeline_cycles == 1'500);
  CHECK(offloaded.figures.pipeline_cycles == 17'200);
  CHECK(offloaded.replay.ipus[0].streaming_bytes == 8 * 2 * 16);
  CHECK(offloaded.replay.ipus[0].streaming_busy_cycles == 8 * 2 * 1'000);
  CHECK(offloaded.replay.ipus[1].streaming_bytes == 0);
  CHECK(on_chip.replay.ipus[0].streaming_bytes == 0);

  const auto streams = stream_log(offload_stages("grouped", true));
  REQUIRE(streams.size() == 16);
  for (std::size_t i = 0; i < streams.size(); ++i) {
    INFO("stream " << i);
    CHECK(streams[i].ipu == 0);
    CHECK(streams[i].stage == 0);
    CHECK(streams[i].step == std::int64_t(i / 2));
    CHECK(streams[i].bytes == 16);
    CHECK(streams[i].kind ==
          (i % 2 == 0 ? sim::StreamSpan::Kind::kStashRead : sim::StreamSpan::Kind::kStashWrite));
    CHECK((streams[i].end - streams[i].start).count == 1'000);
  }
  // The FIFO runs after the step's stage programs: step 4 starts at 2,100 x 3 = 6,300 and
  // runs B1 and F4 (300 cycles) before the read.
  CHECK(streams[6].start.count == 6'600);
}

namespace {

// Records the compute tasks and the FIFO traffic of one run.
struct TaskAndStreamLog : sim::ReplayObserver {
  std::vector<sim::TaskSpan> tasks;
  std::vector<sim::StreamSpan> streams;
  void on_task(const sim::TaskSpan& span) override { tasks.push_back(span); }
  void on_stream(const sim::StreamSpan& span) override { streams.push_back(span); }
};

}  // namespace

// recompute_and_backpropagate_interleaved lists R_k before B_k in a step; the FIFO still runs
// after the stage programs (F and B), so each read starts when IPU0's last F or B of its step
// ends, and the recomputation runs before both.
TEST_CASE("offloaded FIFOs run after the stage programs even where recomputation comes first") {
  auto config = offload_stages("grouped", true);
  config["pipeline"]["recomputation_mode"] = "recompute_and_backpropagate_interleaved";
  const auto spec = sim::build_run_spec(core::ConfigDocument::from_json(config, "test.json"));
  TaskAndStreamLog log;
  sim::SimulateOptions options;
  options.observers = {&log};
  sim::simulate(spec, options);
  REQUIRE_FALSE(log.streams.empty());
  for (const auto& stream : log.streams) {
    if (stream.kind != sim::StreamSpan::Kind::kStashRead)
      continue;
    core::Cycles programs_end{-1};
    for (const auto& task : log.tasks) {
      if (task.task.ipu != 0 || task.task.step != stream.step)
        continue;
      if (task.task.op == schedules::Op::kRecompute)
        CHECK(task.end <= stream.start);
      else if (schedules::is_compute(task.task.op))
        programs_end = std::max(programs_end, task.end);
    }
    INFO("step " << stream.step);
    if (programs_end.count >= 0)
      CHECK(stream.start == programs_end);
  }
}

// Interleaved N=2 M=4 runs 12 steps; stage 0's forward slots are steps 1, 3, ..., 11. F0 runs
// in 1, 3, 5 and 7, and the FIFO (depth N-1 = 1) runs in all six slots. The steps cost 100,
// 100, then 200 each up to step 10, then 0 twice: 1,800 cycles. With the 2,000 cycles of
// streaming on IPU0, steps 1, 3, 5 and 7 cost 2,100 and steps 9 and 11 cost 2,000: 13,300.
TEST_CASE("interleaved streams stage 0's FIFO in its six forward slots") {
  sim::RunSpec spec;
  const auto on_chip = simulate(offload_stages("interleaved", false), spec);
  const auto offloaded = simulate(offload_stages("interleaved", true), spec);
  CHECK(on_chip.figures.pipeline_cycles == 1'800);
  CHECK(offloaded.figures.pipeline_cycles == 13'300);
  CHECK(offloaded.replay.ipus[0].streaming_memory.at(sim::MemoryCategory::kStash) == 16);
  CHECK(offloaded.replay.ipus[0].streaming_bytes == 6 * 2 * 16);
  std::vector<std::int64_t> steps;
  for (const auto& stream : stream_log(offload_stages("interleaved", true))) {
    if (stream.kind == sim::StreamSpan::Kind::kStashRead)
      steps.push_back(stream.step + 1);
  }
  CHECK(steps == std::vector<std::int64_t>{1, 3, 5, 7, 9, 11});
}

// tf1's stage 0 (flatten, dense256, dense128, dense64) on micro-batches of 32 stashes the
// input and output of each dense, (784+256 + 256+128 + 128+64) x 4 x 32 = 206,848 B, or only
// the stage input under recomputation, 784 x 4 x 32 = 100,352 B. Grouped (N=2, M=16) runs
// stage 0's FIFO M + 2N = 20 times, interleaved M + N = 18 times; each run moves an entry each
// way.
TEST_CASE("offloaded FIFOs move what each recomputation mode stashes") {
  const std::int64_t all = (784 + 256 + 256 + 128 + 128 + 64) * 4 * 32;
  const std::int64_t inputs = 784 * 4 * 32;
  const std::vector<std::tuple<std::string, std::string, std::int64_t, std::int64_t>> cases = {
      {"grouped", "none", 2 * all, 20 * 2 * all},
      {"grouped", "recompute_then_backpropagate", 2 * inputs, 20 * 2 * inputs},
      {"grouped", "recompute_and_backpropagate_interleaved", 2 * inputs, 20 * 2 * inputs},
      {"interleaved", "recompute_then_backpropagate", inputs, 18 * 2 * inputs}};
  for (const auto& [schedule, mode, resident, moved] : cases) {
    const std::int64_t depth = schedule == "grouped" ? 2 : 1;
    sim::RunSpec spec;
    const auto report =
        run_shipped("configs/tf1_mnist_2ipu.json",
                    {"pipeline.offload_activations=true", "pipeline.pipeline_schedule=" + schedule,
                     "pipeline.recomputation_mode=" + mode},
                    spec);
    INFO(schedule << " " << mode);
    CHECK(report.replay.ipus[0].peak_stash_bytes == resident / depth);  // the FIFO's output
    CHECK(report.replay.ipus[0].streaming_memory.at(sim::MemoryCategory::kStash) == resident);
    CHECK(report.replay.ipus[0].streaming_bytes == moved);
  }
}

TEST_CASE("BERT with offloaded activations keeps one micro-batch a stage on chip, takes longer") {
  sim::RunSpec spec;
  const auto on_chip = run_shipped("configs/bert_large_4ipu.json", {}, spec);
  const auto offloaded =
      run_shipped("configs/bert_large_4ipu.json", {"pipeline.offload_activations=true"}, spec);
  for (int ipu = 0; ipu < 4; ++ipu) {
    INFO("IPU" << ipu);
    const auto& before = on_chip.replay.ipus[ipu];
    const auto& after = offloaded.replay.ipus[ipu];
    // What stays on chip is each stage's FIFO output (or the last stage's plain copy).
    CHECK(after.peak_stash_bytes > 0);
    CHECK(after.peak_stash_bytes < before.peak_stash_bytes);
    CHECK(after.memory_at_peak.at(sim::MemoryCategory::kStash) == after.peak_stash_bytes);
    // The FIFOs' buffers are allocated for the whole program: the peak falls by exactly their
    // bytes, which now sit in streaming memory.
    const std::int64_t fifos = before.peak_stash_bytes - after.peak_stash_bytes;
    CHECK(after.peak_memory_bytes == before.peak_memory_bytes - fifos);
    CHECK((after.streaming_memory.count(sim::MemoryCategory::kStash)
               ? after.streaming_memory.at(sim::MemoryCategory::kStash)
               : 0) == fifos);
  }
  CHECK(on_chip.stash_depth.back() == 0);  // the last stage keeps no FIFO
  CHECK(offloaded.replay.step_cycles > on_chip.replay.step_cycles);
}

namespace {
std::string config_error(const nlohmann::json& config) {
  try {
    sim::build_run_spec(core::ConfigDocument::from_json(config, "test.json"));
  } catch (const core::ConfigError& error) {
    return error.what();
  }
  return "";
}
}  // namespace

TEST_CASE("offload_activations is refused where there is no stash FIFO to offload") {
  CHECK(config_error(offload_stages("1f1b", true)) ==
        "test.json: at /pipeline/offload_activations: offload_activations moves Graphcore's "
        "stash FIFOs to streaming memory, and the 1f1b schedule has none (its stash is held in "
        "flight): use grouped or interleaved");
  CHECK(config_error(offload_stages("sequential", true)) ==
        "test.json: at /pipeline/offload_activations: offload_activations has nothing to move: "
        "the sequential schedule keeps no stash FIFOs");
  auto single = equal_stages(1, 4, "grouped", 100, 200);
  single["pipeline"]["offload_activations"] = true;
  CHECK(config_error(single) ==
        "test.json: at /pipeline/offload_activations: offload_activations has nothing to move: "
        "a single stage keeps no stash FIFO");
  auto inference = offload_stages("grouped", true);
  inference["pipeline"]["training"] = false;
  CHECK(config_error(inference) ==
        "test.json: at /pipeline/offload_activations: offload_activations has nothing to move: "
        "an inference pipeline keeps no stash");
  CHECK(config_error(offload_stages("1f1b", false)).empty());
}
