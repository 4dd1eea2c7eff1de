#include "tests/tools/cli_support.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sim/core/format.hpp"

namespace {

using namespace ipusim::testing;

// Runs `validate` on the base config with one override and returns the error text.
std::string override_error(const std::string& set) {
  const auto result = run_ipusim({"validate", kBaseConfig, "--set", set});
  CHECK(result.code == 2);
  CHECK(result.out.empty());
  return result.err;
}

}  // namespace

TEST_CASE("every shipped config validates") {
  for (const char* config :
       {"configs/tf1_mnist_2ipu.json", "configs/popxl_mnist_3stage.json",
        "configs/keras_cnn_2stage.json", "configs/bert_large_4ipu.json",
        "configs/resnet50_1ipu.json", "configs/resnet_tiny_fashion_mnist.json"}) {
    const auto result = run_ipusim({"validate", config});
    INFO(config << ": " << result.err);
    CHECK(result.code == 0);
    CHECK(result.out.rfind("ok: ", 0) == 0);
  }
}

TEST_CASE("model prints ResNet-50's trainable parameters and its running statistics apart") {
  const auto result = run_ipusim({"model", "configs/resnet50_1ipu.json"});
  CHECK(result.code == 0);
  // torchvision's 25,557,032; Keras' 53,120 non-trainable: a running mean and variance for each
  // of the 64 + 26,496 batch-normalised channels (stem; 6 w per bottleneck of width w plus 4 w
  // per projection: 3 x 6 x 64 + 256, 4 x 6 x 128 + 512, 6 x 6 x 256 + 1024, 3 x 6 x 512 + 2048).
  CHECK(2 * (64 + (3 * 6 * 64 + 256) + (4 * 6 * 128 + 512) + (6 * 6 * 256 + 1024) +
             (3 * 6 * 512 + 2048)) ==
        53120);
  CHECK(result.out.find("Total params: 25,610,152\nTrainable params: 25,557,032\n"
                        "Non-trainable params: 53,120\n") != std::string::npos);
}

TEST_CASE("ResNet-50 on one IPU fits at micro-batch 8 and not at 16") {
  CHECK(run_ipusim({"run", "configs/resnet50_1ipu.json", "--no-numeric", "--quiet"}).code == 0);
  const auto result = run_ipusim({"run", "configs/resnet50_1ipu.json", "--no-numeric", "--quiet",
                                  "--set", "pipeline.micro_batch_size=16"});
  CHECK(result.code == 3);
  CHECK(result.err.find("out of memory: IPU0") != std::string::npos);
}

// ResNet-50's forward is 4.1 G multiply-adds (8.2 GFLOP) an image and its backward twice that:
// about 24.6 GFLOP x 64 images a step x 2 (pipeline and reference) = 3.15 TFLOP, 3.18 with the
// batch norms, activations and adds.
TEST_CASE("automatic numeric mode skips a run whose kernels would take minutes, and says why") {
  const auto result = run_ipusim({"run", "configs/resnet50_1ipu.json"});
  CHECK(result.code == 0);
  CHECK(result.out.find("\nNumeric check: skipped (its kernels would run 3.18 TFLOP, pipeline and "
                        "reference, beyond the 200 GFLOP numeric mode runs unasked; --numeric "
                        "runs them)\n") != std::string::npos);
}

TEST_CASE("validate prints ok and a one-line summary of the run") {
  const auto result = run_ipusim({"validate", "configs/tf1_mnist_2ipu.json"});
  CHECK(result.out ==
        "ok: tf1_mnist: 7 layers, 244,522 parameters, 2 stage(s) on 2 IPU(s) x 1 replica(s) of "
        "gc200, grouped schedule, gradient accumulation 16, micro-batch 32, repeat count 10\n");
}

TEST_CASE("the short what-if options override the config like --set") {
  const auto result =
      run_ipusim({"validate", "configs/tf1_mnist_2ipu.json", "--schedule", "interleaved", "--gac",
                  "8", "--micro-batch", "4", "--splits", "dense128,dense64,dense32"});
  CHECK(result.err.empty());
  CHECK(result.out ==
        "ok: tf1_mnist: 7 layers, 244,522 parameters, 4 stage(s) on 4 IPU(s) x 1 replica(s) of "
        "gc200, interleaved schedule, gradient accumulation 8, micro-batch 4, repeat count 10\n");
}

