#include "models/kernels/stage_executor.hpp"

#include <catch2/catch.hpp>

#include "models/data/data.hpp"
#include "sim/core/config_file.hpp"

using namespace ipusim::models;

namespace {

Model parse(const std::string& model_json) {
  const auto json = nlohmann::json{{"model", nlohmann::json::parse(model_json)}};
  const auto document = ipusim::core::ConfigDocument::from_json(json, "model.json");
  return parse_model(document.root().at("model"));
}

// A small CNN whose dropout output feeds both a dense layer and a residual add, so split as
// {conv..dropout} {dense2} {add..loss} a tensor crosses two stage boundaries.
Model residual_cnn(const std::string& dtype, bool checkpoint = false) {
  return parse(R"({"name": "residual", "input": {"shape": [6, 6, 1], "dtype": ")" + dtype +
               R"("}, "layers": [
      {"id": "conv", "type": "conv2d", "filters": 4, "kernel": 3, "padding": "same",
       "activation": "relu"},
      {"id": "pool", "type": "maxpool2d", "pool": 2},
      {"id": "flatten", "type": "flatten"},
      {"id": "dense1", "type": "dense", "units": 16, "activation": "gelu", "checkpoint": )" +
               (checkpoint ? "true" : "false") + R"(},
      {"id": "drop", "type": "dropout", "rate": 0.25},
      {"id": "dense2", "type": "dense", "units": 16, "activation": "tanh"},
      {"id": "sum", "type": "add", "inputs": ["drop", "dense2"]},
      {"id": "logits", "type": "dense", "units": 5},
      {"id": "loss", "type": "softmax_cross_entropy"}]})");
}

const std::vector<std::vector<int>> kStages = {{0, 1, 2, 3, 4}, {5}, {6, 7, 8}};
constexpr std::int64_t kMicroBatch = 4;
constexpr std::int64_t kMicroBatches = 3;

TrainingOptions adam(DType accumulator_dtype = DType::kFp32) {
  return {.seed = 11,
          .optimizer = {.kind = OptimizerConfig::Kind::kAdam, .learning_rate = 0.01},
          .accumulator_dtype = accumulator_dtype};
}

struct MicroBatch {
  Tensor inputs;
  std::vector<int> labels;
};

std::vector<MicroBatch> micro_batches(const Model& model, std::int64_t repeat) {
  SyntheticSource data(5, 1000, model.input_shape, model.classes);
  std::vector<MicroBatch> batches(kMicroBatches);
  for (std::int64_t m = 0; m < kMicroBatches; ++m) {
    data.batch((repeat * kMicroBatches + m) * kMicroBatch, kMicroBatch, batches[m].inputs,
               batches[m].labels);
  }
  return batches;
}

ForwardContext context(std::int64_t m, std::int64_t repeat, const MicroBatch& batch) {
  return {m, repeat, batch.labels};
}

// One training step over all micro-batches on the whole model as one stage.
std::vector<float> reference_step(const Model& model, ParameterStore& store, std::int64_t repeat) {
  std::vector<int> all(model.layers.size());
  for (std::size_t i = 0; i < all.size(); ++i)
    all[i] = static_cast<int>(i);
  StageExecutor whole(model, all, kMicroBatch, store);
  std::vector<float> losses;
  const std::vector<MicroBatch> batches = micro_batches(model, repeat);
  for (std::int64_t m = 0; m < kMicroBatches; ++m) {
    const MicroBatch& batch = batches[static_cast<std::size_t>(m)];
    StageForward forward = whole.forward({{kModelInput, batch.inputs}}, context(m, repeat, batch));
    losses.push_back(forward.outputs.at(8)[0]);
    whole.backward({}, forward.stash);
  }
  store.apply_update();
  return losses;
}

