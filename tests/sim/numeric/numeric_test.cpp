#include "sim/numeric/numeric.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "sim/machine/cost_model.hpp"
#include "sim/numeric/training.hpp"
#include "sim/report/report.hpp"

using namespace ipusim;

namespace {

const std::vector<std::string> kConfigs = {"configs/tf1_mnist_2ipu.json",
                                           "configs/popxl_mnist_3stage.json",
                                           "configs/keras_cnn_2stage.json",
                                           "configs/vit_tiny_fashion_mnist.json",
                                           "configs/efficientnet_tiny_fashion_mnist.json",
                                           "configs/conformer_tiny_fashion_mnist.json"};

// A numeric report whose losses and weights equal the reference's exactly.
void check_bit_identical(const sim::RunReport& report) {
  REQUIRE(report.numeric);
  CHECK(report.numeric->bit_identical);
  CHECK(report.numeric->max_abs_diff_weights == 0.0);
  CHECK(report.numeric->losses == report.numeric->reference_losses);
}

// Every schedule of the issue with the recomputation modes it accepts.
const std::vector<std::pair<std::string, std::vector<std::string>>> kSchedules = {
    {"grouped",
     {"none", "recompute_then_backpropagate", "recompute_and_backpropagate_interleaved"}},
    {"interleaved", {"none", "recompute_then_backpropagate"}},
    {"sequential", {"none", "recompute_and_backpropagate_interleaved"}},
    {"gpipe", {"none", "recompute_and_backpropagate_interleaved"}},
    {"1f1b", {"none", "recompute_and_backpropagate_interleaved"}},
};

// A shipped config made small: micro-batch 4, 8 micro-batches, 2 repeats, synthetic data;
// `sets` apply last.
sim::RunSpec small(const std::string& config, const std::string& schedule,
                   const std::string& recomputation, const std::vector<std::string>& sets = {}) {
  std::vector<std::string> all = {"pipeline.pipeline_schedule=\"" + schedule + "\"",
                                  "pipeline.recomputation_mode=\"" + recomputation + "\"",
                                  "pipeline.micro_batch_size=4",
                                  "pipeline.gradient_accumulation_count=8",
                                  "pipeline.repeat_count=2",
                                  "data.source=\"synthetic\""};
  all.insert(all.end(), sets.begin(), sets.end());
  std::vector<core::Override> overrides;
  for (const auto& set : all)
    overrides.push_back(core::parse_set_argument(set));
  return sim::load_run_spec(config, overrides);
}

sim::RunReport simulate_numeric(const sim::RunSpec& spec,
                                sim::NumericMode mode = sim::NumericMode::kOn) {
  sim::SimulateOptions options;
  options.numeric = mode;
  return sim::simulate(spec, options);
}

// The pipeline of `spec` over its own store, replayed once per repeat.
struct PipelineRun {
  explicit PipelineRun(const sim::RunSpec& spec, sim::NumericOptions options = {})
      : data(sim::training_data(spec)),
        parameters(spec.model, sim::training_options(spec)),
        pipeline(spec, parameters, *data, options),
        cost(sim::build_cost_model(spec)) {
    const sim::ReplayOptions replay_options{false, {&pipeline}, {}};
    for (std::int64_t r = 0; r < spec.pipeline.repeat_count; ++r)
      sim::replay(spec, cost, replay_options);
  }

  std::unique_ptr<models::DataSource> data;
  models::ParameterStore parameters;
  sim::NumericPipeline pipeline;
  sim::CostModel cost;
};

models::Stash entry(std::int64_t microbatch, std::int64_t repeat = 0) {
  models::Stash stash;
  stash.microbatch = microbatch;
  stash.repeat = repeat;
  stash.inputs.emplace(models::kModelInput, models::Tensor({2, 3}));
  return stash;
}

}  // namespace

TEST_CASE("pipelined runs equal the reference bit for bit under every schedule and recomputation") {
  for (const auto& config : kConfigs) {
    std::optional<std::vector<std::vector<float>>> first_losses;
    for (const auto& [schedule, modes] : kSchedules) {
      for (const auto& mode : modes) {
        const sim::RunSpec spec = small(config, schedule, mode);
        const sim::RunReport report = simulate_numeric(spec);
        INFO(config << " " << schedule << " " << mode);
        REQUIRE(report.numeric);
        CHECK(report.numeric->bit_identical);
        CHECK(report.numeric->max_abs_diff_loss == 0.0);
        CHECK(report.numeric->max_abs_diff_weights == 0.0);
        REQUIRE(report.numeric->losses.size() == 2);
        CHECK(report.numeric->losses[1].size() == 8);
        CHECK(report.numeric->losses == report.numeric->reference_losses);
        // The same seed and data give the same training whatever the schedule.
        if (!first_losses)
          first_losses = report.numeric->losses;
        CHECK(report.numeric->losses == *first_losses);
      }
    }
  }
}

TEST_CASE("zero-bubble's split weight gradient keeps the reference's numbers") {
  const sim::RunReport report =
      simulate_numeric(small("configs/keras_cnn_2stage.json", "zero_bubble_h1", "none"));
  REQUIRE(report.numeric);
  CHECK(report.numeric->bit_identical);
}

