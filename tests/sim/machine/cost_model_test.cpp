#include "sim/machine/cost_model.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>

#include "sim/replay/task_costs.hpp"
#include "sim/report/report.hpp"

using namespace ipusim;

namespace {

sim::RunSpec load(const std::string& path, const std::vector<std::string>& sets = {}) {
  std::vector<core::Override> overrides;
  for (const auto& set : sets)
    overrides.push_back(core::parse_set_argument(set));
  return sim::load_run_spec(path, overrides);
}

template <typename Field>
std::int64_t sum_of(const std::vector<sim::OperationCost>& ops, Field field) {
  return std::accumulate(
      ops.begin(), ops.end(), std::int64_t{0},
      [&](std::int64_t total, const sim::OperationCost& op) { return total + field(op); });
}

}  // namespace

TEST_CASE("the operations of every BERT-Large sub-stage sum to its cycles exactly") {
  const auto spec = load(
      "configs/bert_large_4ipu.json",
      {"pipeline.recomputation_mode=\"auto\"", "pipeline.recompute_checkpoint_every_layer=false"});
  const auto cost = sim::build_cost_model(spec);
  for (std::size_t s = 0; s < cost.stages.size(); ++s) {
    for (const auto& sub : cost.stages[s]) {
      REQUIRE_FALSE(sub.operations.empty());
      CHECK(sum_of(sub.operations, [](const auto& op) { return op.forward.cycles; }) ==
            sub.forward_cycles);
      CHECK(sum_of(sub.operations, [](const auto& op) { return op.backward.cycles; }) ==
            sub.backward_cycles);
      // Recomputation (auto: RecomputeThenBackpropagate) reruns every stage but the last.
      const bool last = s + 1 == cost.stages.size();
      CHECK(sum_of(sub.operations, [](const auto& op) { return op.recompute_cycles; }) ==
            (last ? 0 : sub.forward_cycles));
    }
  }
}

TEST_CASE("a transformer encoder lowers to the eleven operations Poplar runs") {
  const auto spec = load("configs/bert_large_4ipu.json");
  const auto cost = sim::build_cost_model(spec);
  std::vector<std::string> names;
  std::vector<std::string> classes;
  for (const auto& op : cost.stages[1][0].operations) {
    if (op.layer == "encoder5") {
      names.push_back(op.name);
      classes.emplace_back(models::to_string(*op.op_class));
    }
  }
  CHECK(names == std::vector<std::string>{"qkv_projection", "attention_scores", "softmax",
                                          "attention_dropout", "context", "output_projection",
                                          "add_layer_norm_1", "ffn1", "gelu", "ffn2",
                                          "add_layer_norm_2"});
  CHECK(classes == std::vector<std::string>{"matmul", "matmul", "reduction", "elementwise",
                                            "matmul", "matmul", "reduction", "matmul", "non_linear",
                                            "matmul", "reduction"});
}

TEST_CASE("the TF1 tutorial's split at dense32 is reasonably balanced, as its authors saw") {
  const auto spec = load("configs/tf1_mnist_2ipu.json");
  const auto cost = sim::build_cost_model(spec);
  const auto& ipu0 = cost.stages[0][0];
  const auto& ipu1 = cost.stages[1][0];
  const double ratio = double(ipu0.forward_cycles + ipu0.backward_cycles) /
                       double(ipu1.forward_cycles + ipu1.backward_cycles);
  // Fixed costs dominate both: IPU0's three products each pay their plan's compute sets and the
  // reduction of their partials, IPU1's two products are smaller, and dense256's FLOPs tip IPU0.
  // Balanced enough that the lighter IPU is busy for more than half of the heavier one's time.
  CHECK(ratio > 1.0);
  CHECK(ratio < 2.0);
}

