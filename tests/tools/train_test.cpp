#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "models/data/npy.hpp"
#include "tests/scratch_folder.hpp"
#include "tests/tools/cli_support.hpp"

namespace {

using namespace ipusim::testing;

// A fresh directory under the build tree.
std::string fresh_folder(const std::string& name) {
  const std::string path = (ipusim::testing::scratch_folder("train_test") / name).string();
  std::filesystem::remove_all(path);
  return path;
}

// The output without its last line, the wall time, which varies from run to run.
std::string without_wall_time(const std::string& out) {
  const auto last = out.rfind("Wall time: ");
  REQUIRE(last != std::string::npos);
  return out.substr(0, last);
}

// The names in `directory`, sorted.
std::vector<std::string> entries(const std::string& directory) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(directory))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

const std::vector<std::string> kShortRun = {
    "train", kTf1Config,      "--steps", "1",     "--gac",
    "4",     "--micro-batch", "2",       "--set", "data.source=\"synthetic\""};

}  // namespace

TEST_CASE("train prints progress, test accuracy and simulated time beside wall time") {
  const auto result =
      run_ipusim({"train", kTf1Config, "--steps", "5", "--gac", "4", "--micro-batch", "8"});
  CHECK(result.err.empty());
  CHECK(result.code == 0);
  CHECK(without_wall_time(result.out) ==
        "ipusim train: tf1_mnist (configs/tf1_mnist_2ipu.json) on fashion-mnist "
        "(/usr/share/datasets/fashion-mnist)\n"
        "grouped schedule, 2 stage(s) on 2 IPU(s); 32 samples per step (micro-batch 8 x "
        "gradient accumulation 4)\n"
        "Training 5 step(s) of 1,875 per epoch, 160 samples\n"
        "[######                        ]  20%  step 1/5  loss 2.3291 nats\n"
        "[############                  ]  40%  step 2/5  loss 2.2774 nats\n"
        "[##################            ]  60%  step 3/5  loss 2.3211 nats\n"
        "[########################      ]  80%  step 4/5  loss 2.2317 nats\n"
        "[##############################] 100%  step 5/5  loss 2.1723 nats\n"
        "Test accuracy: 29.9% (2,989 of 10,000 test samples)\n"
        "Simulated time: 0.5382 ms per step (715,831 cycles), 59,455 samples/s; 2.691 ms for 5 "
        "step(s)\n");
  CHECK(result.out.substr(result.out.rfind("Wall time: ")).find(" samples/s)\n") !=
        std::string::npos);
}

TEST_CASE("progress is printed at every tenth of a long run with the loss since the last line") {
  const auto result = run_ipusim({"train", kTf1Config, "--steps", "23", "--gac", "4",
                                  "--micro-batch", "2", "--set", "data.source=\"synthetic\""});
  REQUIRE(result.code == 0);
  std::istringstream lines(result.out);
  std::vector<std::string> steps;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("[", 0) == 0)
      steps.push_back(line.substr(line.find("step "), line.find("  loss") - line.find("step ")));
  }
  CHECK(steps == std::vector<std::string>{"step 3/23", "step 5/23", "step 7/23", "step 10/23",
                                          "step 12/23", "step 14/23", "step 17/23", "step 19/23",
                                          "step 21/23", "step 23/23"});
}

TEST_CASE("train --test-samples measures the accuracy on the first N test samples, 0 on none") {
  const auto accuracy_line = [](std::vector<std::string> arguments) {
    const auto result = run_ipusim(arguments);
    REQUIRE(result.code == 0);
    const auto start = result.out.find("Test accuracy: ");
    REQUIRE(start != std::string::npos);
    return result.out.substr(start, result.out.find('\n', start) - start);
  };
  auto with = [](std::string count) {
    auto arguments = kShortRun;
    arguments.insert(arguments.end(), {"--test-samples", count});
    return arguments;
  };
  const std::string whole = accuracy_line(kShortRun);
  CHECK(whole.ends_with(" of 10,000 test samples)"));
  // The synthetic test set holds 10,000 samples: a larger N is the whole set.
  CHECK(accuracy_line(with("10000")) == whole);
  CHECK(accuracy_line(with("20000")) == whole);
  CHECK(accuracy_line(with("250")).ends_with(" of 250 test samples)"));
  CHECK(accuracy_line(with("0")) == "Test accuracy: not measured (--test-samples 0)");
  const auto refused = run_ipusim(with("-5"));
  CHECK(refused.code == 1);
  CHECK(refused.err ==
        "error: --test-samples: expected an integer from 0 to 1099511627776, found '-5'\n");
}