TEST_CASE("each numeric FIFO entry holds the bytes the memory model charges for it") {
  for (const auto& config : kConfigs) {
    for (const auto& [schedule, modes] : kSchedules) {
      for (const auto& mode : modes) {
        const sim::RunSpec spec = small(config, schedule, mode);
        const PipelineRun run(spec);
        const auto depth = spec.schedule->stash_depth();
        const auto held = spec.schedule->microbatches_held();
        const auto kinds = spec.schedule->stash_kind();
        for (int s = 0; s < static_cast<int>(spec.pipeline.stages.size()); ++s) {
          INFO(config << " " << schedule << " " << mode << " stage " << s);
          const auto& fifo = run.pipeline.fifo(s, 0);
          const sim::SubstageCost& cost = run.cost.substage(s, 0);
          CHECK(fifo.capacity() == depth[s]);
          // The FIFO's buffers fill to the depth, as the memory model allocates them, and with
          // the output tensor (a depth-0 stage's plain copy) hold what the model charges.
          CHECK(fifo.peak_bytes() == depth[s] * cost.stash_bytes);
          CHECK(fifo.peak_held_bytes() == held[s] * cost.stash_bytes);
          if (kinds[s] != schedules::StashKind::kNone) {
            CHECK(fifo.entry_bytes() > 0);
            CHECK(fifo.entry_bytes() == cost.stash_bytes);
          }
        }
      }
    }
  }
}

TEST_CASE("recomputation keeps only stage inputs or checkpoints in the FIFO") {
  const sim::RunSpec full = small(kConfigs[0], "grouped", "none");
  const sim::RunSpec inputs = small(kConfigs[0], "grouped", "recompute_then_backpropagate");
  // tf1 stage 0 (flatten, dense256, dense128, dense64) for 4 samples: the saved inputs and
  // outputs of its layers, or only its 28x28 fp32 input.
  CHECK(PipelineRun(full).pipeline.fifo(0, 0).entry_bytes() ==
        4 * 4 * (784 + 2 * 256 + 2 * 128 + 64));
  CHECK(PipelineRun(inputs).pipeline.fifo(0, 0).entry_bytes() == 4 * 784 * 4);
}

TEST_CASE("a FIFO one entry short of the grouped schedule's depth underflows") {
  const sim::RunSpec spec = small(kConfigs[0], "grouped", "none");
  CHECK_THROWS_WITH(PipelineRun(spec, {.short_fifo_stage = 0}),
                    "internal error (this is a bug in ipusim): stash underflow: the FIFO of stage "
                    "0 (capacity 1) holds no entry for micro-batch 1 of weight update 1");
}

TEST_CASE("a FIFO one entry short of 1f1b's depth underflows") {
  const sim::RunSpec spec = small(kConfigs[1], "1f1b", "recompute_and_backpropagate_interleaved");
  CHECK_THROWS_WITH(PipelineRun(spec, {.short_fifo_stage = 0}),
                    "internal error (this is a bug in ipusim): stash underflow: the FIFO of stage "
                    "0 (capacity 1) holds no entry for micro-batch 1 of weight update 1");
}

TEST_CASE("a full ring drops its oldest entry and a read of it underflows") {
  sim::StashFifo fifo("stage 3", 2, false);
  fifo.push(entry(0));
  fifo.push(entry(1));
  fifo.push(entry(2));
  CHECK(fifo.peak_bytes() == 2 * 24);
  CHECK_THROWS_WITH(fifo.pop(0, 0),
                    "internal error (this is a bug in ipusim): stash underflow: the FIFO of stage "
                    "3 (capacity 2) holds no entry for micro-batch 1 of weight update 1");
  CHECK(fifo.pop(0, 1).microbatch == 1);
  CHECK(fifo.pop(0, 2).microbatch == 2);
  CHECK(fifo.empty());
}

TEST_CASE("a Graphcore FIFO shifts its oldest entry into the output tensor") {
  sim::StashFifo fifo("stage 0", 2, true);
  for (int m = 0; m < 3; ++m)
    fifo.push(entry(m, 4));
  CHECK(fifo.peak_bytes() == 2 * 24);
  CHECK(fifo.pop(4, 0).microbatch == 0);  // from the output tensor
  fifo.push(entry(3, 4));
  CHECK(fifo.pop(4, 1).microbatch == 1);
  // Reads are in push order: micro-batch 3 is not next.
  CHECK_THROWS_WITH(fifo.pop(4, 3),
                    "internal error (this is a bug in ipusim): stash underflow: the FIFO of stage "
                    "0 (capacity 2) holds no entry for micro-batch 4 of weight update 5");
  CHECK(fifo.pop(4, 2).microbatch == 2);
  CHECK(fifo.pop(4, 3).microbatch == 3);
  CHECK(fifo.empty());
}

TEST_CASE("a depth-0 Graphcore FIFO is a plain copy") {
  sim::StashFifo fifo("stage 1", 0, true);
  fifo.push(entry(0));
  CHECK_FALSE(fifo.empty());
  CHECK(fifo.peak_bytes() == 0);
  CHECK(fifo.entry_bytes() == 24);
  CHECK(fifo.pop(0, 0).microbatch == 0);
  CHECK(fifo.empty());
}