TEST_CASE("a recomputing BERT stage stashes its input and three dropout seeds per encoder") {
  const auto spec = load(
      "configs/bert_large_4ipu.json",
      {"pipeline.recomputation_mode=\"auto\"", "pipeline.recompute_checkpoint_every_layer=false"});
  const auto cost = sim::build_cost_model(spec);
  // Stage 1 holds 7 encoders; its input is one [128, 1024] fp16 tensor per sample.
  CHECK(cost.stages[1][0].stash_bytes == 8 * 128 * 1024 * 2 + 7 * 3 * 8);
}

TEST_CASE("code memory is the control program plus each operation's compute sets") {
  const auto spec = load("configs/tf1_mnist_2ipu.json");
  const auto cost = sim::build_cost_model(spec);
  for (int ipu = 0; ipu < 2; ++ipu) {
    std::int64_t always_live = 0;
    for (const auto& item : cost.static_memory[ipu]) {
      if (item.category == sim::MemoryCategory::kAlwaysLive)
        always_live += item.bytes;
    }
    const auto& ops = cost.stages[ipu][0].operations;
    CHECK(always_live == 7'000'000 + sum_of(ops, [](const auto& op) { return op.code_bytes; }));
  }
}

TEST_CASE("a profiled layer is one row with the config's cycles") {
  const auto spec = load("configs/tf1_mnist_2ipu.json",
                         {"/model/layers/1/cycles={\"forward\": 1000, \"backward\": 3000}"});
  const auto cost = sim::build_cost_model(spec);
  const auto& row = cost.stages[0][0].operations.front();
  CHECK(row.layer == "dense256");
  CHECK(row.name == "profiled");
  CHECK_FALSE(row.op_class.has_value());
  CHECK(row.forward.cycles == 1000);
  CHECK(row.backward.cycles == 3000);
}

TEST_CASE("Graphcore's BERT-Large POD16 pretraining configurations fit in memory") {
  // Phase 1 at 128 (micro-batch 8) and phase 2 at 384 and 512 (micro-batch 2), with
  // recomputation: graphcore/examples nlp/bert configs and MLPerf v1.0's POD16 submission.
  for (const char* config : {"configs/bert_large_4ipu.json", "configs/bert_large_4ipu_seq384.json",
                             "configs/bert_large_4ipu_seq512.json"}) {
    INFO(config);
    const auto report = sim::simulate(load(config), {});
    CHECK(report.figures.fits_in_memory);
    for (const auto& ipu : report.replay.ipus)
      CHECK(ipu.peak_memory_bytes < 941'000'000LL * 85 / 100);  // with 15% to spare
  }
}

TEST_CASE("a layer tied to an embedding on another IPU holds a copy and exchanges it") {
  // bert_tiny's word matrix is 64 x 32 fp32 (8,192 bytes) and so is its fp32 accumulator.
  const auto four_stages =
      load("configs/bert_tiny_4ipu.json",
           {"pipeline.splits=[\"encoder2\",\"encoder3\",\"encoder4\"]",
            "pipeline.device_mapping=[0,1,2,3]", "pipeline.gradient_accumulation_count=8"});
  const auto cost = sim::build_cost_model(four_stages);
  const auto bytes_of = [&](int ipu, const std::string& name) {
    for (const auto& item : cost.static_memory[ipu]) {
      if (item.name == name)
        return item.bytes;
    }
    return std::int64_t{-1};
  };
  CHECK(bytes_of(3, "copy of embeddings's word matrix for mlm_decoder") == 8192);
  CHECK(bytes_of(3, "gradient accumulators of mlm_decoder's copy of the word matrix") == 8192);
  CHECK(bytes_of(0, "copy of embeddings's word matrix for mlm_decoder") == -1);
  CHECK(cost.tied_exchange_bytes == std::vector<std::int64_t>{16384, 0, 0, 16384});
  // The gradient one way and the matrix back: two link latencies and 16,384 bytes at the link's
  // bandwidth, in whole cycles rounded up.
  const auto& hw = four_stages.hardware;
  const sim::TaskCosts costs(four_stages, *four_stages.schedule, cost);
  CHECK(costs.tied_exchange_cycles(3) ==
        2 * hw.link_latency_cycles +
            std::int64_t(std::ceil(16384.0 / hw.link_bandwidth * hw.clock_hz - 1e-9)));
  CHECK(costs.tied_exchange_cycles(1) == 0);
  // Graphcore's layout keeps the head beside the word matrix: no copy, nothing exchanged.
  const auto shipped = sim::build_cost_model(load("configs/bert_tiny_4ipu.json"));
  CHECK(shipped.tied_exchange_bytes == std::vector<std::int64_t>{0, 0, 0, 0});
}