TEST_CASE("an IPU count that is not a power of two is rounded up and the output notes it") {
  const auto result = run_ipusim(
      {"validate", "configs/tf1_mnist_2ipu.json", "--splits", "dense128,dense32", "--gac", "12"});
  CHECK(result.out.find("note: the pipeline uses 3 IPUs; the device has 4 because multi-IPU "
                        "devices come in powers of two\n") != std::string::npos);
}

TEST_CASE("a misspelt key in an override is named with the override and a suggestion") {
  CHECK(override_error("pipeline.gradient_acumulation_count=8") ==
        "error: --set pipeline.gradient_acumulation_count=8: at "
        "/pipeline/gradient_acumulation_count: unknown key 'gradient_acumulation_count'; did you "
        "mean 'gradient_accumulation_count'?\n");
}

TEST_CASE("a value of the wrong type is refused") {
  CHECK(override_error("pipeline.micro_batch_size=\"eight\"") ==
        "error: --set pipeline.micro_batch_size=\"eight\": at /pipeline/micro_batch_size: "
        "expected an integer from 1 to 16777216, found a string \"eight\"\n");
}

TEST_CASE("a non-positive count is refused") {
  CHECK(override_error("pipeline.gradient_accumulation_count=0") ==
        "error: --set pipeline.gradient_accumulation_count=0: at "
        "/pipeline/gradient_accumulation_count: expected an integer from 1 to 1099511627776, "
        "found 0\n");
}

TEST_CASE("an overflowing count is refused") {
  CHECK(override_error("pipeline.repeat_count=99999999999999999999") ==
        "error: --set pipeline.repeat_count=99999999999999999999: at /pipeline/repeat_count: "
        "expected an integer from 1 to 1099511627776, found 1e+20\n");
}

TEST_CASE("a memory beyond 1 PB per IPU is refused as implausible") {
  CHECK(override_error("hardware.memory_per_ipu=2PB") ==
        "error: --set hardware.memory_per_ipu=2PB: at /hardware/memory_per_ipu: a memory of "
        "more than 1 PB per IPU is not plausible\n");
}

TEST_CASE("an unparsable unit is refused with the expected form") {
  CHECK(override_error("hardware.clock=1.33GB/s") ==
        "error: --set hardware.clock=1.33GB/s: at /hardware/clock: cannot read \"1.33GB/s\" as a "
        "frequency: 'GB/s' is the unit of a bandwidth (write it like \"1.33GHz\")\n");
}

TEST_CASE("a missing required field is named") {
  CHECK(override_error("model.input={\"dtype\": \"fp32\"}") ==
        "error: --set model.input={\"dtype\": \"fp32\"}: at /model/input: missing required field "
        "'shape'\n");
}

TEST_CASE("a split naming no layer suggests the closest layer id") {
  CHECK(override_error("pipeline.splits=[\"fc3\"]") ==
        "error: --set pipeline.splits=[\"fc3\"]: at /pipeline/splits/0: no layer has the id "
        "'fc3'; did you mean 'fc1'?\n");
}

TEST_CASE("an unknown schedule suggests the closest schedule") {
  CHECK(override_error("pipeline.pipeline_schedule=groupd") ==
        "error: --set pipeline.pipeline_schedule=groupd: at /pipeline/pipeline_schedule: unknown "
        "value 'groupd'; did you mean 'grouped'?\n");
}

TEST_CASE("LAMB's keys are checked, a misspelt one with the closest key") {
  CHECK(override_error("pipeline.optimizer={\"type\": \"lamb\", \"weight_decay_rate\": 0.01}") ==
        "error: --set pipeline.optimizer={\"type\": \"lamb\", \"weight_decay_rate\": 0.01}: at "
        "/pipeline/optimizer/weight_decay_rate: unknown key 'weight_decay_rate'; did you mean "
        "'weight_decay'?\n");
  CHECK(override_error("pipeline.optimizer={\"type\": \"lamb\", \"weight_decay\": 1.5}") ==
        "error: --set pipeline.optimizer={\"type\": \"lamb\", \"weight_decay\": 1.5}: at "
        "/pipeline/optimizer/weight_decay: expected a number in [0, 1)\n");
  CHECK(override_error("pipeline.optimizer={\"type\": \"lam\"}") ==
        "error: --set pipeline.optimizer={\"type\": \"lam\"}: at /pipeline/optimizer/type: "
        "unknown value 'lam'; did you mean 'lamb'?\n");
}