TEST_CASE("the report gives each micro-batch's loss and the verdict") {
  const sim::RunSpec spec =
      small(kConfigs[0], "grouped", "none", {"pipeline.gradient_accumulation_count=4"});
  const sim::RunReport report = simulate_numeric(spec);
  const std::string text = sim::render_text(report);
  const std::string section = text.substr(text.find("\nNumeric check"));
  CHECK(section ==
        "\nNumeric check: pipelined run against a one-device reference on synthetic (seed 0), 2 "
        "weight update(s) x 4 micro-batch(es) of 4 samples\n"
        "Loss per micro-batch (nats, mean over its samples):\n"
        "  update 1 (mean 2.7091 nats): 2.8513 2.9601 2.4028 2.6224\n"
        "  update 2 (mean 2.0689 nats): 1.8370 2.2017 2.4175 1.8194\n"
        "Bit-identical to the reference: largest |pipelined - reference| 0 nats in losses, 0 in "
        "weights\n");
  const auto json = sim::to_json(report)["numeric"];
  CHECK(json["bit_identical"] == true);
  CHECK(json["max_abs_diff_loss"] == 0.0);
  CHECK(json["max_abs_diff_weights"] == 0.0);
  CHECK(json["losses"].size() == 2);
  CHECK(json["losses"][0][0] == report.numeric->losses[0][0]);
}

TEST_CASE("a long run's report elides the middle weight updates") {
  const sim::RunReport report = simulate_numeric(
      small(kConfigs[0], "1f1b", "none",
            {"pipeline.gradient_accumulation_count=1", "pipeline.repeat_count=12"}));
  const std::string text = sim::render_text(report);
  CHECK(text.find("  update 5 (mean") != std::string::npos);
  CHECK(text.find("\n  ... 2 more update(s)\n  update 8 (mean") != std::string::npos);
  CHECK(text.find("  update 6 ") == std::string::npos);
  CHECK(report.numeric->losses.size() == 12);
}

TEST_CASE("numeric mode on BERT-Large names what it cannot run, in order") {
  const std::string bert = "configs/bert_large_4ipu.json";
  const auto load = [&](const std::vector<std::string>& sets) {
    std::vector<core::Override> overrides;
    for (const auto& set : sets)
      overrides.push_back(core::parse_set_argument(set));
    return sim::load_run_spec(bert, overrides);
  };
  CHECK_THROWS_WITH(simulate_numeric(load({})),
                    "configs/bert_large_4ipu.json: at /pipeline/replication_factor: numeric mode "
                    "runs one replica, but replication_factor is 4");
  CHECK_FALSE(simulate_numeric(load({}), sim::NumericMode::kAuto).numeric);
  CHECK_THROWS_WITH(simulate_numeric(load({"pipeline.replication_factor=1"})),
                    "configs/bert_large_4ipu.json: at /model/layers/28: numeric data give one "
                    "label per sample, but the loss 'loss' takes 20 rows of logits per sample");
}

TEST_CASE("the automatic numeric mode skips replicated runs and says why") {
  const sim::RunSpec spec =
      small(kConfigs[0], "grouped", "none", {"pipeline.replication_factor=2"});
  const sim::RunReport report = simulate_numeric(spec, sim::NumericMode::kAuto);
  CHECK_FALSE(report.numeric);
  CHECK(sim::render_text(report).find("\nNumeric check: skipped (numeric mode runs one replica, "
                                      "but replication_factor is 2)\n") != std::string::npos);
  CHECK(sim::to_json(report)["numeric"].is_null());
}

TEST_CASE("with numeric mode off a run never reads the data set") {
  const sim::RunSpec spec = small(kConfigs[0], "grouped", "none",
                                  {"data.source=\"fashion-mnist\"", "data.path=\"/nonexistent\""});
  CHECK_FALSE(sim::simulate(spec, {}).numeric);
  CHECK_THROWS_WITH(simulate_numeric(spec),
                    "--set data.path=\"/nonexistent\": at /data/path: "
                    "/nonexistent/train-images-idx3-ubyte.gz: file not found");
}

TEST_CASE("eight_bit_io needs 8-bit images, and with Fashion-MNIST's stays bit-identical") {
  CHECK_THROWS_WITH(
      simulate_numeric(small(kConfigs[2], "grouped", "none",
                             {"data.source=\"synthetic\"", "data.eight_bit_io=true"})),
      "--set data.source=\"synthetic\": at /data/source: eight_bit_io sends 8-bit pixels, which "
      "the \"synthetic\" data do not hold; use \"fashion-mnist\"");
  const sim::RunReport report = simulate_numeric(small(
      kConfigs[2], "grouped", "none", {"data.source=\"fashion-mnist\"", "data.eight_bit_io=true"}));
  REQUIRE(report.numeric);
  CHECK(report.numeric->bit_identical);
}