TEST_CASE("train --epochs trains whole epochs and --steps caps them") {
  const auto result = run_ipusim({"train", kTf1Config, "--epochs", "2", "--steps", "3", "--gac",
                                  "4", "--micro-batch", "2", "--set", "data.source=\"synthetic\""});
  CHECK(result.out.find("Training 3 step(s) of 7,500 per epoch, 24 samples\n") !=
        std::string::npos);
}

TEST_CASE(
    "train --save writes parameters, first gradients, losses, inputs and labels, and --load reads "
    "them") {
  const std::string first = fresh_folder("first");
  const auto saved = run_ipusim({"train", kTf1Config, "--steps", "2", "--gac", "4", "--micro-batch",
                                 "8", "--set", "data.source=\"synthetic\"", "--save", first});
  REQUIRE(saved.code == 0);
  CHECK(saved.out.find("Saved parameters, first gradients, losses, inputs and labels to " + first +
                       "\n") != std::string::npos);
  std::vector<std::string> files;
  for (const auto& file : std::filesystem::directory_iterator(first))
    files.push_back(file.path().filename().string());
  std::sort(files.begin(), files.end());
  CHECK(files.size() == 3 + 5 * 2 * 3);
  CHECK(files[0] == "dense128.bias.final.npy");
  CHECK(std::count(files.begin(), files.end(), "logits.kernel.gradient.npy") == 1);
  CHECK(ipusim::models::read_npy_f32(first + "/losses.npy").shape() == ipusim::models::Shape{2, 4});
  CHECK(ipusim::models::read_npy_f32(first + "/inputs.npy").shape() ==
        ipusim::models::Shape{64, 28, 28});
  CHECK(ipusim::models::read_npy_i32(first + "/labels.npy").values.size() == 64);
  CHECK(ipusim::models::read_npy_f32(first + "/dense32.kernel.gradient.npy").shape() ==
        ipusim::models::Shape{64, 32});

  const std::string second = fresh_folder("second");
  const auto loaded =
      run_ipusim({"train", kTf1Config, "--steps", "1", "--gac", "4", "--micro-batch", "8", "--set",
                  "data.source=\"synthetic\"", "--load", first, "--save", second});
  REQUIRE(loaded.code == 0);
  for (const char* name : {"dense256.kernel", "logits.bias"}) {
    INFO(name);
    CHECK(ipusim::models::bit_identical(
        ipusim::models::read_npy_f32(second + "/" + name + ".initial.npy"),
        ipusim::models::read_npy_f32(first + "/" + name + ".final.npy")));
  }
}

TEST_CASE("train --save writes a tied word matrix once, under its embedding") {
  const std::string config = std::string(IPUSIM_BINARY_DIR) + "/train_test_tied.json";
  std::ofstream(config) << R"({
    "model": {"name": "tied", "input": {"shape": [4]}, "classes": 10, "layers": [
      {"id": "embeddings", "type": "embedding", "vocab_size": 10, "hidden": 4,
       "sequence_length": 4},
      {"id": "first", "type": "slice", "axis": 0, "size": 1},
      {"id": "pooled", "type": "flatten"},
      {"id": "decoder", "type": "dense", "units": 10, "tied_to": "embeddings"},
      {"id": "loss", "type": "softmax_cross_entropy"}]},
    "pipeline": {"splits": ["first"], "device_mapping": [0, 0], "micro_batch_size": 2,
                 "gradient_accumulation_count": 4},
    "data": {"source": "synthetic_tokens"}})";
  const std::string directory = fresh_folder("tied");
  const auto saved = run_ipusim({"train", config, "--steps", "1", "--save", directory});
  REQUIRE(saved.code == 0);
  const std::vector<std::string> files = entries(directory);
  CHECK(std::count(files.begin(), files.end(), "embeddings.embeddings.final.npy") == 1);
  CHECK(std::count(files.begin(), files.end(), "decoder.bias.gradient.npy") == 1);
  CHECK(std::none_of(files.begin(), files.end(), [](const std::string& file) {
    return file.rfind("decoder.kernel", 0) == 0 || file.rfind("decoder.embeddings", 0) == 0;
  }));
  CHECK(ipusim::models::read_npy_f32(directory + "/embeddings.embeddings.gradient.npy").shape() ==
        ipusim::models::Shape{10, 4});
}