TEST_CASE("LARS takes momentum, weight decay, eta and epsilon, and no moment dtypes") {
  CHECK(override_error("pipeline.optimizer={\"type\": \"lars\", \"m_dtype\": \"fp16\"}") ==
        "error: --set pipeline.optimizer={\"type\": \"lars\", \"m_dtype\": \"fp16\"}: at "
        "/pipeline/optimizer/m_dtype: unknown key 'm_dtype'; the keys allowed here are 'type', "
        "'learning_rate', 'momentum', 'weight_decay', 'eta' or 'epsilon'\n");
  CHECK(override_error("pipeline.optimizer={\"type\": \"lars\", \"epsilon\": -1}") ==
        "error: --set pipeline.optimizer={\"type\": \"lars\", \"epsilon\": -1}: at "
        "/pipeline/optimizer/epsilon: expected a number in [0, 1)\n");
}

TEST_CASE("eight_bit_io is refused for a model whose input is token ids") {
  const auto result =
      run_ipusim({"validate", "configs/bert_tiny_4ipu.json", "--set", "data.eight_bit_io=true"});
  CHECK(result.code == 2);
  CHECK(result.err ==
        "error: --set data.eight_bit_io=true: at /data/eight_bit_io: eight_bit_io sends images to "
        "the IPU as 8-bit integers, but layer 'embeddings' (embedding) reads token ids from the "
        "model input\n");
}

TEST_CASE("the moments' dtypes are fp32 or fp16") {
  CHECK(override_error("pipeline.optimizer={\"type\": \"adam\", \"m_dtype\": \"fp8\"}") ==
        "error: --set pipeline.optimizer={\"type\": \"adam\", \"m_dtype\": \"fp8\"}: at "
        "/pipeline/optimizer/m_dtype: unknown value 'fp8'; did you mean 'fp32'?\n");
  CHECK(override_error("pipeline.optimizer={\"type\": \"sgd\", \"v_dtype\": \"fp16\"}") ==
        "error: --set pipeline.optimizer={\"type\": \"sgd\", \"v_dtype\": \"fp16\"}: at "
        "/pipeline/optimizer/v_dtype: unknown key 'v_dtype'; the keys allowed here are "
        "'type' or 'learning_rate'\n");
}

TEST_CASE("a stash dtype must be a known type and have a recomputing stash to act on") {
  CHECK(override_error("pipeline.stash_dtype=bf16") ==
        "error: --set pipeline.stash_dtype=bf16: at /pipeline/stash_dtype: unknown value 'bf16'; "
        "did you mean 'fp16'?\n");
  CHECK(override_error("pipeline.stash_dtype=fp8") ==
        "error: --set pipeline.stash_dtype=fp8: at /pipeline/stash_dtype: stash_dtype sets the "
        "type of the stage inputs and checkpoints a recomputing pipeline stashes, and this run "
        "stashes none (recomputation_mode none under the grouped schedule): use "
        "recompute_then_backpropagate, recompute_and_backpropagate_interleaved or auto\n");
  const auto fp8 =
      run_ipusim({"validate", kBaseConfig, "--set", "pipeline.stash_dtype=fp8", "--set",
                  "pipeline.recomputation_mode=recompute_then_backpropagate"});
  CHECK(fp8.err.empty());
  CHECK(fp8.code == 0);
}

TEST_CASE("a checkpoint at every layer needs a recomputation that restarts from checkpoints") {
  const std::string why =
      "recompute_checkpoint_every_layer stashes each layer's output for the backward to "
      "recompute from, and ";
  const std::string set = "pipeline.recompute_checkpoint_every_layer=true";
  const std::string at =
      "error: --set " + set + ": at /pipeline/recompute_checkpoint_every_layer: ";
  const std::string advice =
      ": set recomputation_mode to recompute_and_backpropagate_interleaved (or auto, which picks "
      "it where the schedule has it); recompute_then_backpropagate refuses it too, as it rebuilds "
      "each stage whole from its inputs\n";
  CHECK(override_error(set) == at + why +
                                   "this run recomputes from no checkpoints (recomputation_mode "
                                   "none under the grouped schedule)" +
                                   advice);
  const auto then = run_ipusim({"validate", kBaseConfig, "--set", set, "--set",
                                "pipeline.recomputation_mode=recompute_then_backpropagate"});
  CHECK(then.code == 2);
  CHECK(then.err == at + why +
                        "this run recomputes from no checkpoints (recomputation_mode "
                        "recompute_then_backpropagate under the grouped schedule)" +
                        advice);
  // Sequential keeps each stage's inputs and checkpoints until its backward, as Graphcore's
  // one-IPU ResNet-50 pipelines place checkpoints.
  const auto sequential =
      run_ipusim({"validate", kBaseConfig, "--schedule", "sequential", "--set", set, "--set",
                  "pipeline.recomputation_mode=recompute_and_backpropagate_interleaved"});
  CHECK(sequential.code == 0);
  CHECK(sequential.err.empty());
  // auto picks the interleaved recomputation for the grouped schedule.
  const auto picked = run_ipusim(
      {"validate", kBaseConfig, "--set", set, "--set", "pipeline.recomputation_mode=auto"});
  CHECK(picked.code == 0);
  CHECK(picked.err.empty());
}