TEST_CASE("a truncated Fashion-MNIST file is named with what is missing") {
  const std::string directory = std::string(IPUSIM_BINARY_DIR) + "/truncated-fashion-mnist";
  std::filesystem::create_directories(directory);
  std::filesystem::copy_file("/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz",
                             directory + "/train-labels-idx1-ubyte.gz",
                             std::filesystem::copy_options::overwrite_existing);
  {
    // An uncompressed IDX header for 60,000 28x28 images followed by 100 bytes.
    std::ofstream images(directory + "/train-images-idx3-ubyte.gz", std::ios::binary);
    const unsigned char header[16] = {0, 0, 8, 3, 0, 0, 0xea, 0x60, 0, 0, 0, 28, 0, 0, 0, 28};
    images.write(reinterpret_cast<const char*>(header), sizeof header);
    images << std::string(100, '\0');
  }
  const sim::RunSpec spec =
      small(kConfigs[0], "grouped", "none",
            {"data.source=\"fashion-mnist\"", "data.path=\"" + directory + "\""});
  CHECK_THROWS_WITH(simulate_numeric(spec),
                    "--set data.path=\"" + directory + "\": at /data/path: " + directory +
                        "/train-images-idx3-ubyte.gz: expected 47040000 bytes of image data, "
                        "found 100");
}

TEST_CASE("inference through the reference model classifies the test images") {
  const sim::RunSpec spec = small(kConfigs[0], "grouped", "none");
  PipelineRun run(spec);
  sim::TestSet test = sim::test_data(spec);
  CHECK(test.first == 60000);
  CHECK(test.count == 10000);
  const models::ParameterStore untrained(spec.model, sim::training_options(spec));
  CHECK(sim::correct_predictions(spec.model, untrained, test).correct == 1061);
  CHECK(sim::correct_predictions(spec.model, run.parameters, test).correct == 3388);
}

TEST_CASE("concurrent sub-stages run their own kernels and match the reference") {
  const std::string path = std::string(IPUSIM_BINARY_DIR) + "/concurrent_numeric.json";
  std::ofstream(path) << R"({
    "model": {"name": "branches", "input": {"shape": [6, 6]}, "classes": 4, "layers": [
      {"id": "flatten", "type": "flatten"},
      {"id": "trunk", "type": "dense", "units": 12, "activation": "relu"},
      {"id": "left", "type": "dense", "units": 8, "activation": "gelu", "inputs": ["trunk"]},
      {"id": "right", "type": "dense", "units": 8, "activation": "tanh", "inputs": ["trunk"]},
      {"id": "both", "type": "concat", "inputs": ["left", "right"]},
      {"id": "logits", "type": "dense", "units": 4},
      {"id": "loss", "type": "softmax_cross_entropy"}]},
    "pipeline": {"stages": [["flatten", "trunk"], [["left"], ["right"]], ["both", "logits", "loss"]],
                 "device_mapping": [0, [1, 2], 3], "micro_batch_size": 3,
                 "gradient_accumulation_count": 12, "repeat_count": 2,
                 "optimizer": {"type": "adam", "learning_rate": 0.01}},
    "hardware": {"preset": "gc200"},
    "data": {"source": "synthetic", "seed": 3}})";
  for (const char* schedule : {"grouped", "1f1b"}) {
    const sim::RunSpec spec = sim::load_run_spec(
        path,
        {core::parse_set_argument("pipeline.pipeline_schedule=\"" + std::string(schedule) + "\"")});
    const sim::RunReport report = simulate_numeric(spec);
    INFO(schedule);
    REQUIRE(report.numeric);
    CHECK(report.numeric->bit_identical);
    CHECK(report.numeric->losses[0].size() == 12);
  }
}