TEST_CASE("train --load names the file and the shape it expected") {
  const std::string directory = fresh_folder("narrow");
  REQUIRE(run_ipusim({"train", kTf1Config, "--steps", "1", "--gac", "4", "--micro-batch", "2",
                      "--set", "data.source=\"synthetic\"", "--save", directory})
              .code == 0);
  const auto wrong = run_ipusim({"train", kTf1Config, "--steps", "1", "--set",
                                 "/model/layers/1/units=200", "--load", directory});
  CHECK(wrong.code == 2);
  CHECK(wrong.err == "error: " + directory +
                         "/dense256.kernel.final.npy: holds an array of shape [784, 256], "
                         "expected [784, 200], the kernel of dense256\n");
  const std::string empty = fresh_folder("empty");
  std::filesystem::create_directories(empty);
  const auto missing = run_ipusim({"train", kTf1Config, "--steps", "1", "--load", empty});
  CHECK(missing.code == 2);
  CHECK(missing.err == "error: " + empty +
                           "/dense256.kernel.final.npy: file not found (nor "
                           "dense256.kernel.initial.npy); expected a float32 array of shape [784, "
                           "256], the kernel of dense256\n");
}

TEST_CASE("train --save refuses a file it cannot write before training and writes nothing") {
  const std::string directory = fresh_folder("spoilt");
  std::filesystem::create_directories(directory + "/losses.npy");
  auto args = kShortRun;
  args.insert(args.end(), {"--save", directory});
  const auto result = run_ipusim(args);
  CHECK(result.code == 2);
  CHECK(result.out.empty());
  CHECK(result.err == "error: " + directory +
                          "/losses.npy: cannot write the --save output: it is a directory; give "
                          "the path of a regular file or of a new one\n");
  CHECK(entries(directory) == std::vector<std::string>{"losses.npy"});
}

TEST_CASE("train --save into its --load folder is refused before training, the folder kept") {
  const std::string directory = fresh_folder("load_and_save");
  auto args = kShortRun;
  args.insert(args.end(), {"--save", directory});
  REQUIRE(run_ipusim(args).code == 0);
  const auto kernel = ipusim::testing::read_file(directory + "/dense256.kernel.final.npy");
  args.insert(args.end(), {"--load", directory});
  const auto result = run_ipusim(args);
  CHECK(result.code == 2);
  CHECK(result.out.empty());
  CHECK(result.err == "error: " + directory +
                          "/dense256.kernel.initial.npy: cannot write the --save output: it is a "
                          "--load file this command reads; choose another file\n");
  CHECK(ipusim::testing::read_file(directory + "/dense256.kernel.final.npy") == kernel);
}

TEST_CASE("train --save into a regular file is refused") {
  const std::string file = fresh_folder("plain");
  std::filesystem::create_directories(std::filesystem::path(file).parent_path());
  std::ofstream(file) << "not a folder\n";
  auto args = kShortRun;
  args.insert(args.end(), {"--save", file});
  const auto result = run_ipusim(args);
  CHECK(result.code == 2);
  CHECK(result.err == "error: " + file +
                          ": cannot write the --save output: it is a regular file, not a folder\n");
}

