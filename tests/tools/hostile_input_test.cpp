// Inputs that used to crash, hang or be silently ignored: each is now a config error (exit 2)
// naming the file or option and the JSON path, or an answer.

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/scratch_folder.hpp"
#include "tests/tools/cli_support.hpp"

namespace {

namespace fs = std::filesystem;
using namespace ipusim::testing;

nlohmann::json base_config() {
  return nlohmann::json::parse(std::ifstream(kBaseConfig));
}

// `validate` on the base config with these extra arguments; a config error is expected.
std::string validate_error(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"validate", kBaseConfig};
  args.insert(args.end(), extra.begin(), extra.end());
  const CliResult result = run_ipusim(args);
  CHECK(result.code == 2);
  CHECK(result.out.empty());
  return result.err;
}

std::string validate_file_error(const std::string& path) {
  const CliResult result = run_ipusim({"validate", path});
  CHECK(result.code == 2);
  CHECK(result.out.empty());
  return result.err;
}

}  // namespace

TEST_CASE("a number beyond the double range in a config names its path, line and column") {
  const std::string text = R"({"include": "base.json", "pipeline": {"repeat_count": 1e400}})";
  fs::copy_file(kBaseConfig, scratch("base.json"), fs::copy_options::overwrite_existing);
  const std::string path = write("huge_number.json", text);
  // The column is that of the number's last character.
  const auto column = text.find("1e400") + 5;
  CHECK(validate_file_error(path) ==
        "error: " + path +
            ": at /pipeline/repeat_count: the number 1e400 is out of range (JSON numbers lie "
            "within +-1.8e308) (line 1, column " +
            std::to_string(column) + ")\n");
}

TEST_CASE("a number beyond the double range in --set names the override and the path") {
  CHECK(validate_error({"--set", "pipeline.repeat_count=1e400"}) ==
        "error: --set pipeline.repeat_count=1e400: at /pipeline/repeat_count: the number 1e400 "
        "is out of range (JSON numbers lie within +-1.8e308)\n");
  CHECK(validate_error({"--set", "pipeline.splits=[\"fc2\", 1e400]"}) ==
        "error: --set pipeline.splits=[\"fc2\", 1e400]: at /pipeline/splits/1: the number 1e400 "
        "is out of range (JSON numbers lie within +-1.8e308)\n");
}

TEST_CASE("a JSON pointer with a bad escape is a config error naming the override") {
  CHECK(validate_error({"--set", "/pipeline/a~2=1"}) ==
        "error: --set /pipeline/a~2=1: at /pipeline/a~2: 'a~2' is not a valid JSON pointer "
        "token: '~' must be followed by 0 (for '~') or 1 (for '/')\n");
}

TEST_CASE("a list index beyond 64 bits in --set is not an index of the list") {
  CHECK(validate_error({"--set", "/pipeline/splits/99999999999999999999999=1"}) ==
        "error: --set /pipeline/splits/99999999999999999999999=1: at "
        "/pipeline/splits/99999999999999999999999: '99999999999999999999999' is not an index of "
        "this list of 1 entries\n");
}

TEST_CASE("override paths with empty keys are refused and blamed on the override") {
  const std::string hint =
      "the path has an empty key; write it like pipeline.repeat_count or /pipeline/repeat_count\n";
  CHECK(validate_error({"--set", "//=5"}) == "error: --set //=5: at /: " + hint);
  CHECK(validate_error({"--set", ".=5"}) == "error: --set .=5: at /: " + hint);
}

TEST_CASE("a misspelt section in an override is blamed on the override, not an included file") {
  const CliResult result =
      run_ipusim({"validate", "configs/tf1_mnist_2ipu.json", "--set", "pipline.x=3"});
  CHECK(result.code == 2);
  CHECK(result.err ==
        "error: --set pipline.x=3: at /pipline: unknown key 'pipline'; did you mean "
        "'pipeline'?\n");
}

TEST_CASE("a misspelt top-level key of a config is blamed on that file, not on its include") {
  fs::copy_file("configs/models/tf1_mnist_mlp.json", scratch("mlp.json"),
                fs::copy_options::overwrite_existing);
  const std::string path =
      write("top_level_typo.json", R"({"include": "mlp.json", "pipline": {}})");
  CHECK(validate_file_error(path) ==
        "error: " + path + ": at /pipline: unknown key 'pipline'; did you mean 'pipeline'?\n");
}