TEST_CASE("run --json's operations show each layer's forward recomputed once, the loss never") {
  const std::string json = scratch("dense_checkpoints.json");
  const auto result =
      run_ipusim({"run", "tests/tools/data/dense_checkpoints.json", "--no-numeric", "--quiet",
                  "--set", "pipeline.recompute_checkpoint_every_layer=true", "--json", json});
  REQUIRE(result.code == 0);
  const auto report = nlohmann::json::parse(std::ifstream(json));
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> by_layer;  // forward, recompute
  for (const auto& op : report.at("operations")) {
    auto& [forward, recompute] = by_layer[op.at("layer").get<std::string>()];
    forward += op.at("forward_cycles").get<std::int64_t>();
    recompute += op.at("recompute_cycles").get<std::int64_t>();
  }
  for (const std::string layer : {"d1", "d2", "d3", "d4"}) {
    INFO(layer);
    CHECK(by_layer.at(layer).second == by_layer.at(layer).first);
    CHECK(by_layer.at(layer).first > 0);
  }
  // The loss, after the final stage's last checkpoint d4, is kept from its forward.
  CHECK(by_layer.at("loss").second == 0);
}

TEST_CASE("an unknown layer type names the file and the layer and suggests a type") {
  const auto result = run_ipusim({"validate", "tests/tools/data/unknown_type.json"});
  CHECK(result.code == 2);
  CHECK(result.err ==
        "error: tests/tools/data/unknown_type.json: at /model/layers/2/type: "
        "unknown layer type 'softmax_crossentropy'; did you mean "
        "'softmax_cross_entropy'?\n");
}

TEST_CASE("a missing config file is a config error, not a crash") {
  const auto result = run_ipusim({"model", "tests/tools/data/absent.json"});
  CHECK(result.code == 2);
  CHECK(result.err ==
        "error: tests/tools/data/absent.json: cannot read config file "
        "'tests/tools/data/absent.json': No such file or directory\n");
}

TEST_CASE("a bad command line is a usage error with its own exit code") {
  const auto result = run_ipusim({"validate"});
  CHECK(result.code == 1);
  CHECK(result.err == "error: config is required\n");
}

TEST_CASE("every command has help with an example, and --version prints the version") {
  for (const char* command : {"validate", "model", "schedule"}) {
    const auto help = run_ipusim({command, "--help"});
    CHECK(help.code == 0);
    CHECK(help.out.find("Example:\n  ipusim " + std::string(command)) != std::string::npos);
  }
  CHECK(run_ipusim({"--version"}).out == "ipusim 0.1.0\n");
}

TEST_CASE("an IPU out of memory exits with the simulation-outcome code and writes no report") {
  const std::string json = std::string(IPUSIM_BINARY_DIR) + "/oom_report.json";
  std::remove(json.c_str());
  const auto result = run_ipusim(
      {"run", "configs/bert_large_4ipu.json", "--set", "pipeline.recomputation_mode=none", "--set",
       "pipeline.recompute_checkpoint_every_layer=false", "--json", json});
  CHECK(result.code == 3);
  // Without recomputation the five stages hold 8 + 1, 6 + 1, 4 + 1, 2 + 1 and 0 + 1 entries
  // (their FIFOs and the micro-batch between forward and backward). Stage 1's 7 entries of 7
  // encoders' activations are the most, allocated before any task: an entry is 8 samples x 7
  // encoders x (16·s·h + 2·a·s²) x 2 bytes = 293.6 MB, plus 3 dropout seeds of 8 bytes per
  // encoder.
  CHECK(result.err.rfind("out of memory on 4 IPUs, the worst first: IPU1 (physical IPU1) needs "
                         "2.65 GB but has 941 MB at step 1 (cycle 0)",
                         0) == 0);
  CHECK(result.err.find("\n  2.06 GB  stash of stage 1 (7 x 294 MB)\n") != std::string::npos);
  CHECK(result.err.find("\nIPU2 (physical IPU3) needs 2.07 GB but has 941 MB at step 1 (cycle ") <
        result.err.find("\nIPU0 (physical IPU0) needs 1.69 GB but has 941 MB at step 5 (cycle "));
  CHECK(result.err.find("\nWhat would help: recomputation (--set "
                        "pipeline.recomputation_mode=auto), --set "
                        "pipeline.offload_activations=true, a smaller micro-batch (--micro-batch "
                        "4), more IPUs per replica (ipusim plan CONFIG --ipus-per-replica 8)\n") !=
        std::string::npos);
  CHECK_FALSE(std::ifstream(json).good());
}