TEST_CASE("train --save removes the folders it created when the training fails") {
  const std::string top = fresh_folder("never");
  auto args = kShortRun;
  args.insert(args.end(), {"--set", "data.source=\"fashion-mnist\"", "--set",
                           "data.path=\"/nonexistent\"", "--save", top + "/made"});
  const auto result = run_ipusim(args);
  CHECK(result.code == 2);
  CHECK(result.err.find("/nonexistent/train-images-idx3-ubyte.gz: file not found") !=
        std::string::npos);
  CHECK_FALSE(std::filesystem::exists(top));
}

TEST_CASE("train refuses what numeric mode cannot run, naming the entry") {
  const auto result = run_ipusim({"train", "configs/bert_large_4ipu.json", "--steps", "1"});
  CHECK(result.code == 2);
  CHECK(result.err ==
        "error: configs/bert_large_4ipu.json: at /pipeline/replication_factor: numeric mode runs "
        "one replica, but replication_factor is 4\n");
  const auto rows = run_ipusim({"train", "configs/bert_large_4ipu.json", "--steps", "1", "--set",
                                "pipeline.replication_factor=1"});
  CHECK(rows.code == 2);
  CHECK(rows.err ==
        "error: configs/bert_large_4ipu.json: at /model/layers/28: numeric data give one label "
        "per sample, but the loss 'loss' takes 20 rows of logits per sample\n");
}

TEST_CASE("train refuses an fp8 stash, which numeric mode prices but does not compute") {
  auto args = kShortRun;
  args.insert(args.end(), {"--set", "pipeline.stash_dtype=fp8", "--set",
                           "pipeline.recomputation_mode=recompute_then_backpropagate"});
  const auto result = run_ipusim(args);
  CHECK(result.code == 2);
  CHECK(result.err ==
        "error: --set pipeline.stash_dtype=fp8: at /pipeline/stash_dtype: numeric mode keeps the "
        "stash in the compute dtype (fp32) and does not round it to fp8: stash_dtype fp8 is "
        "priced (memory, casts) but not computed\n");
}

TEST_CASE("LAMB trains the TF1 MLP: the loss falls over its first steps") {
  const auto result = run_ipusim(
      {"train", kTf1Config, "--steps", "20", "--test-samples", "0", "--set",
       "pipeline.optimizer={\"type\": \"lamb\", \"learning_rate\": 0.01, \"weight_decay\": "
       "0.01, \"bias_correction\": false, \"m_dtype\": \"fp16\"}"});
  REQUIRE(result.code == 0);
  CHECK(result.out.find("step 2/20  loss 2.3139 nats\n") != std::string::npos);
  CHECK(result.out.find("step 20/20  loss 0.8711 nats\n") != std::string::npos);
  // Adam's step is 1,227,062 cycles; the IPUs update at once, and IPU0's LAMB update (242,112
  // parameters) takes 3,936 cycles more than its Adam update.
  CHECK(result.out.find("Simulated time: 0.9256 ms per step (1,230,998 cycles)") !=
        std::string::npos);
}

TEST_CASE("run checks the numbers by default and --no-numeric skips the check") {
  const std::vector<std::string> small = {"--gac",         "4",
                                          "--micro-batch", "2",
                                          "--set",         "pipeline.repeat_count=1",
                                          "--set",         "data.source=\"synthetic\""};
  std::vector<std::string> args = {"run", kTf1Config};
  args.insert(args.end(), small.begin(), small.end());
  const auto checked = run_ipusim(args);
  CHECK(checked.code == 0);
  CHECK(checked.out.find("\nBit-identical to the reference: largest |pipelined - reference| 0 "
                         "nats in losses, 0 in weights\n") != std::string::npos);
  args.push_back("--no-numeric");
  const auto skipped = run_ipusim(args);
  CHECK(skipped.code == 0);
  CHECK(skipped.out.find("Numeric check") == std::string::npos);
  args.push_back("--numeric");
  CHECK(run_ipusim(args).code == 1);
}