TEST_CASE("short what-if options are validated like --set and name the option") {
  const std::string gac_range =
      ": at /pipeline/gradient_accumulation_count: expected an integer from 1 to 1099511627776, "
      "found ";
  CHECK(validate_error({"--gac", "0"}) == "error: --gac 0" + gac_range + "0\n");
  CHECK(validate_error({"--gac", "-1"}) == "error: --gac -1" + gac_range + "-1\n");
  CHECK(validate_error({"--gac", "99999999999999999999"}) ==
        "error: --gac 99999999999999999999" + gac_range + "1e+20\n");
  CHECK(validate_error({"--micro-batch", "0"}) ==
        "error: --micro-batch 0: at /pipeline/micro_batch_size: expected an integer from 1 to "
        "16777216, found 0\n");
  CHECK(validate_error({"--replicas", "0"}) ==
        "error: --replicas 0: at /pipeline/replication_factor: expected an integer from 1 to "
        "1024, found 0\n");
  CHECK(validate_error({"--schedule", ""}) ==
        "error: --schedule '': at /pipeline/pipeline_schedule: unknown value ''; expected "
        "'grouped', 'interleaved', 'sequential', 'gpipe', '1f1b', 'interleaved_1f1b' or "
        "'zero_bubble_h1'\n");
}

TEST_CASE("a reshape whose dimensions multiply beyond 64 bits is a config error") {
  auto config = base_config();
  config["model"]["layers"].insert(
      config["model"]["layers"].begin(),
      nlohmann::json::object(
          {{"id", "r"}, {"type", "reshape"}, {"shape", {4294967296LL, 4294967296LL, -1}}}));
  const std::string path = write("reshape_overflow.json", config.dump());
  CHECK(validate_file_error(path) == "error: " + path +
                                         ": at /model/layers/0: layer 'r' (reshape) is too "
                                         "large: its element count does not fit in 64 bits\n");
}

TEST_CASE("an input whose sample has more than 2^40 elements is a config error") {
  auto config = base_config();
  config["model"]["input"]["shape"] = {1099511627776LL, 1099511627776LL};
  config["model"]["layers"].insert(config["model"]["layers"].begin(),
                                   nlohmann::json::object({{"id", "flat"}, {"type", "flatten"}}));
  const std::string path = write("input_overflow.json", config.dump());
  CHECK(validate_file_error(path) ==
        "error: " + path +
            ": at /model/input/shape: a sample of shape [1099511627776, 1099511627776] has more "
            "than 2^40 (1,099,511,627,776) elements\n");
}

TEST_CASE("a layer whose weights number more than 64 bits can count is a config error") {
  auto config = base_config();
  config["model"]["input"]["shape"] = {1099511627776LL};
  config["model"]["layers"][0]["units"] = 1099511627776LL;
  const std::string path = write("params_overflow.json", config.dump());
  CHECK(validate_file_error(path) == "error: " + path +
                                         ": at /model/layers/0: layer 'fc1' (dense) is too "
                                         "large: its parameter count does not fit in 64 bits\n");
}