TEST_CASE("with --allow-oom the run finishes and reports the overflow") {
  const std::string json = std::string(IPUSIM_BINARY_DIR) + "/allow_oom_report.json";
  const auto result = run_ipusim({"run", "configs/bert_large_4ipu.json", "--set",
                                  "pipeline.recomputation_mode=none", "--set",
                                  "pipeline.recompute_checkpoint_every_layer=false", "--allow-oom",
                                  "--quiet", "--json", json});
  CHECK(result.code == 0);
  CHECK(result.out.empty());
  const auto report = nlohmann::json::parse(std::ifstream(json));
  CHECK(report["fits_in_memory"] == false);
  CHECK(report["ipus"][0]["fits_in_memory"] == false);
  // Stage 0's 8 + 1 entries of 8 samples: 3 encoders of (16·s·h + 2·a·s²) x 2 bytes and the
  // embeddings' 2·s·h x 2 bytes per sample, plus 3 dropout seeds of 8 bytes per encoder per
  // entry; and the head stage's one: on the 20 masked positions, mlm_transform's input and
  // output, mlm_decoder's input and the loss's probabilities over 30,522 ids and a label.
  constexpr std::int64_t kEncoder = (16 * 128 * 1024 + 2 * 16 * 128 * 128) * 2;
  constexpr std::int64_t kEmbeddings = 128 * 1024 * 2 + 128 * 4;  // layer norm input, ids
  constexpr std::int64_t kHead = 20 * (2 * 1024 * 2 + 1024 * 2 + 30522 * 2 + 4);
  CHECK(report["ipus"][0]["peak_stash_bytes"] ==
        9 * (8 * (3 * kEncoder + kEmbeddings) + 3 * 24) + 8 * kHead);
  CHECK(report["out_of_memory"].get<std::string>().rfind("out of memory on 4 IPUs", 0) == 0);
}

TEST_CASE("run writes the documented JSON keys") {
  const std::string json = std::string(IPUSIM_BINARY_DIR) + "/run_report.json";
  const auto result = run_ipusim({"run", "configs/tf1_mnist_2ipu.json", "--quiet", "--json", json});
  CHECK(result.code == 0);
  const auto report = nlohmann::json::parse(std::ifstream(json));
  for (const char* key : {"step_cycles", "step_seconds", "throughput_samples_per_second", "phases",
                          "ramp_overhead", "bubble_fraction", "ipus", "fits_in_memory"}) {
    CHECK(report.contains(key));
  }
  CHECK(report["recomputation_mode"] == "none");
  CHECK(report["recomputation_mode_requested"] == "none");
  for (const char* phase : {"ramp_up", "main", "ramp_down", "weight_update"}) {
    CHECK(report["phases"][phase].contains("cycles"));
  }
  for (const char* key :
       {"utilisation", "busy_cycles", "peak_memory_bytes", "peak_stash_bytes", "memory_breakdown",
        "physical_ipu", "streaming_memory_bytes", "streaming_memory_breakdown",
        "streaming_link_bytes", "streaming_link_utilisation"}) {
    CHECK(report["ipus"][0].contains(key));
  }
  CHECK(report["links"][0]["from_ipu"] == 0);
  CHECK(report["links"][0]["to_ipu"] == 1);
  CHECK(report["links"][0]["from_physical_ipu"] == 0);
  CHECK(report["links"][0]["to_physical_ipu"] == 1);
  CHECK(report["selection_order"] == "snake");
  CHECK(report["offload_activations"] == false);
  CHECK(report["effective_batch"] == 512);
}