// The same step as a GPipe-like pipeline of three stages: every forward, then every backward
// (last stage first), with gradients of shared tensors summed in decreasing stage order.
// Under kCheckpoints with `every_layer`, the last stage is the final forward stage.
std::vector<float> pipelined_step(const Model& model, ParameterStore& store, std::int64_t repeat,
                                  StashMode mode = StashMode::kActivations,
                                  bool every_layer = false) {
  std::vector<StageExecutor> stages;
  for (std::size_t s = 0; s < kStages.size(); ++s) {
    const CheckpointOptions checkpoints{every_layer, every_layer && s + 1 == kStages.size()};
    stages.emplace_back(model, kStages[s], kMicroBatch, store, mode, checkpoints);
  }
  const std::vector<MicroBatch> batches = micro_batches(model, repeat);
  std::vector<std::vector<Stash>> stashes(stages.size());
  std::vector<float> losses;
  for (std::int64_t m = 0; m < kMicroBatches; ++m) {
    const MicroBatch& batch = batches[static_cast<std::size_t>(m)];
    TensorMap live{{kModelInput, batch.inputs}};
    for (std::size_t s = 0; s < stages.size(); ++s) {
      TensorMap inputs;
      for (const int producer : stages[s].input_producers())
        inputs.emplace(producer, live.at(producer));
      StageForward forward = stages[s].forward(inputs, context(m, repeat, batch));
      live.merge(forward.outputs);
      stashes[s].push_back(std::move(forward.stash));
    }
    losses.push_back(live.at(8)[0]);
  }
  for (std::int64_t m = 0; m < kMicroBatches; ++m) {
    TensorMap gradients;
    for (std::size_t s = stages.size(); s-- > 0;) {
      Stash stash = stashes[s][static_cast<std::size_t>(m)];
      if (mode != StashMode::kActivations)
        stash = stages[s].recompute(stash);
      TensorMap outputs;
      for (const int producer : stages[s].output_producers()) {
        if (gradients.count(producer) != 0)
          outputs.emplace(producer, gradients.at(producer));
      }
      for (auto& [producer, gradient] : stages[s].backward(outputs, stash))
        add_gradient(gradients, producer, std::move(gradient), model.dtype);
    }
  }
  store.apply_update();
  return losses;
}

bool same_parameters(const Model& model, const ParameterStore& a, const ParameterStore& b) {
  for (int layer = 0; layer < static_cast<int>(model.layers.size()); ++layer) {
    const auto pa = a.parameters(layer);
    const auto pb = b.parameters(layer);
    if (pa.size() != pb.size())
      return false;
    for (std::size_t i = 0; i < pa.size(); ++i) {
      if (!bit_identical(pa[i], pb[i]))
        return false;
    }
  }
  return true;
}

void check_pipeline_matches_reference(const Model& model, const TrainingOptions& options,
                                      StashMode mode, bool every_layer = false) {
  ParameterStore reference(model, options);
  ParameterStore pipeline(model, options);
  REQUIRE(same_parameters(model, reference, pipeline));
  for (std::int64_t repeat = 0; repeat < 2; ++repeat) {
    const std::vector<float> expected = reference_step(model, reference, repeat);
    CHECK(pipelined_step(model, pipeline, repeat, mode, every_layer) == expected);
    CHECK(same_parameters(model, reference, pipeline));
  }
  ParameterStore untrained(model, options);
  CHECK_FALSE(same_parameters(model, reference, untrained));
}

std::int64_t tensor_bytes(const Model& model, int producer) {
  return producer == kModelInput ? element_count(model.input_shape) * dtype_bytes(model.dtype)
                                 : model.info[static_cast<std::size_t>(producer)].activation_bytes;
}

}  // namespace

TEST_CASE("a stage knows which tensors enter and leave it") {
  const Model model = residual_cnn("fp32");
  ParameterStore store(model, adam());
  const StageExecutor first(model, kStages[0], kMicroBatch, store);
  const StageExecutor middle(model, kStages[1], kMicroBatch, store);
  const StageExecutor last(model, kStages[2], kMicroBatch, store);
  CHECK(first.input_producers() == std::vector<int>{kModelInput});
  CHECK(first.output_producers() == std::vector<int>{4});
  CHECK(middle.input_producers() == std::vector<int>{4});
  CHECK(middle.output_producers() == std::vector<int>{5});
  CHECK(last.input_producers() == std::vector<int>{4, 5});
  CHECK(last.output_producers() == std::vector<int>{8});
}

TEST_CASE("a pipelined fp32 run matches the one-stage reference bit for bit") {
  check_pipeline_matches_reference(residual_cnn("fp32"), adam(), StashMode::kActivations);
}

TEST_CASE("a pipelined fp16 run with fp16 accumulators matches the reference bit for bit") {
  check_pipeline_matches_reference(residual_cnn("fp16"), adam(DType::kFp16),
                                   StashMode::kActivations);
}

TEST_CASE("recomputing from stage inputs or checkpoints matches the reference bit for bit") {
  check_pipeline_matches_reference(residual_cnn("fp32"), adam(), StashMode::kStageInputs);
  check_pipeline_matches_reference(residual_cnn("fp32", true), adam(), StashMode::kCheckpoints);
}

TEST_CASE(
    "recomputing a segment at a time from a checkpoint at every layer matches the reference") {
  check_pipeline_matches_reference(residual_cnn("fp32"), adam(), StashMode::kCheckpoints, true);
  check_pipeline_matches_reference(residual_cnn("fp16"), adam(DType::kFp16),
                                   StashMode::kCheckpoints, true);
}