TEST_CASE("a small transformer pipelined over two stages equals the reference bit for bit") {
  // Token ids, types and a padding mask as the rows of the model input; two encoder layers;
  // the first position classified, through a pooler and a batch norm.
  const std::string path = std::string(IPUSIM_BINARY_DIR) + "/transformer_numeric.json";
  std::ofstream(path) << R"({
    "model": {"name": "tiny_bert", "input": {"shape": [3, 8]}, "classes": 16, "layers": [
      {"id": "rows", "type": "input"},
      {"id": "ids_row", "type": "slice", "axis": 0, "size": 1, "inputs": ["rows"]},
      {"id": "ids", "type": "flatten"},
      {"id": "types_row", "type": "slice", "axis": 0, "start": 1, "size": 1, "inputs": ["rows"]},
      {"id": "types", "type": "flatten"},
      {"id": "mask_row", "type": "slice", "axis": 0, "start": 2, "size": 1, "inputs": ["rows"]},
      {"id": "mask", "type": "flatten"},
      {"id": "embeddings", "type": "embedding", "vocab_size": 16, "hidden": 8,
       "sequence_length": 8, "token_types": 2, "inputs": ["ids", "types"]},
      {"id": "encoder1", "type": "transformer_encoder", "hidden": 8, "heads": 2,
       "sequence_length": 8, "ffn": 16, "inputs": ["embeddings", "mask"]},
      {"id": "encoder2", "type": "transformer_encoder", "hidden": 8, "heads": 2,
       "sequence_length": 8, "ffn": 16, "inputs": ["encoder1", "mask"]},
      {"id": "first", "type": "slice", "axis": 0, "size": 1},
      {"id": "pooled", "type": "flatten"},
      {"id": "pooler", "type": "dense", "units": 8, "activation": "tanh"},
      {"id": "bn", "type": "batch_norm"},
      {"id": "logits", "type": "dense", "units": 16},
      {"id": "loss", "type": "softmax_cross_entropy"}]},
    "pipeline": {"splits": ["encoder2"], "micro_batch_size": 3,
                 "gradient_accumulation_count": 4, "repeat_count": 2,
                 "optimizer": {"type": "adam", "learning_rate": 0.01}},
    "hardware": {"preset": "gc200"},
    "data": {"source": "synthetic_tokens", "seed": 5}})";
  std::optional<std::vector<std::vector<float>>> first_losses;
  for (const auto& [schedule, modes] : kSchedules) {
    if (schedule != "grouped" && schedule != "1f1b")
      continue;
    for (const auto& mode : modes) {
      for (const char* dtype : {"fp32", "fp16"}) {
        const sim::RunSpec spec = sim::load_run_spec(
            path, {core::parse_set_argument("pipeline.pipeline_schedule=\"" + schedule + "\""),
                   core::parse_set_argument("pipeline.recomputation_mode=\"" + mode + "\""),
                   core::parse_set_argument("pipeline.dtype=\"" + std::string(dtype) + "\"")});
        const sim::RunReport report = simulate_numeric(spec);
        INFO(schedule << " " << mode << " " << dtype);
        check_bit_identical(report);
        REQUIRE(report.numeric->losses.size() == 2);
        CHECK(std::isfinite(report.numeric->losses[1][3]));
        if (std::string(dtype) == "fp32") {
          if (!first_losses)
            first_losses = report.numeric->losses;
          CHECK(report.numeric->losses == *first_losses);
        }
      }
    }
  }
}

TEST_CASE("numeric mode on a token model needs token data and one label per sample") {
  const std::string path = std::string(IPUSIM_BINARY_DIR) + "/token_data.json";
  std::ofstream(path) << R"({
    "model": {"name": "tokens", "input": {"shape": [4]}, "layers": [
      {"id": "embeddings", "type": "embedding", "vocab_size": 10, "hidden": 4,
       "sequence_length": 4},
      {"id": "logits", "type": "dense", "units": 10},
      {"id": "loss", "type": "softmax_cross_entropy"}]},
    "pipeline": {"micro_batch_size": 2, "gradient_accumulation_count": 2},
    "data": "synthetic"})";
  const auto load = [&](const std::vector<std::string>& sets) {
    std::vector<core::Override> overrides;
    for (const auto& set : sets)
      overrides.push_back(core::parse_set_argument(set));
    return sim::load_run_spec(path, overrides);
  };
  CHECK_THROWS_WITH(simulate_numeric(load({})),
                    path +
                        ": at /model/layers/2: numeric data give one label per sample, but "
                        "the loss 'loss' takes 4 rows of logits per sample");
  const std::string pooled_path = std::string(IPUSIM_BINARY_DIR) + "/token_data_pooled.json";
  std::ofstream(pooled_path) << R"({
    "model": {"name": "tokens", "input": {"shape": [4]}, "layers": [
      {"id": "embeddings", "type": "embedding", "vocab_size": 10, "hidden": 4,
       "sequence_length": 4},
      {"id": "flat", "type": "flatten"},
      {"id": "logits", "type": "dense", "units": 10},
      {"id": "loss", "type": "softmax_cross_entropy"}]},
    "pipeline": {"micro_batch_size": 2, "gradient_accumulation_count": 2},
    "data": {"source": "synthetic"}})";
  CHECK_THROWS_WITH(simulate_numeric(sim::load_run_spec(pooled_path, {})),
                    pooled_path +
                        ": at /data/source: layer 'embeddings' (embedding) reads token "
                        "ids, which the \"synthetic\" data do not hold; use "
                        "\"synthetic_tokens\"");
  const sim::RunSpec tokens = sim::load_run_spec(
      pooled_path, {core::parse_set_argument("data.source=\"synthetic_tokens\"")});
  const sim::RunReport report = simulate_numeric(tokens);
  REQUIRE(report.numeric);
  CHECK(report.numeric->bit_identical);
}

namespace {

// Token ids through an embedding and an encoder in stage 0 (IPU0), a second encoder in stage 1
// (IPU1), and the first position decoded by a dense layer tied to the word matrix in stage 2,
// back on IPU0.
const char* const kTiedModel = R"({
    "model": {"name": "tiny_tied", "input": {"shape": [8]}, "classes": 16, "layers": [
      {"id": "embeddings", "type": "embedding", "vocab_size": 16, "hidden": 8,
       "sequence_length": 8},
      {"id": "encoder1", "type": "transformer_encoder", "hidden": 8, "heads": 2,
       "sequence_length": 8, "ffn": 16},
      {"id": "encoder2", "type": "transformer_encoder", "hidden": 8, "heads": 2,
       "sequence_length": 8, "ffn": 16},
      {"id": "first", "type": "slice", "axis": 0, "size": 1},
      {"id": "pooled", "type": "flatten"},
      {"id": "decoder", "type": "dense", "units": 16, "tied_to": "embeddings"},
      {"id": "loss", "type": "softmax_cross_entropy"}]},
    "pipeline": {"splits": ["encoder2", "first"], "device_mapping": [0, 1, 0],
                 "micro_batch_size": 3, "gradient_accumulation_count": 6, "repeat_count": 2,
                 "optimizer": {"type": "adam", "learning_rate": 0.01}},
    "hardware": {"preset": "gc200"},
    "data": {"source": "synthetic_tokens", "seed": 5}})";