TEST_CASE("packed samples report sequences/s beside samples/s, in the text and the JSON") {
  const std::string json = std::string(IPUSIM_BINARY_DIR) + "/packed_report.json";
  const auto packed = ipusim::testing::run_ipusim(
      {"run", "configs/tf1_mnist_2ipu.json", "--no-numeric", "--json", json, "--set",
       "data={\"source\": \"synthetic\", \"sequences_per_sample\": 2.5}"});
  REQUIRE(packed.code == 0);
  const auto report = nlohmann::json::parse(std::ifstream(json));
  // Sequences/s = samples/s x 2.5: the step's samples (effective batch 512) over its seconds.
  const double samples_per_second = 512 / report["step_seconds"].get<double>();
  CHECK(report["throughput_sequences_per_second"].get<double>() ==
        Approx(2.5 * samples_per_second).epsilon(1e-12));
  const std::string line =
      "Sequences: " + ipusim::sim::with_commas(std::llround(2.5 * samples_per_second)) +
      " sequences/s (packed, 2.500 sequences per sample)\n";
  CHECK_THAT(packed.out, Catch::Matchers::Contains(line));
  // Unpacked runs say nothing of sequences.
  const auto plain = ipusim::testing::run_ipusim(
      {"run", "configs/tf1_mnist_2ipu.json", "--no-numeric", "--json", json});
  CHECK(plain.out.find("Sequences: ") == std::string::npos);
  CHECK_FALSE(
      nlohmann::json::parse(std::ifstream(json)).contains("throughput_sequences_per_second"));
  const auto bad = ipusim::testing::run_ipusim(
      {"run", "configs/tf1_mnist_2ipu.json", "--set", "data.sequences_per_sample=0.5"});
  CHECK(bad.code == 2);
  CHECK(bad.err ==
        "error: --set data.sequences_per_sample=0.5: at /data/sequences_per_sample: expected the "
        "mean number of sequences in one sample (a pack), from 1 to 1000, found 0.5\n");
}

TEST_CASE("a misspelt command or option gets a did-you-mean and the usage exit code") {
  const auto command = ipusim::testing::run_ipusim({"runn", "configs/tf1_mnist_2ipu.json"});
  CHECK(command.code == 1);
  CHECK(command.err ==
        "error: unknown command 'runn'; did you mean 'run'? (ipusim --help lists the commands)\n");
  const auto option =
      ipusim::testing::run_ipusim({"run", "configs/tf1_mnist_2ipu.json", "--gacc", "8"});
  CHECK(option.code == 1);
  CHECK(option.err == "error: unknown option '--gacc' of ipusim run; did you mean '--gac'?\n");
  const auto far = ipusim::testing::run_ipusim({"xyzzy"});
  CHECK(far.err == "error: unknown command 'xyzzy' (ipusim --help lists the commands)\n");
}

TEST_CASE("ipusim --help lists the exit codes and the hardware presets") {
  const auto help = ipusim::testing::run_ipusim({"--help"});
  CHECK(help.code == 0);
  CHECK_THAT(help.out, Catch::Matchers::Contains(
                           "Exit codes: 0 success, 1 bad command line, 2 invalid config or option, "
                           "3 does not fit in memory (the IPUs': a valid result; or this "
                           "machine's), 4 pipelined numbers differ from the reference, 70 "
                           "internal error (a bug).\n"));
  CHECK_THAT(help.out, Catch::Matchers::Contains(
                           "Hardware presets (hardware.preset): gc200, bow, gc2, ideal."));
}

TEST_CASE("an inference run speaks of a pass, not of a weight update") {
  const auto result = ipusim::testing::run_ipusim(
      {"run", "configs/tf1_mnist_2ipu.json", "--set", "pipeline.training=false", "--no-numeric"});
  REQUIRE(result.code == 0);
  CHECK_THAT(result.out, Catch::Matchers::Contains("\nStep (one inference pass): "));
  CHECK_THAT(result.out, Catch::Matchers::Contains(
                             " samples/s (samples per pass 512 = micro-batch 32 x micro-batches 16 "
                             "x 1 replica(s))\n"));
  CHECK_THAT(result.out, !Catch::Matchers::Contains("weight update)"));
  // Neither a weight-update row in the phases nor a column in the utilisation table.
  CHECK_THAT(result.out, !Catch::Matchers::Contains("weight update"));
  CHECK_THAT(result.out, !Catch::Matchers::Contains("Weight update"));
  CHECK_THAT(result.out, Catch::Matchers::Contains(
                             "IPU  Utilisation  Ramp-up   Main  Ramp-down  Busy cycles  Host "
                             "link\n"));
}