TEST_CASE("a squeeze-and-excite block and a GLU over two IPUs run bit-identical to the reference") {
  // group_norm, swish, a sigmoid gate multiplied over the channels across the split, and a glu.
  const auto result = run_ipusim({"run", "tests/tools/data/squeeze_excite_glu.json", "--numeric"});
  CHECK(result.code == 0);
  CHECK(result.out.find("\nBit-identical to the reference: largest |pipelined - reference| 0 "
                        "nats in losses, 0 in weights\n") != std::string::npos);
}

TEST_CASE(
    "a CNN of grouped, depthwise and transposed convolutions and a crop runs bit-identical "
    "across two IPUs") {
  // 8x8x4 -> grouped conv 8x8x8 -> depthwise 8x8x8 -> pool 4x4x8 | transposed conv (3 - 1) x 2 -
  // 2 + 3 + 1 = 8: 8x8x4 -> crop 6x6x4 -> dense 10.
  const std::string folder = fresh_folder("conv_family");
  std::filesystem::create_directories(folder);
  const std::string config = folder + "/cnn.json";
  std::ofstream(config) << R"({
  "model": {
    "name": "conv_family", "input": {"shape": [8, 8, 4], "dtype": "fp32"}, "classes": 10,
    "layers": [
      {"id": "input", "type": "input"},
      {"id": "grouped", "type": "conv2d", "filters": 8, "kernel": 3, "padding": "same",
       "groups": 2, "activation": "relu"},
      {"id": "depthwise", "type": "conv2d", "filters": 8, "kernel": 3, "padding": "same",
       "groups": 8},
      {"id": "pool", "type": "maxpool2d", "pool": 2},
      {"id": "up", "type": "conv2d_transpose", "filters": 4, "kernel": 3, "stride": 2,
       "padding": [1, 1, 1, 1], "output_padding": 1, "activation": "tanh"},
      {"id": "crop", "type": "crop2d", "cropping": [[1, 1], [1, 1]]},
      {"id": "flatten", "type": "flatten"},
      {"id": "dense", "type": "dense", "units": 10},
      {"id": "loss", "type": "softmax_cross_entropy"}]},
  "pipeline": {"splits": ["pool"], "pipeline_schedule": "grouped", "micro_batch_size": 2,
               "gradient_accumulation_count": 4, "repeat_count": 1,
               "optimizer": {"type": "sgd", "learning_rate": 0.01}},
  "hardware": {"preset": "gc200"},
  "data": {"source": "synthetic"}})";
  const auto result = run_ipusim({"run", config, "--numeric"});
  CHECK(result.code == 0);
  CHECK(result.out.find("\nBit-identical to the reference: largest |pipelined - reference| 0 "
                        "nats in losses, 0 in weights\n") != std::string::npos);
}

TEST_CASE("run --json adds the numeric object") {
  const std::string json = std::string(IPUSIM_BINARY_DIR) + "/numeric_report.json";
  const auto result = run_ipusim({"run", kTf1Config, "--gac", "4", "--micro-batch", "2", "--set",
                                  "data.source=\"synthetic\"", "--quiet", "--json", json});
  CHECK(result.code == 0);
  const auto report = nlohmann::json::parse(std::ifstream(json));
  CHECK(report["numeric"]["bit_identical"] == true);
  CHECK(report["numeric"]["max_abs_diff_loss"] == 0.0);
  CHECK(report["numeric"]["max_abs_diff_weights"] == 0.0);
  CHECK(report["numeric"]["losses"].size() == 10);  // repeat_count 10
  CHECK(report["numeric"]["losses"][9].size() == 4);
}

TEST_CASE("one epoch of the default config on Fashion-MNIST reaches 81.8% test accuracy") {
  const auto result = run_ipusim({"train", kTf1Config, "--epochs", "1"});
  REQUIRE(result.code == 0);
  CHECK(result.out.find("[##############################] 100%  step 117/117  loss ") !=
        std::string::npos);
  CHECK(result.out.find("Test accuracy: 81.8% (8,178 of 10,000 test samples)\n") !=
        std::string::npos);
}