// Each test writes its own copy: CTest runs the test cases in parallel, and one writing the file
// while another reads it would read a partial config.
std::string tied_model_path(const std::string& name) {
  const std::string path = std::string(IPUSIM_BINARY_DIR) + "/" + name + ".json";
  std::ofstream(path) << kTiedModel;
  return path;
}

}  // namespace

TEST_CASE("a dense layer tied to an embedding two stages later equals the reference bit for bit") {
  const std::string path = tied_model_path("tied_numeric_schedules");
  std::optional<std::vector<std::vector<float>>> first_losses;
  // 1f1b, gpipe and zero-bubble run one stage per IPU, interleaved refuses two stages on one
  // IPU for training: grouped and sequential are the schedules this layout runs under.
  for (const auto& [schedule, modes] : kSchedules) {
    if (schedule != "grouped" && schedule != "sequential")
      continue;
    for (const auto& mode : modes) {
      for (const char* dtype : {"fp32", "fp16"}) {
        const sim::RunSpec spec = sim::load_run_spec(
            path, {core::parse_set_argument("pipeline.pipeline_schedule=\"" + schedule + "\""),
                   core::parse_set_argument("pipeline.recomputation_mode=\"" + mode + "\""),
                   core::parse_set_argument("pipeline.dtype=\"" + std::string(dtype) + "\"")});
        const sim::RunReport report = simulate_numeric(spec);
        INFO(schedule << " " << mode << " " << dtype);
        check_bit_identical(report);
        REQUIRE(report.numeric->losses.size() == 2);
        CHECK(std::isfinite(report.numeric->losses[1][3]));
        if (std::string(dtype) == "fp32") {
          if (!first_losses)
            first_losses = report.numeric->losses;
          CHECK(report.numeric->losses == *first_losses);
        }
      }
    }
  }
}

TEST_CASE("the tied word matrix is held and accumulated once, under the embedding") {
  const sim::RunSpec spec = sim::load_run_spec(tied_model_path("tied_numeric_store"), {});
  const models::Model& model = spec.model;
  const models::ParameterStore store(model, sim::training_options(spec));
  const int embedding = model.index_of("embeddings");
  const int decoder = model.index_of("decoder");
  // The decoder owns its bias only; its kernel takes the word matrix first.
  REQUIRE(store.parameters(decoder).size() == 1);
  CHECK(store.parameters(decoder)[0].shape() == models::Shape{16});
  CHECK(store.parameters(embedding)[0].shape() == models::Shape{16, 8});
  std::vector<models::Tensor> scratch;
  const auto taken = store.kernel_parameters(decoder, scratch);
  REQUIRE(taken.size() == 2);
  CHECK(models::bit_identical(taken[0], store.parameters(embedding)[0]));
  // Every stored parameter and every reduced gradient is counted as the cost model counts them.
  std::int64_t stored = 0;
  for (int layer = 0; layer < static_cast<int>(model.layers.size()); ++layer) {
    for (const models::Tensor& tensor : store.parameters(layer))
      stored += tensor.elements();
  }
  std::int64_t counted = 0;
  for (const models::LayerInfo& info : model.info)
    counted += info.params;
  CHECK(stored == counted);
  // The cost model accumulates (and would all-reduce) the word matrix once, in fp32.
  const sim::CostModel cost = sim::build_cost_model(spec);
  REQUIRE(cost.gradient_bytes.size() == 2);
  CHECK(cost.gradient_bytes[0] + cost.gradient_bytes[1] == counted * 4);
  CHECK(model.info[static_cast<std::size_t>(decoder)].params == 16);
  CHECK(sim::parameter_names(model, decoder) == std::vector<std::string>{"decoder.bias"});
  CHECK(sim::parameter_names(model, embedding).front() == "embeddings.embeddings");
}

