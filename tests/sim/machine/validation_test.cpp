// The README's validation table: each row compares ipusim with a figure Graphcore or its users
// published, and pins ipusim's error inside the band the README states, so that a change of the
// cost model that moves a row shows up here. The bands are not accuracy claims.

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "sim/report/report.hpp"

using namespace ipusim;

namespace {

sim::RunReport run(const std::string& path, const std::vector<std::string>& sets = {}) {
  std::vector<core::Override> overrides;
  for (const auto& set : sets)
    overrides.push_back(core::parse_set_argument(set));
  return sim::simulate(sim::load_run_spec(path, overrides), {});
}

double busy(const sim::RunReport& report, int ipu) {
  std::int64_t cycles = 0;
  for (const auto phase : schedules::kPhases)
    cycles += report.replay.ipus[ipu].busy_in_phase[schedules::index(phase)];
  return double(cycles);
}

// Seconds per micro-batch over a whole step.
double per_micro_batch(const sim::RunReport& report) {
  return report.figures.step_seconds / double(report.spec->pipeline.gradient_accumulation_count);
}

}  // namespace

TEST_CASE("validation: the TF1 tutorial's split at dense32 is reasonably balanced") {
  // seeds/tf1-pipelining-tutorial.md: "the default split is already reasonably balanced".
  const auto report = run("configs/tf1_mnist_2ipu.json");
  const double ratio = busy(report, 0) / busy(report, 1);
  // Planned: IPU0's three products each pay their plan's compute sets and partials' reduction,
  // IPU1's two are smaller (1.77 : 1; the fitted formula gives 1.31 : 1). Balanced enough that
  // the lighter IPU is busy for more than half of the heavier one's time.
  CHECK(ratio > 1.0);
  CHECK(ratio < 2.0);
}

TEST_CASE("validation: the Keras tutorial's CNN, on one IPU and pipelined over two") {
  // seeds/keras-on-ipu-tutorial.md, SDK 3.1: one IPU with steps_per_execution 937, 166-175 us a
  // step of 64; two stages, gradient accumulation 8 and steps_per_execution 936, 208-212 us a
  // micro-batch of 64.
  const auto single = run("configs/keras_cnn_2stage.json",
                          {"pipeline.splits=[]", "pipeline.gradient_accumulation_count=1",
                           "pipeline.repeat_count=937", "pipeline.pipeline_schedule=sequential"});
  const auto pipelined = run("configs/keras_cnn_2stage.json");
  const double single_ratio = per_micro_batch(single) / 170.5e-6;
  const double pipelined_ratio = per_micro_batch(pipelined) / 210e-6;
  // With the defaults fitted to the 39 measured runs (not to these), planned: 115.1 us and
  // 152.4 us.
  CHECK(single_ratio > 0.66);
  CHECK(single_ratio < 0.69);
  CHECK(pipelined_ratio > 0.71);
  CHECK(pipelined_ratio < 0.74);
  // As measured, pipelining this small model is slower per micro-batch than one IPU.
  CHECK(per_micro_batch(pipelined) > per_micro_batch(single));
}

TEST_CASE("validation: Graphcore's BERT-Large POD16 configurations fit, as they ran") {
  for (const char* config : {"configs/bert_large_4ipu.json", "configs/bert_large_4ipu_seq384.json",
                             "configs/bert_large_4ipu_seq512.json"}) {
    INFO(config);
    CHECK(run(config).figures.fits_in_memory);
  }
}

TEST_CASE("validation: Graphcore's 5-stage BERT gradient accumulation counts are legal") {
  // The TF1 configs use 2050 and the TF2 configs 2040: multiples of 10, which Grouped needs with
  // 5 stages. PopART's 2048 runs under PopART's own rules, which ipusim does not model.
  CHECK_NOTHROW(run("configs/bert_large_4ipu.json", {"pipeline.gradient_accumulation_count=2040"}));
  CHECK_THROWS_WITH(
      run("configs/bert_large_4ipu.json", {"pipeline.gradient_accumulation_count=2048"}),
      Catch::Contains("must be a multiple of 10, but it is 2048"));
}

namespace {

// An MLPerf submission's figure with the default presets: sequences/s for packed BERT,
// images/s for ResNet-50.
double sequences_per_second(const std::string& name) {
  const auto report = run("configs/mlperf/" + name + ".json");
  REQUIRE(report.figures.fits_in_memory);
  return *report.figures.sequence_throughput;
}

double images_per_second(const std::string& name) {
  const auto report = run("configs/mlperf/" + name + ".json");
  REQUIRE(report.figures.fits_in_memory);
  return report.figures.throughput;
}

using Figure = double (*)(const std::string& name);

// One of Graphcore's 19 MLPerf Training runs: its config under configs/mlperf/, the measured
// figure (configs/mlperf/measured.csv, from ../shared/fidelity/train.csv) and what ipusim
// prints with today's defaults (the README's Validation tables).
struct MlperfRow {
  const char* name;
  Figure figure;
  double measured;
  double predicted;
};

const std::vector<MlperfRow>& mlperf_rows() {
  static const std::vector<MlperfRow> rows = {
      {"bert_v1.0_pod16", sequences_per_second, 1419.8, 1466.2},
      {"bert_v1.0_pod64", sequences_per_second, 4240.4, 4433.1},
      {"bert_v1.1_pod16", sequences_per_second, 1524.2, 1578.3},
      {"bert_v1.1_pod64", sequences_per_second, 4802.9, 4797.5},
      {"bert_v1.1_pod128", sequences_per_second, 9189.9, 9558.4},
      {"bert_v2.0_pod16", sequences_per_second, 2306, 2145.3},
      {"bert_v2.0_pod64", sequences_per_second, 7460.2, 7298.2},
      {"bert_v2.0_pod128", sequences_per_second, 12904.5, 12817.9},
      {"bert_v2.0_pod256", sequences_per_second, 19439.5, 19982.9},
      {"resnet50_v1.0_pod16", images_per_second, 27522, 27200.2},
      {"resnet50_v1.0_pod64", images_per_second, 83404, 83408.0},
      {"resnet50_v1.1_pod16", images_per_second, 29543, 27722.8},
      {"resnet50_v1.1_pod64", images_per_second, 108011, 100320.8},
      {"resnet50_v1.1_pod128", images_per_second, 178212, 183111.7},
      {"resnet50_v1.1_pod256", images_per_second, 325997, 340945.1},
      {"resnet50_v2.0_pod16", images_per_second, 43133, 38390.3},
      {"resnet50_v2.0_pod64", images_per_second, 146252, 136670.8},
      {"resnet50_v2.0_pod128", images_per_second, 229435, 234812.1},
      {"resnet50_v2.0_pod256", images_per_second, 421575, 428851.0},
  };
  return rows;
}

}  // namespace