TEST_CASE("a stash holds exactly the bytes the memory model charges") {
  const Model model = residual_cnn("fp16", true);
  ParameterStore store(model, adam());
  const MicroBatch batch = micro_batches(model, 0)[0];
  const TensorMap model_input{{kModelInput, batch.inputs}};
  for (const StashMode mode :
       {StashMode::kActivations, StashMode::kStageInputs, StashMode::kCheckpoints}) {
    const StageExecutor stage(model, kStages[0], kMicroBatch, store, mode);
    const Stash stash = stage.forward(model_input, context(0, 0, batch)).stash;
    std::int64_t per_sample = 0;
    std::int64_t seeds = 0;
    for (const int layer : kStages[0]) {
      const LayerInfo& info = model.info[static_cast<std::size_t>(layer)];
      seeds += info.seed_bytes;
      if (mode == StashMode::kActivations)
        per_sample += info.saved_bytes;
      // A checkpoint keeps its output alone.
      if (model.layers[layer].checkpoint && mode == StashMode::kCheckpoints)
        per_sample += info.activation_bytes;
    }
    if (mode != StashMode::kActivations)
      per_sample += tensor_bytes(model, kModelInput);
    INFO("mode " << static_cast<int>(mode));
    CHECK(stash.bytes() == kMicroBatch * per_sample + seeds);
  }
  // conv relu: (36 + 144) x 2, pool 36 x 4, dense1 gelu (36 + 16) x 2; dropout an 8-byte seed.
  const StageExecutor stage(model, kStages[0], kMicroBatch, store);
  CHECK(stage.forward(model_input, context(0, 0, batch)).stash.bytes() == kMicroBatch * 608 + 8);
  // The 6x6 fp16 input (72) and dense1's 16 fp16 outputs (32), and the seed.
  const StageExecutor checkpointed(model, kStages[0], kMicroBatch, store, StashMode::kCheckpoints);
  CHECK(checkpointed.forward(model_input, context(0, 0, batch)).stash.bytes() ==
        kMicroBatch * 104 + 8);
  // With a checkpoint at every layer but the dropout: conv's 144, pool's 36, flatten's 36 and
  // dense1's 16 outputs, in fp16, beside the input.
  const StageExecutor every(model, kStages[0], kMicroBatch, store, StashMode::kCheckpoints,
                            {.every_layer = true});
  CHECK(every.forward(model_input, context(0, 0, batch)).stash.bytes() ==
        kMicroBatch * (72 + 2 * (144 + 36 + 36 + 16)) + 8);
}

namespace {

// Every layer's saved state of `rebuilt` is `expected`'s, bit for bit.
void check_same_saved(const Stash& rebuilt, const Stash& expected) {
  REQUIRE(rebuilt.saved.size() == expected.saved.size());
  for (const auto& [layer, state] : expected.saved) {
    const SavedState& other = rebuilt.saved.at(layer);
    CHECK(other.indices == state.indices);
    CHECK(other.seeds == state.seeds);
    REQUIRE(other.tensors.size() == state.tensors.size());
    for (std::size_t i = 0; i < state.tensors.size(); ++i)
      CHECK(bit_identical(other.tensors[i], state.tensors[i]));
  }
}

}  // namespace

TEST_CASE("recomputation rebuilds the activations stash bit for bit") {
  const Model model = residual_cnn("fp32");
  ParameterStore store(model, adam());
  const MicroBatch batch = micro_batches(model, 0)[1];
  const StageExecutor full(model, kStages[0], kMicroBatch, store, StashMode::kActivations);
  const StageExecutor lean(model, kStages[0], kMicroBatch, store, StashMode::kStageInputs);
  const Stash expected = full.forward({{kModelInput, batch.inputs}}, context(1, 0, batch)).stash;
  const Stash stashed = lean.forward({{kModelInput, batch.inputs}}, context(1, 0, batch)).stash;
  CHECK_FALSE(stashed.complete);
  CHECK(stashed.saved.size() == 1);  // the dropout seed
  const Stash rebuilt = lean.recompute(stashed);
  CHECK(rebuilt.complete);
  CHECK(rebuilt.bytes() == expected.bytes());
  check_same_saved(rebuilt, expected);
}

TEST_CASE("the checkpoints' outputs alone rebuild the activations stash bit for bit") {
  const Model model = residual_cnn("fp32");
  ParameterStore store(model, adam());
  const MicroBatch batch = micro_batches(model, 0)[1];
  const StageExecutor full(model, kStages[0], kMicroBatch, store, StashMode::kActivations);
  const StageExecutor lean(model, kStages[0], kMicroBatch, store, StashMode::kCheckpoints,
                           {.every_layer = true});
  const Stash expected = full.forward({{kModelInput, batch.inputs}}, context(1, 0, batch)).stash;
  const Stash stashed = lean.forward({{kModelInput, batch.inputs}}, context(1, 0, batch)).stash;
  CHECK(stashed.checkpoints.size() == 4);  // conv, pool, flatten, dense1; not the dropout
  CHECK(stashed.saved.size() == 1);        // the dropout seed
  const Stash rebuilt = lean.recompute(stashed);
  check_same_saved(rebuilt, expected);
}