// IPU1 of the TF1 MLP holds dense32 and logits, 2,410 parameters, on gc200 (fp32 vector unit 2
// elements a tile-cycle, compute set 240 cycles, exchange 100 + bytes / (4 x tiles)).
TEST_CASE("LAMB's weight update is Adam's plus a trust-ratio scale and two norm reductions") {
  const auto adam = sim::build_cost_model(load("configs/tf1_mnist_2ipu.json"));
  const auto lamb = sim::build_cost_model(
      load("configs/tf1_mnist_2ipu.json", {"pipeline.optimizer={\"type\": \"lamb\"}"}));
  // Adam: 4 elementwise passes, 9,640 elements on 38 tiles (256 each at least, efficiency 1/3):
  // 960 + 400 + 38,560 / 152 + 9,640 / (38 x 2 / 3) = 1994.2 -> 1,995.
  CHECK(adam.weight_update_cycles[1] == 1995);
  // LAMB: 5 elementwise passes, 12,050 elements on 48 tiles: 1,200 + 500 + 48,200 / 192 +
  // 12,050 / 32 = 2327.6 -> 2,328; the squared norms of w and u, a reduction of 4,820 elements
  // in 4 compute sets on 19 tiles (efficiency 0.11): 960 + 400 + 19,280 / 76 + 4,820 / 4.18 =
  // 2766.8 -> 2,767.
  CHECK(lamb.weight_update_cycles[1] == 2328 + 2767);
  CHECK(lamb.weight_update_cycles[1] - adam.weight_update_cycles[1] == 3100);
}

TEST_CASE("LARS' weight update is momentum's plus a decay pass and two norm reductions") {
  const auto lars = sim::build_cost_model(
      load("configs/tf1_mnist_2ipu.json", {"pipeline.optimizer={\"type\": \"lars\"}"}));
  // 3 elementwise passes, 7,230 elements on 29 tiles: 720 + 300 + 28,920 / 116 +
  // 7,230 / (29 x 2 / 3) = 1643.3 -> 1,644; the squared norms of w and g as LAMB's, 2,767.
  CHECK(lars.weight_update_cycles[1] == 1644 + 2767);
}

// The Keras CNN's 28x28x1 fp32 images, micro-batch 64, on gc200: 50,176 elements a micro-batch.
TEST_CASE("eight_bit_io sends a byte a pixel and normalises the images in the first stage") {
  const auto plain = sim::build_cost_model(load("configs/keras_cnn_2stage.json"));
  const auto eight_bit =
      sim::build_cost_model(load("configs/keras_cnn_2stage.json", {"data.eight_bit_io=true"}));
  CHECK(plain.infeed_bytes == (784 * 4 + 4) * 64);  // pixels and an int32 label a sample
  CHECK(eight_bit.infeed_bytes == (784 + 1 * 4) * 64);
  // One elementwise pass on 196 tiles (256 elements each): 240 + 100 + 200,704 / (4 x 196) +
  // 50,176 / (196 x 2 / 3) = 240 + 100 + 256 + 384 = 980 cycles.
  const auto& normalise = eight_bit.substage(0, 0).operations.back();
  CHECK(normalise.layer == "input");
  CHECK(normalise.name == "normalise_input");
  CHECK(normalise.forward.cycles == 980);
  CHECK(eight_bit.substage(0, 0).forward_cycles - plain.substage(0, 0).forward_cycles == 980);
  CHECK(eight_bit.substage(1, 0).forward_cycles == plain.substage(1, 0).forward_cycles);
}