// What the README states of the fit (tools/fit-mlperf --all): the 19 MLPerf runs at a median
// |error| of at most 3.5%, each within 11.1% (R7, ResNet-50 on a Bow-POD16, is the one past 10%,
// at 11.0%; the band leaves room for its pin of 0.05%).
TEST_CASE("validation: the MLPerf Training runs are within 11.1% of their measurements") {
  std::vector<double> errors;
  for (const auto& row : mlperf_rows()) {
    INFO(row.name);
    const double error = row.figure(row.name) / row.measured - 1;
    CHECK(std::abs(error) < 0.111);
    errors.push_back(std::abs(error));
  }
  std::sort(errors.begin(), errors.end());
  REQUIRE(errors.size() == 19);
  CHECK(errors[9] <= 0.035);
}

// Each within 0.05% of the README's figure, so that a change of the cost model shows.
TEST_CASE("validation: the MLPerf runs are predicted as the README lists") {
  for (const auto& row : mlperf_rows()) {
    INFO(row.name);
    CHECK(row.figure(row.name) == Approx(row.predicted).epsilon(0.0005));
  }
}

namespace {

// A benchmark row's figure with the default presets: a packed run's sequences/s, else its
// samples (an unpacked sequence, an image) a second.
double benchmark_figure(const std::string& name) {
  const auto report = run("configs/benchmarks/" + name + ".json");
  REQUIRE(report.figures.fits_in_memory);
  return report.figures.sequence_throughput ? *report.figures.sequence_throughput
                                            : report.figures.throughput;
}

// The 20 benchmark rows of ../shared/fidelity/train.csv: config, measured figure
// (configs/benchmarks/measured.csv) and today's prediction (the README's table).
struct BenchmarkRow {
  const char* name;
  double measured;
  double predicted;
};

const std::vector<BenchmarkRow> kBenchmarkRows = {
    {"bert_large_128_tf1_pod16", 5125, 5052.1},
    {"bert_large_128_tf1_pod64", 18907, 19081.4},
    {"bert_large_384_tf1_pod16", 1420, 1508.1},
    {"bert_large_384_tf1_pod64", 5340, 5782.9},
    {"bert_large_128_pytorch_pod16", 5592, 5896.9},
    {"bert_large_128_pytorch_pod64", 18494, 21189.5},
    {"bert_large_512_pytorch_pod16", 1969, 2073.6},
    {"bert_large_512_pytorch_pod64", 6510, 7984.1},
    {"bert_large_128_tf2_pod16", 4528, 4701.8},
    {"bert_large_squad_384_pytorch_pod16", 989, 935.6},
    {"bert_base_128_tf2_pod16", 15157, 16156.9},
    {"bert_base_128_pytorch_pod16", 15911, 15992.5},
    {"bert_base_384_tf2_pod16", 4387, 4707.3},
    {"resnet50_tf1_bow_pod16", 42029, 36701.8},
    {"resnet50_tf1_bow_pod64", 145287, 124524.1},
    {"resnet50_tf1_bow_pod256", 425514, 428851.0},
    {"resnet50_tf1_sdk3_bow_pod16", 44059, 38390.3},
    {"resnet50_tf1_sdk3_bow_pod64", 153205, 136670.8},
    {"resnet50_tf1_sdk3_bow_pod256", 456906, 428851.0},
    {"resnet50_pytorch_bow_pod16", 37061, 38609.3},
};

}  // namespace

TEST_CASE("validation: the benchmark runs are predicted as the README lists") {
  REQUIRE(kBenchmarkRows.size() == 20);
  for (const auto& row : kBenchmarkRows) {
    INFO(row.name);
    CHECK(benchmark_figure(row.name) == Approx(row.predicted).epsilon(0.0005));
  }
}

// Over all 39 measured runs, the README's summary: a median |error| of at most 4.6%. From the
// figures pinned above (each checked against ipusim within 0.05%), so that no run repeats.
TEST_CASE("validation: the 39 measured runs land at a median error of at most 4.6%") {
  std::vector<double> errors;
  for (const auto& row : mlperf_rows())
    errors.push_back(std::abs(row.predicted / row.measured - 1));
  for (const auto& row : kBenchmarkRows)
    errors.push_back(std::abs(row.predicted / row.measured - 1));
  std::sort(errors.begin(), errors.end());
  REQUIRE(errors.size() == 39);
  CHECK(errors[19] <= 0.046);
  CHECK(errors[19] > 0.045);
  CHECK(errors.back() == Approx(0.2264).epsilon(0.001));
}