TEST_CASE("a count option given a word or nothing says what it expects") {
  const auto jobs =
      ipusim::testing::run_ipusim({"sweep", "configs/tf1_mnist_2ipu.json", "--vary",
                                   "pipeline.repeat_count=1", "-o", "unused.csv", "--jobs", "abc"});
  CHECK(jobs.code == 1);
  CHECK(jobs.err == "error: --jobs: expected an integer from 1 to 4096, found 'abc'\n");
  const auto top =
      ipusim::testing::run_ipusim({"plan", "configs/tf1_mnist_2ipu.json", "--top", "0"});
  CHECK(top.code == 1);
  CHECK(top.err == "error: --top: expected an integer from 1 to 1000, found '0'\n");
  const auto html = ipusim::testing::run_ipusim({"run", "configs/tf1_mnist_2ipu.json", "--html"});
  CHECK(html.code == 1);
  CHECK(html.err == "error: --html expects a value (PATH), none was given\n");
  CHECK_FALSE(std::filesystem::exists("unused.csv"));
}

TEST_CASE("run refuses a replay of more than two billion tasks with its estimate") {
  // The TF1 MLP on two IPUs gives 8 tasks a micro-batch: on IPU0 the infeed, F0, its copy to
  // IPU1 and B0; on IPU1 F1, the outfeed, B1 and its gradient's copy back. 8 x 2^40 = 8.8e12.
  const auto result = run_ipusim({"run", "configs/tf1_mnist_2ipu.json", "--gac", "1099511627776"});
  CHECK(result.code == 2);
  CHECK(result.out.empty());
  CHECK(result.err ==
        "error: --gac 1099511627776: at /pipeline/gradient_accumulation_count: the replay would "
        "run about 8.8e+12 tasks (8 a micro-batch x 1,099,511,627,776 micro-batches), more than "
        "the 2,000,000,000 ipusim replays in one run (a few minutes); lower "
        "gradient_accumulation_count\n");
}

TEST_CASE("layers lists every layer type with the inputs it takes and its keys") {
  const auto result = run_ipusim({"layers"});
  REQUIRE(result.code == 0);
  std::istringstream lines(result.out);
  std::vector<std::string> squeezed;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string text;
    for (std::string word; words >> word;)
      text += (text.empty() ? "" : " ") + word;
    squeezed.push_back(text);
  }
  REQUIRE(squeezed.size() == 40 + 2);  // a header, the 40 types, a closing line
  CHECK(squeezed[0] == "type inputs keys");
  CHECK(std::count(squeezed.begin(), squeezed.end(),
                   "dense one units, activation, bias, tied_to, serialization_factor") == 1);
  CHECK(std::count(squeezed.begin(), squeezed.end(),
                   "softmax_cross_entropy one serialized_seq_len") == 1);
  CHECK(std::count(squeezed.begin(), squeezed.end(), "add two or more") == 1);
  CHECK(std::count(squeezed.begin(), squeezed.end(),
                   "avgpool2d one pool, stride, padding, ceil_mode, count_include_pad") == 1);
  CHECK(std::count(squeezed.begin(), squeezed.end(), "class_token one") == 1);
  CHECK(std::count(squeezed.begin(), squeezed.end(), "sigmoid one") == 1);
  CHECK(std::count(squeezed.begin(), squeezed.end(), "swish one") == 1);
  CHECK(std::count(squeezed.begin(), squeezed.end(), "relu6 one") == 1);
  CHECK(std::count(squeezed.begin(), squeezed.end(), "hard_sigmoid one") == 1);
  CHECK(std::count(squeezed.begin(), squeezed.end(), "hard_swish one") == 1);
  CHECK(std::count(squeezed.begin(), squeezed.end(), "multiply two") == 1);
  CHECK(std::count(squeezed.begin(), squeezed.end(), "glu one axis") == 1);
  CHECK(std::count(squeezed.begin(), squeezed.end(), "group_norm one groups, epsilon") == 1);
  // The convolution family, from their files alone.
  CHECK(std::count(
            squeezed.begin(), squeezed.end(),
            "conv2d one filters, kernel, stride, dilation, padding, activation, bias, groups") ==
        1);
  CHECK(std::count(
            squeezed.begin(), squeezed.end(),
            "conv1d one filters, kernel, stride, dilation, padding, activation, bias, groups") ==
        1);
  CHECK(std::count(squeezed.begin(), squeezed.end(),
                   "conv2d_transpose one filters, kernel, stride, padding, output_padding, "
                   "activation, bias") == 1);
  CHECK(std::count(squeezed.begin(), squeezed.end(), "crop2d one cropping") == 1);
  CHECK(std::count(squeezed.begin(), squeezed.end(), "input the model input shape") == 1);
  CHECK(squeezed.back() ==
        "Every layer also takes id, type, inputs, cycles, checkpoint (an input layer all but "
        "inputs); 'ipusim layers TYPE' gives a type's keys.");
}