TEST_CASE("the optimizer state takes the moments' dtypes, on chip or in streaming memory") {
  const auto state_bytes = [](const std::vector<sim::MemoryItem>& items) {
    std::int64_t bytes = 0;
    for (const auto& item : items)
      bytes += item.category == sim::MemoryCategory::kOptimizerState ? item.bytes : 0;
    return bytes;
  };
  const std::string lamb = "pipeline.optimizer={\"type\": \"lamb\", \"m_dtype\": \"fp16\"}";
  const auto on_chip = sim::build_cost_model(load("configs/tf1_mnist_2ipu.json", {lamb}));
  CHECK(state_bytes(on_chip.static_memory[1]) == 2410 * (2 + 4));
  const auto offloaded = sim::build_cost_model(
      load("configs/tf1_mnist_2ipu.json", {lamb, "pipeline.offload_weight_update_variables=true"}));
  CHECK(state_bytes(offloaded.static_memory[1]) == 0);
  CHECK(state_bytes(offloaded.streaming_memory[1]) == 2410 * 6);
  CHECK(offloaded.offload_bytes[1] == 2410 * 6 * 2);  // streamed in and back out
}

// Three stages (splits dense128, dense32) recomputing: stage 1 stashes dense256's output, 256
// fp32 elements per sample, 32 samples per micro-batch.
TEST_CASE("an fp8 stash keeps a byte per element and casts it before stashing and after") {
  const std::vector<std::string> sets = {
      "pipeline.splits=[\"dense128\", \"dense32\"]", "pipeline.gradient_accumulation_count=12",
      "pipeline.recomputation_mode=recompute_then_backpropagate"};
  auto fp8_sets = sets;
  fp8_sets.push_back("pipeline.stash_dtype=fp8");
  const auto fp32 = sim::build_cost_model(load("configs/tf1_mnist_2ipu.json", sets));
  const auto fp8 = sim::build_cost_model(load("configs/tf1_mnist_2ipu.json", fp8_sets));
  CHECK(fp32.stages[1][0].stash_bytes == 256 * 4 * 32);
  CHECK(fp8.stages[1][0].stash_bytes == 256 * 32);
  // The model input that stage 0 stashes is data, never cast.
  CHECK(fp8.stages[0][0].stash_bytes == fp32.stages[0][0].stash_bytes);
  // A cast of 8,192 fp32 elements on 32 tiles: 240 + 100 + 32,768 / 128 + 8,192 / (32 x 2 / 3)
  // = 980 cycles, in the forward and again in the recomputation that reads the stash.
  const auto& cast = fp8.stages[1][0].operations.back();
  CHECK(cast.layer == "stash_fifo");
  CHECK(cast.name == "cast_fp8");
  CHECK(cast.forward.cycles == 980);
  CHECK(cast.recompute_cycles == 980);
  CHECK(fp8.stages[1][0].forward_cycles == fp32.stages[1][0].forward_cycles + 980);
  CHECK(fp8.stages[1][0].recompute_cycles == fp32.stages[1][0].recompute_cycles + 980);
  CHECK(fp8.stages[1][0].backward_cycles == fp32.stages[1][0].backward_cycles);
}

namespace {

// Stage 0 {d1, d2} and the final stage 1 {d3, d4, loss} of tests/tools/data/dense_checkpoints.json
// (fp32, 8 inputs, micro-batch 2), with or without a checkpoint at every layer but the last.
sim::CostModel dense_checkpoints(bool every_layer) {
  return sim::build_cost_model(load("tests/tools/data/dense_checkpoints.json",
                                    {"pipeline.recompute_checkpoint_every_layer=" +
                                     std::string(every_layer ? "true" : "false")}));
}

std::int64_t forward_of(const sim::SubstageCost& sub, const std::vector<std::string>& layers) {
  std::int64_t cycles = 0;
  for (const auto& op : sub.operations) {
    if (std::find(layers.begin(), layers.end(), op.layer) != layers.end())
      cycles += op.forward.cycles;
  }
  return cycles;
}

}  // namespace