TEST_CASE("training an MLP on synthetic data lowers the loss") {
  const Model model = parse(R"({"name": "mlp", "input": {"shape": [8, 8]}, "classes": 4,
      "layers": [{"id": "flatten", "type": "flatten"},
                 {"id": "hidden", "type": "dense", "units": 32, "activation": "relu"},
                 {"id": "logits", "type": "dense", "units": 4},
                 {"id": "loss", "type": "softmax_cross_entropy"}]})");
  ParameterStore store(
      model,
      {.seed = 1, .optimizer = {.kind = OptimizerConfig::Kind::kSgd, .learning_rate = 0.05}});
  StageExecutor executor(model, {0, 1, 2, 3}, 16, store);
  SyntheticSource data(2, 512, model.input_shape, 4);
  const auto loss_at = [&](std::int64_t step) {
    Tensor inputs;
    std::vector<int> labels;
    data.batch(step * 16, 16, inputs, labels);
    StageForward forward = executor.forward({{kModelInput, inputs}}, {step, 0, labels});
    executor.backward({}, forward.stash);
    store.apply_update();
    return forward.outputs.at(3)[0];
  };
  const float first = loss_at(0);
  for (std::int64_t step = 1; step < 60; ++step)
    loss_at(step);
  float last = 0.0f;
  for (std::int64_t step = 60; step < 64; ++step)
    last += loss_at(step) / 4;
  INFO("loss " << first << " -> " << last);
  CHECK(first > 0.5f);
  CHECK(last < 0.1f * first);
}

TEST_CASE("a model with an embedding reads token ids from its input, and a CNN does not") {
  const Model model = parse(R"({"name": "bert", "input": {"shape": [8]}, "layers": [
      {"id": "embed", "type": "embedding", "vocab_size": 10, "hidden": 4, "sequence_length": 8},
      {"id": "encoder", "type": "transformer_encoder", "hidden": 4, "heads": 2,
       "sequence_length": 8, "ffn": 16}]})");
  CHECK(input_holds_ids(model));
  CHECK_FALSE(input_holds_ids(residual_cnn("fp32")));
}

TEST_CASE("a forward updates batch norm's running statistics once and recomputation never") {
  const Model model = parse(R"({"name": "bn", "input": {"shape": [5]}, "layers": [
      {"id": "dense", "type": "dense", "units": 3},
      {"id": "bn", "type": "batch_norm", "momentum": 0.5},
      {"id": "logits", "type": "dense", "units": 2},
      {"id": "loss", "type": "softmax_cross_entropy"}]})");
  ParameterStore store(model, adam());
  const std::vector<int> all = {0, 1, 2, 3};
  const StageExecutor lean(model, all, kMicroBatch, store, StashMode::kStageInputs);
  const std::vector<MicroBatch> batches = micro_batches(model, 0);
  const auto running = [&] {
    const auto stats = store.running_statistics(1);
    return std::vector<Tensor>(stats.begin(), stats.end());
  };
  REQUIRE(running().size() == 2);
  CHECK(running()[0][0] == 0.0f);
  CHECK(running()[1][0] == 1.0f);
  const Stash stash =
      lean.forward({{kModelInput, batches[0].inputs}}, context(0, 0, batches[0])).stash;
  const std::vector<Tensor> after_forward = running();
  CHECK(after_forward[0][0] != 0.0f);
  const Stash rebuilt = lean.recompute(stash);
  CHECK(rebuilt.complete);
  for (std::size_t k = 0; k < 2; ++k)
    CHECK(bit_identical(running()[k], after_forward[k]));
  // The second micro-batch folds in once more: running = 0.5 running + 0.5 batch.
  const Tensor dense_out = [&] {
    const StageExecutor first(model, {0}, kMicroBatch, store);
    return first.forward({{kModelInput, batches[1].inputs}}, context(1, 0, batches[1]))
        .outputs.at(0);
  }();
  lean.forward({{kModelInput, batches[1].inputs}}, context(1, 0, batches[1]));
  double mean = 0;
  for (std::int64_t n = 0; n < kMicroBatch; ++n)
    mean += dense_out[n * 3] / double(kMicroBatch);
  CHECK(std::abs(running()[0][0] - (0.5 * after_forward[0][0] + 0.5 * mean)) < 1e-6);
}