TEST_CASE("layers TYPE gives each of its keys with the value it takes, its default and meaning") {
  const auto result = run_ipusim({"layers", "maxpool2d"});
  REQUIRE(result.code == 0);
  CHECK(result.out ==
        "maxpool2d: takes one input\n"
        "key        value                                          default   meaning\n"
        "pool       N or [height, width], positive integers        2         the window: N or "
        "[h, w]\n"
        "stride     N or [height, width], positive integers        the pool  the window's step: "
        "N or [h, w]\n"
        "padding    \"valid\", \"same\" or [top, left, bottom, right]  \"valid\"   same: "
        "TensorFlow's, ceil(size / stride) outputs per axis; a list: the pads\n"
        "ceil_mode  true or false                                  false     rounds the output "
        "size up (PyTorch's); the last window starts inside\n"
        "It also takes id, type, inputs, cycles, checkpoint.\n");
  const auto dense = run_ipusim({"layers", "dense"});
  CHECK(dense.out.find("\nunits                 a positive integer") != std::string::npos);
  CHECK(dense.out.find("\nserialization_factor  an integer from 1 to 1048576") !=
        std::string::npos);
}

TEST_CASE("layers refuses a type it does not know and names the nearest") {
  const auto misspelt = run_ipusim({"layers", "dens"});
  CHECK(misspelt.code != 0);
  CHECK(misspelt.out.empty());
  CHECK(misspelt.err == "error: type: unknown layer type 'dens'; did you mean 'dense'?\n");
  const auto unknown = run_ipusim({"layers", "nosuchthing"});
  CHECK(unknown.err ==
        "error: type: unknown layer type 'nosuchthing'; 'ipusim layers' lists them\n");
}

TEST_CASE("run says what auto recomputation resolved to, in its text and its JSON") {
  const std::string json = scratch("auto_recomputation.json");
  const auto result = run_ipusim({"run", "configs/tf1_mnist_2ipu.json", "--no-numeric", "--set",
                                  "pipeline.recomputation_mode=auto", "--json", json});
  CHECK(result.code == 0);
  CHECK(result.out.find("\nrecomputation: recompute_then_backpropagate (auto, under the grouped "
                        "schedule)\n") != std::string::npos);
  const auto report = nlohmann::json::parse(std::ifstream(json));
  CHECK(report["recomputation_mode"] == "recompute_then_backpropagate");
  CHECK(report["recomputation_mode_requested"] == "auto");
  // Sequential's auto is the interleaved mode; the BERT config asks for it with checkpoints.
  const auto sequential =
      run_ipusim({"run", "configs/tf1_mnist_2ipu.json", "--no-numeric", "--schedule", "sequential",
                  "--set", "pipeline.recomputation_mode=auto"});
  CHECK(sequential.out.find("\nrecomputation: recompute_and_backpropagate_interleaved (auto, "
                            "under the sequential schedule)\n") != std::string::npos);
  const auto bert = run_ipusim({"run", "configs/bert_large_4ipu.json", "--no-numeric"});
  CHECK(bert.out.find("\nrecomputation: recompute_and_backpropagate_interleaved, a checkpoint at "
                      "every layer\n") != std::string::npos);
}

TEST_CASE("run shows a dash for a phase its schedule does not have") {
  const auto result = run_ipusim({"run", kTf1Config, "--no-numeric", "--schedule", "sequential"});
  REQUIRE(result.code == 0);
  CHECK(result.out.find("\nramp-up              -          -              -\n") !=
        std::string::npos);
  CHECK(result.out.find("\nramp-down            -          -              -\n") !=
        std::string::npos);
  CHECK(result.out.find("\n  0        21.9%        -  36.0%          -           0.5%") !=
        std::string::npos);
}

TEST_CASE("run counts a GPU schedule's micro-batches in flight, Graphcore's FIFO depths") {
  // 1F1B on N = 2 stages keeps N - k micro-batches on stage k; grouped 2(N - 1 - k).
  const auto gpu = run_ipusim({"run", kTf1Config, "--no-numeric", "--schedule", "1f1b"});
  CHECK(gpu.out.find("\nMicro-batches in flight per stage (their activations kept for the "
                     "backward): 2, 1\n") != std::string::npos);
  const auto grouped = run_ipusim({"run", kTf1Config, "--no-numeric"});
  CHECK(grouped.out.find("\nStash FIFO depth per stage (micro-batches): 2, 0\n") !=
        std::string::npos);
}