TEST_CASE("a checkpoint at every layer stashes the layers' outputs, not their saved state") {
  // Per sample: the input 8 x 4 bytes; d1's output 16 x 4 (d2, the stage's last, is none).
  CHECK(dense_checkpoints(false).stages[0][0].stash_bytes == 2 * 32);
  CHECK(dense_checkpoints(true).stages[0][0].stash_bytes == 2 * (32 + 64));
  // Beside its stash entry, the backward holds one segment's rebuilt state: the whole stage
  // (d1 keeps its 8 inputs and 16 outputs, d2 16 and 16) without checkpoints, d2 alone with
  // them; it holds the outputs (d1 16 + d2 16 floats) too, which the rebuilt state covers.
  CHECK(dense_checkpoints(false).stages[0][0].backward_live_bytes == 2 * (96 + 128));
  CHECK(dense_checkpoints(true).stages[0][0].backward_live_bytes == 2 * 128);
  // The forward holds the outputs beyond its entry (the input and d1's output): d2's.
  CHECK(dense_checkpoints(true).stages[0][0].live_bytes == 2 * 128 - 2 * (32 + 64));
  CHECK(dense_checkpoints(false).stages[0][0].live_bytes == 2 * 128 - 2 * 32);
}

TEST_CASE("the backward recomputes each layer once, and the final stage only to its checkpoint") {
  const auto plain = dense_checkpoints(false);
  const auto every = dense_checkpoints(true);
  // Stage 0 rebuilds d2 from d1's output, then d1 from the input: each forward once.
  CHECK(every.stages[0][0].recompute_cycles == forward_of(every.stages[0][0], {"d1", "d2"}));
  CHECK(every.stages[0][0].recompute_cycles == plain.stages[0][0].recompute_cycles);
  // The final stage (stash depth 0) keeps the loss, after its last checkpoint d4, from its
  // forward and rebuilds d4 and d3; with no checkpoint it rebuilds nothing.
  const auto& last = every.stages[1][0];
  CHECK(last.recompute_cycles == forward_of(last, {"d3", "d4"}));
  CHECK(last.recompute_cycles > 0);
  CHECK(last.recompute_cycles < last.forward_cycles);
  CHECK(plain.stages[1][0].recompute_cycles == 0);
  // Its backward rebuilds d3's 16 inputs and 16 outputs at most (d4 keeps 16, the loss 4 x 4 +
  // 4), beside the loss's one-hot. Its entry holds the input, d3's and d4's outputs and the
  // kept loss's state.
  CHECK(last.backward_live_bytes == last.temporary_bytes + 2 * 128);
  CHECK(last.stash_bytes == 2 * (64 + 64 + 16 + 20));
  // Without checkpoints it recomputes nothing: its entry is all three layers' state, not its
  // input, and its backward holds only the one-hot beside it.
  CHECK(plain.stages[1][0].stash_bytes == 2 * (128 + 64 + 20));
  CHECK(plain.stages[1][0].backward_live_bytes == plain.stages[1][0].temporary_bytes);
}

TEST_CASE("available_memory_proportion shapes each IPU's plans under planned pricing") {
  const std::string planned = "hardware.operations.pricing=\"planned\"";
  const auto roomy = sim::build_cost_model(load("configs/bert_large_4ipu.json", {planned}));
  // IPU1 gets a twentieth of its tiles' memory for temporaries, the others poplin's 0.6.
  const auto tight = sim::build_cost_model(
      load("configs/bert_large_4ipu.json",
           {planned, "pipeline.available_memory_proportion=[0.6, 0.05, 0.6, 0.6]"}));
  CHECK(tight.substage(0, 0).forward_cycles == roomy.substage(0, 0).forward_cycles);
  CHECK(tight.substage(1, 0).forward_cycles > roomy.substage(1, 0).forward_cycles);
}