TEST_CASE("a device or a FIFO given as the config is refused without reading it") {
  CHECK(validate_file_error("/dev/zero") ==
        "error: /dev/zero: cannot read config file '/dev/zero': it is a character device, not a "
        "regular file\n");
  const std::string fifo = scratch("config.fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // With no writer, opening the FIFO to read would block forever.
  CHECK(validate_file_error(fifo) == "error: " + fifo + ": cannot read config file '" + fifo +
                                         "': it is a FIFO (named pipe), not a regular file\n");
  CHECK(validate_file_error(scratch("")) == "error: " + scratch("") +
                                                ": cannot read config file '" + scratch("") +
                                                "': it is a directory, not a regular file\n");
}

TEST_CASE("an included device is refused and named by the include entry") {
  const std::string path = write("includes_zero.json", R"({"include": ["/dev/zero"]})");
  CHECK(validate_file_error(path) ==
        "error: " + path +
            ": at /include/0: cannot read included file '/dev/zero': it is a character device, "
            "not a regular file\n");
}

TEST_CASE("a config file over 64 MiB is refused before it is read") {
  const std::string path = scratch("huge.json");
  std::ofstream(path).close();
  // A sparse file: its size is what is checked, and it costs no disk.
  fs::resize_file(path, (std::uintmax_t{64} << 20) + 1);
  CHECK(validate_file_error(path) == "error: " + path + ": cannot read config file '" + path +
                                         "': it holds more than 64 MiB (67108864 bytes), the "
                                         "most ipusim reads\n");
}

TEST_CASE("JSON nested deeper than 64 levels is refused at the level it passes the bound") {
  std::string deep = "{\"model\": ";
  std::string pointer = "/model";
  for (int level = 1; level < 70; ++level)
    deep += "[";
  for (int level = 1; level < 64; ++level)
    pointer += "/0";
  deep += std::string(69, ']') + "}";
  const std::string path = write("deep.json", deep);
  CHECK(validate_file_error(path) ==
        "error: " + path + ": at " + pointer + ": the JSON nests deeper than 64 levels\n");
}

TEST_CASE("a long description is refused instead of being copied into every report") {
  CHECK(validate_error({"--set", "description=" + std::string(10'001, 'x')}) ==
        "error: --set description=" + std::string(10'001, 'x') +
            ": at /description: expected a description of at most 10,000 bytes, found 10001\n");
}

TEST_CASE("a bandwidth below 1 kB/s is refused instead of overflowing the cycle counter") {
  CHECK(validate_error({"--set", "hardware.memory_bandwidth=1e-300B/s"}) ==
        "error: --set hardware.memory_bandwidth=1e-300B/s: at /hardware/memory_bandwidth: "
        "expected a bandwidth from 1kB/s to 1PB/s, found \"1e-300B/s\" (the ideal preset models "
        "free transfers)\n");
  CHECK(validate_error({"--set", "hardware.peak_flops={\"fp16\": \"0FLOPS\"}"}) ==
        "error: --set hardware.peak_flops={\"fp16\": \"0FLOPS\"}: at /hardware/peak_flops/fp16: "
        "expected a FLOP rate from 1MFLOPS to 1000PFLOPS, found \"0FLOPS\"\n");
}

TEST_CASE("samples per weight update beyond 2^50 are refused at the accumulation count") {
  CHECK(validate_error({"--gac", "1099511627776", "--micro-batch", "16777216"}) ==
        "error: --gac 1099511627776: at /pipeline/gradient_accumulation_count: micro_batch_size "
        "x gradient_accumulation_count x replication_factor is more than 2^50 samples per "
        "weight update; ipusim counts at most 1,125,899,906,842,624\n");
}

TEST_CASE("a micro-batch that moves more than 1 PiB through the model is refused") {
  const CliResult result =
      run_ipusim({"validate", "configs/bert_large_4ipu.json", "--micro-batch", "16777216"});
  CHECK(result.code == 2);
  CHECK(result.err ==
        "error: --micro-batch 16777216: at /pipeline/micro_batch_size: one micro-batch of "
        "16777216 samples moves more than 2^50 bytes (1 PiB) through the model; that is not "
        "plausible for one weight update's micro-batch\n");
}

TEST_CASE("a run whose step overflows the cycle counter is a config error, not a wrong answer") {
  const CliResult result =
      run_ipusim({"run", kBaseConfig, "--no-numeric", "--set", "hardware.preset=gc200", "--set",
                  "hardware.host_link_bandwidth=1kB/s", "--set", "hardware.clock=100GHz", "--set",
                  "hardware.memory_per_ipu=1PB", "--set", "model.input.shape=[1073741824]",
                  "--micro-batch", "1024"});
  CHECK(result.code == 2);
  CHECK(result.out.empty());
  CHECK(result.err ==
        "error: " + kBaseConfig +
            ": the run is too large to simulate: its simulated time does not fit in 64 bits; "
            "check the hardware figures and the pipeline's sizes\n");
}

TEST_CASE("numeric mode refused for replicas names the option that set them") {
  const CliResult result = run_ipusim({"run", kBaseConfig, "--replicas", "2", "--numeric"});
  CHECK(result.code == 2);
  CHECK(result.err ==
        "error: --replicas 2: at /pipeline/replication_factor: numeric mode runs one replica, "
        "but replication_factor is 2\n");
}

TEST_CASE("an empty output path is refused instead of silently writing nothing") {
  const CliResult result = run_ipusim({"run", kBaseConfig, "--json", ""});
  CHECK(result.code == 1);
  CHECK(result.out.empty());
  CHECK(result.err == "error: --json: expected a path, found an empty one\n");
}

TEST_CASE("train counts outside their range are usage errors, not wrapped products") {
  const CliResult epochs = run_ipusim({"train", kBaseConfig, "--epochs", "99999999999999999999"});
  CHECK(epochs.code == 1);
  CHECK(epochs.err ==
        "error: --epochs: expected an integer from 1 to 1000000, found '99999999999999999999'\n");
  const CliResult steps = run_ipusim({"train", kBaseConfig, "--steps", "0"});
  CHECK(steps.code == 1);
  CHECK(steps.err == "error: --steps: expected an integer from 1 to 1099511627776, found '0'\n");
}

TEST_CASE("every schedule validates at the largest accumulation count without walking it") {
  // Before, the GPU-world schedules simulated all M micro-batches here and ran for hours.
  for (const char* schedule : {"grouped", "interleaved", "sequential", "gpipe", "1f1b",
                               "interleaved_1f1b", "zero_bubble_h1"}) {
    std::vector<std::string> args = {"validate",   "configs/tf1_mnist_2ipu.json",
                                     "--schedule", schedule,
                                     "--gac",      "1099511627776"};
    // interleaved_1f1b interleaves two stages an IPU: the MLP cut into four.
    if (std::string(schedule) == "interleaved_1f1b") {
      for (const auto& set : kTf1FourStages) {
        args.push_back("--set");
        args.push_back(set);
      }
    }
    const CliResult result = run_ipusim(args);
    INFO(schedule << ": " << result.err);
    CHECK(result.code == 0);
    CHECK(result.out.find(std::string(", ") + schedule +
                          " schedule, gradient accumulation 1099511627776,") != std::string::npos);
  }
}

TEST_CASE("the step table of a schedule too long to print is refused at the accumulation count") {
  const CliResult result =
      run_ipusim({"schedule", "configs/tf1_mnist_2ipu.json", "--gac", "1099511627776"});
  CHECK(result.code == 2);
  CHECK(result.out.empty());
  // Grouped on 2 stages makes 8 tasks a micro-batch: F and B of each stage, a copy each way,
  // the infeed and the outfeed; 8 x 2^40 = 8,796,093,022,208 and 10,000,000 / 8 = 1,250,000.
  CHECK(result.err ==
        "error: --gac 1099511627776: at /pipeline/gradient_accumulation_count: ipusim schedule "
        "prints every task of a repeat, and 1,099,511,627,776 micro-batches make "
        "8,796,093,022,208 tasks, more than the 10,000,000 it prints; the pattern repeats after "
        "the ramp-up, so a count of at most 1,250,000 shows it\n");
}

TEST_CASE("text that is not UTF-8 is refused where it enters, not when a report is written") {
  const std::string bad = "\xff\xfe";
  const std::string shown = "\\xff\\xfe";  // as escapes: raw, an 8-bit terminal could act on them
  CHECK(validate_error({"--set", "description=" + bad}) ==
        "error: --set description=" + shown + ": the override is not valid UTF-8 text\n");
  CHECK(validate_error({"--splits", bad}) ==
        "error: --splits " + shown + ": the override is not valid UTF-8 text\n");
  const CliResult result = run_ipusim({"run", "tests/tools/data/" + bad + ".json"});
  CHECK(result.code == 2);
  CHECK(result.err ==
        "error: tests/tools/data/" + shown + ".json: the file name is not valid UTF-8 text\n");
}

TEST_CASE("a pool window that no micro-batch could compute is refused by every command") {
  // A 2^31 window with "same" padding over a 26 x 26 image: 2^62 comparisons a pixel.
  for (const char* command : {"validate", "model", "train", "plan"}) {
    INFO(command);
    const CliResult result = run_ipusim(
        {command, "configs/keras_cnn_2stage.json", "--set", "/model/layers/2/pool=2147483648",
         "--set", "/model/layers/2/padding=\"same\"", "--set", "/model/layers/2/stride=2"});
    CHECK(result.code == 2);
    CHECK(result.out.empty());
    CHECK(result.err ==
          "error: configs/keras_cnn_2stage.json: at /model/layers/2: layer 'max_pooling2d' "
          "(maxpool2d) computes 1.6e+09 PFLOP for one micro-batch of 64 samples, and the model "
          "1.6e+09 PFLOP: more than 2^60 (1.15 EFLOP), which no weight update's micro-batch "
          "computes\n");
  }
}

TEST_CASE("next-token labels over a vocabulary of one id are refused at /data/labels") {
  const CliResult result =
      run_ipusim({"validate", "configs/gpt_tiny_2ipu.json", "--set", "/model/layers/1/vocab_size=1",
                  "--set", "/model/layers/17/units=1"});
  CHECK(result.code == 2);
  CHECK(result.err ==
        "error: configs/gpt_tiny_2ipu.json: at /data/labels: next-token labels need a "
        "vocabulary of at least 2 ids, but layer 'embeddings' (embedding) has vocab_size 1\n");
}

TEST_CASE("a NUL in a value is shown escaped and the message goes on past it") {
  const CliResult result =
      run_ipusim({"validate", kBaseConfig, "--set", "/model/layers/1/id=\"a\\u0000b\""});
  CHECK(result.code == 2);
  const auto at = result.err.find("'a\\x00b'");
  REQUIRE(at != std::string::npos);
  // The whole message is there: the NUL no longer ends it.
  CHECK(result.err.size() > at + 9);
  CHECK(result.err.back() == '\n');
}