TEST_CASE(
    "the tied word matrix's gradient is the sum of both uses' and matches finite "
    "differences") {
  // The whole model as one stage, fp32, one micro-batch: the reduced gradient of the word matrix is
  // the gradient of the loss through the lookup and through the decoder.
  const sim::RunSpec spec = sim::load_run_spec(tied_model_path("tied_numeric_gradient"), {});
  const models::Model& model = spec.model;
  models::ParameterStore store(model, sim::training_options(spec));
  auto data = sim::training_data(spec);
  models::Tensor inputs;
  std::vector<int> labels;
  sim::micro_batch(spec, *data, 0, 0, inputs, labels);
  std::vector<int> all(model.layers.size());
  for (std::size_t i = 0; i < all.size(); ++i)
    all[i] = static_cast<int>(i);
  models::StageExecutor whole(model, all, spec.pipeline.micro_batch_size, store);
  const int last = static_cast<int>(model.layers.size()) - 1;
  const auto loss = [&] {
    return double(
        whole.forward({{models::kModelInput, inputs}}, {0, 0, labels}).outputs.at(last)[0]);
  };
  whole.backward({}, whole.forward({{models::kModelInput, inputs}}, {0, 0, labels}).stash);
  const int embedding = model.index_of("embeddings");
  const int decoder = model.index_of("decoder");
  const models::Tensor through_lookup = store.gradients(embedding)[0].result();
  const models::Tensor through_decoder = store.gradients(decoder)[0].result();
  const models::Tensor summed = store.reduced_gradients(embedding).at(0);
  models::Tensor& word = store.mutable_parameters(embedding)[0];
  const float h = 1e-2f;
  int checked = 0;
  for (std::int64_t e = 0; e < word.elements(); e += 7) {
    CHECK(summed[e] == through_lookup[e] + through_decoder[e]);
    const float saved = word[e];
    word[e] = saved + h;
    const double up = loss();
    word[e] = saved - h;
    const double down = loss();
    word[e] = saved;
    const double numeric = (up - down) / (2.0 * double(h));
    INFO("element " << e);
    CHECK(summed[e] == Approx(numeric).margin(2e-3).epsilon(2e-2));
    ++checked;
  }
  CHECK(checked == 19);
  // Both uses contribute: the decoder's part alone is not the gradient.
  double decoder_norm = 0;
  for (std::int64_t e = 0; e < through_decoder.elements(); ++e)
    decoder_norm += std::abs(double(through_decoder[e]));
  CHECK(decoder_norm > 0);
}

TEST_CASE("masked-token labels give the loss one target per masked token") {
  const std::string path = std::string(IPUSIM_BINARY_DIR) + "/masked_tokens.json";
  std::ofstream(path) << R"({
    "model": {"name": "mlm", "input": {"shape": [6]}, "layers": [
      {"id": "embeddings", "type": "embedding", "vocab_size": 10, "hidden": 4,
       "sequence_length": 6},
      {"id": "encoder", "type": "transformer_encoder", "hidden": 4, "heads": 2,
       "sequence_length": 6, "ffn": 8},
      {"id": "decoder", "type": "dense", "units": 10, "tied_to": "embeddings"},
      {"id": "loss", "type": "softmax_cross_entropy"}]},
    "pipeline": {"splits": ["encoder", "decoder"], "device_mapping": [0, 1, 0],
                 "micro_batch_size": 2, "gradient_accumulation_count": 6},
    "data": {"source": "synthetic_tokens", "labels": "masked_tokens",
             "mask_probability": 0.3}})";
  const auto load = [&](const std::vector<std::string>& sets) {
    std::vector<core::Override> overrides;
    for (const auto& set : sets)
      overrides.push_back(core::parse_set_argument(set));
    return sim::load_run_spec(path, overrides);
  };
  const sim::RunReport report = simulate_numeric(load({}));
  REQUIRE(report.numeric);
  CHECK(report.numeric->bit_identical);
  CHECK(report.numeric->losses == report.numeric->reference_losses);
  CHECK_THROWS_WITH(
      load({"data.source=\"synthetic\""}),
      path + ": at /data/labels: labels are chosen for \"synthetic_tokens\" data only");
  CHECK_THROWS_WITH(load({"data.labels=\"class\""}),
                    path +
                        ": at /data/mask_probability: a mask probability needs \"labels\": "
                        "\"masked_tokens\"");
  CHECK_THROWS_WITH(load({"data.mask_probability=0"}),
                    "--set data.mask_probability=0: at /data/mask_probability: expected a "
                    "number in (0, 1]");
  CHECK_THROWS_WITH(load({"data.labels=\"tokens\""}),
                    Catch::Contains("at /data/labels") && Catch::Contains("masked_tokens"));
  // Refused where the config is read, for every command, not only numeric runs.
  CHECK_THROWS_WITH(load({"model.layers.0.vocab_size=3", "model.layers.2.units=3"}),
                    path +
                        ": at /data/labels: masked-token labels need a vocabulary of at least 4 "
                        "ids (0 for padding and the last for [MASK]), but layer 'embeddings' "
                        "(embedding) has vocab_size 3");
}

TEST_CASE("masked-token data for a loss with one row per sample is refused") {
  const std::string path = std::string(IPUSIM_BINARY_DIR) + "/masked_pooled.json";
  std::ofstream(path) << R"({
    "model": {"name": "pooled", "input": {"shape": [6]}, "layers": [
      {"id": "embeddings", "type": "embedding", "vocab_size": 10, "hidden": 4,
       "sequence_length": 6},
      {"id": "flat", "type": "flatten"},
      {"id": "logits", "type": "dense", "units": 10},
      {"id": "loss", "type": "softmax_cross_entropy"}]},
    "pipeline": {"micro_batch_size": 2, "gradient_accumulation_count": 2},
    "data": {"source": "synthetic_tokens", "labels": "masked_tokens"}})";
  CHECK_THROWS_WITH(simulate_numeric(sim::load_run_spec(path, {})),
                    path +
                        ": at /model/layers/3: \"masked_tokens\" data give one label per "
                        "token, 6 per sample, but the loss 'loss' takes 1 rows of logits per "
                        "sample");
}