TEST_CASE("available_memory_proportion is refused where it would not act, or names no IPU") {
  CHECK_THROWS_WITH(
      load("configs/bert_large_4ipu.json",
           {"hardware.operations.pricing=\"fitted\"", "pipeline.available_memory_proportion=0.2"}),
      Catch::Contains("/pipeline/available_memory_proportion: available_memory_proportion "
                      "shapes the plans of planned pricing, and this run prices by the fitted "
                      "model: set hardware.operations.pricing to \"planned\""));
  CHECK_THROWS_WITH(
      load("configs/bert_large_4ipu.json", {"hardware.operations.pricing=\"planned\"",
                                            "pipeline.available_memory_proportion=[0.2, 0.2]"}),
      Catch::Contains("expected one value, or one per IPU of a replica (4), found 2"));
  CHECK_THROWS_WITH(
      load("configs/bert_large_4ipu.json",
           {"hardware.operations.pricing=\"planned\"", "pipeline.available_memory_proportion=1.5"}),
      Catch::Contains("expected a share of tile memory in (0, 1], found 1.5"));
}

TEST_CASE("partials_dtype is refused where it would not act, or for fp32 inputs") {
  CHECK_THROWS_WITH(
      load("configs/bert_large_4ipu.json",
           {"hardware.operations.pricing=\"fitted\"", "pipeline.partials_dtype=\"fp16\""}),
      Catch::Contains("/pipeline/partials_dtype: partials_dtype shapes the plans of planned "
                      "pricing, and this run prices by the fitted model: set "
                      "hardware.operations.pricing to \"planned\""));
  CHECK_THROWS_WITH(load("configs/bert_large_4ipu.json",
                         {"hardware.operations.pricing=\"planned\"", "pipeline.dtype=\"fp32\"",
                          "pipeline.partials_dtype=\"fp16\""}),
                    Catch::Contains("fp16 partials need fp16 inputs (poplin accumulates fp32 "
                                    "inputs in fp32), and the pipeline's dtype is fp32"));
  CHECK_THROWS_WITH(load("configs/bert_large_4ipu.json", {"hardware.operations.pricing=\"planned\"",
                                                          "pipeline.partials_dtype=\"half\""}),
                    Catch::Contains("/pipeline/partials_dtype"));
}

TEST_CASE("half partials make BERT-Large's planned stages cheaper") {
  const std::string planned = "hardware.operations.pricing=\"planned\"";
  const auto wide = sim::build_cost_model(load("configs/bert_large_4ipu.json", {planned}));
  const auto half = sim::build_cost_model(
      load("configs/bert_large_4ipu.json", {planned, "pipeline.partials_dtype=\"fp16\""}));
  CHECK(half.substage(1, 0).forward_cycles < wide.substage(1, 0).forward_cycles);
}

TEST_CASE("under planned pricing a product reading only the data computes no input gradient") {
  const std::string planned = "hardware.operations.pricing=\"planned\"";
  const auto spec = load("configs/tf1_mnist_2ipu.json", {planned});
  // dense256 reads the flattened images; dense128 reads dense256.
  CHECK(spec.model.info[1].reads_only_data);
  CHECK_FALSE(spec.model.info[2].reads_only_data);
  const auto model = sim::build_cost_model(spec);
  int checked = 0;
  for (const auto& op : model.substage(0, 0).operations) {
    if (op.name != "matmul")
      continue;
    if (op.layer == "dense256")
      CHECK(op.backward.cycles == op.weight_gradient_cycles);
    if (op.layer == "dense128")
      CHECK(op.backward.cycles > op.weight_gradient_cycles);
    checked += op.layer == "dense256" || op.layer == "dense128";
  }
  CHECK(checked == 2);
}