TEST_CASE("the tiny BERT with its tied MLM head equals the reference under each schedule") {
  // Grouped and sequential run the config's layout, the head beside the embeddings on IPU0. The
  // schedules with one stage per IPU run four stages, the head on IPU3 with a copy of the word
  // matrix whose gradient IPU0 sums into its update.
  const std::vector<std::string> one_stage_per_ipu = {
      "pipeline.splits=[\"encoder2\",\"encoder3\",\"encoder4\"]",
      "pipeline.device_mapping=[0,1,2,3]"};
  std::optional<std::vector<std::vector<float>>> first_losses;
  for (const auto& [schedule, modes] : kSchedules) {
    for (const auto& mode : modes) {
      std::vector<std::string> sets = {"data.source=\"synthetic_tokens\"",
                                       "pipeline.gradient_accumulation_count=10"};
      if (schedule != "grouped" && schedule != "sequential") {
        sets.insert(sets.end(), one_stage_per_ipu.begin(), one_stage_per_ipu.end());
        sets.push_back("pipeline.gradient_accumulation_count=8");
      }
      const sim::RunReport report =
          simulate_numeric(small("configs/bert_tiny_4ipu.json", schedule, mode, sets));
      INFO(schedule << " " << mode);
      check_bit_identical(report);
      if (!first_losses)
        first_losses = report.numeric->losses;
      if (report.numeric->losses.front().size() == first_losses->front().size())
        CHECK(report.numeric->losses == *first_losses);
    }
  }
}

TEST_CASE("the tiny U-Net's skip across three stages equals the reference under each schedule") {
  for (const auto& [schedule, modes] : kSchedules) {
    for (const auto& mode : modes) {
      INFO(schedule << " " << mode);
      check_bit_identical(
          simulate_numeric(small("configs/unet_tiny_fashion_mnist.json", schedule, mode,
                                 {"pipeline.gradient_accumulation_count=12"})));
    }
  }
}

TEST_CASE("the tiny GPT with its tied LM head equals the reference on next-token labels") {
  // Grouped and sequential run the config's layout, the LM head back on IPU0 beside the word
  // matrix; the schedules with one stage per IPU run two stages.
  const std::vector<std::string> one_stage_per_ipu = {"pipeline.splits=[\"block2.ln1\"]",
                                                      "pipeline.device_mapping=[0,1]"};
  for (const auto& [schedule, modes] : kSchedules) {
    for (const auto& mode : modes) {
      std::vector<std::string> sets = {"data.source=\"synthetic_tokens\"",
                                       "data.labels=\"next_token\"",
                                       "pipeline.gradient_accumulation_count=12"};
      if (schedule != "grouped" && schedule != "sequential")
        sets.insert(sets.end(), one_stage_per_ipu.begin(), one_stage_per_ipu.end());
      const sim::RunReport report =
          simulate_numeric(small("configs/gpt_tiny_2ipu.json", schedule, mode, sets));
      INFO(schedule << " " << mode);
      check_bit_identical(report);
      // 48 ids, no update yet: the first loss is near ln 48 = 3.871.
      CHECK(std::abs(report.numeric->losses.front().front() - std::log(48.0)) < 0.1);
    }
  }
}

TEST_CASE(
    "a checkpoint at every layer keeps the reference's numbers and its FIFO the model's bytes") {
  const std::vector<std::string> every = {"pipeline.recompute_checkpoint_every_layer=true"};
  for (const auto& config : kConfigs) {
    for (const std::string schedule : {"grouped", "gpipe", "1f1b"}) {
      INFO(config << " " << schedule);
      const sim::RunSpec spec =
          small(config, schedule, "recompute_and_backpropagate_interleaved", every);
      check_bit_identical(simulate_numeric(spec));
      const PipelineRun run(spec);
      const auto depth = spec.schedule->stash_depth();
      for (int s = 0; s < static_cast<int>(spec.pipeline.stages.size()); ++s) {
        CHECK(run.pipeline.fifo(s, 0).entry_bytes() == run.cost.substage(s, 0).stash_bytes);
        CHECK(run.pipeline.fifo(s, 0).peak_bytes() ==
              depth[s] * run.cost.substage(s, 0).stash_bytes);
      }
    }
  }
}

TEST_CASE("the dense checkpoint model stashes its input and d1's output per micro-batch") {
  const sim::RunSpec spec = sim::load_run_spec(
      "tests/tools/data/dense_checkpoints.json",
      {core::parse_set_argument("pipeline.recompute_checkpoint_every_layer=true")});
  check_bit_identical(simulate_numeric(spec));
  // 2 samples x (8 + 16) fp32, in a FIFO of depth 2.
  const PipelineRun run(spec);
  CHECK(run.pipeline.fifo(0, 0).entry_bytes() == 192);
  CHECK(run.pipeline.fifo(0, 0).peak_bytes() == 384);
}
