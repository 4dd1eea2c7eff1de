// The tiny residual network of configs/resnet_tiny_fashion_mnist.json through the pipeline: its
// skip connections, strided projection, batch norms and global average pool, split over three
// IPUs, train as the one-device reference does, bit for bit.

#include <catch2/catch.hpp>

#include "sim/machine/cost_model.hpp"
#include "sim/numeric/numeric.hpp"
#include "sim/numeric/training.hpp"
#include "sim/report/report.hpp"

using namespace ipusim;

namespace {

// The shipped config made small: micro-batch 4, 6 micro-batches (grouped over 3 stages takes a
// multiple of 6), 2 weight updates, synthetic data (the test must not need the Fashion-MNIST
// package).
sim::RunSpec tiny_resnet(const std::string& schedule, const std::string& recomputation) {
  std::vector<core::Override> overrides;
  for (const std::string& set :
       {"pipeline.pipeline_schedule=\"" + schedule + "\"",
        "pipeline.recomputation_mode=\"" + recomputation + "\"",
        std::string("pipeline.micro_batch_size=4"),
        std::string("pipeline.gradient_accumulation_count=6"),
        std::string("pipeline.repeat_count=2"), std::string("data.source=\"synthetic\"")})
    overrides.push_back(core::parse_set_argument(set));
  return sim::load_run_spec("configs/resnet_tiny_fashion_mnist.json", overrides);
}

}  // namespace

TEST_CASE("the tiny ResNet over three IPUs trains bit-identical to the reference") {
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"grouped", "none"},
      {"interleaved", "none"},
      {"sequential", "none"},
      {"1f1b", "none"},
      {"grouped", "recompute_then_backpropagate"},
      {"1f1b", "recompute_and_backpropagate_interleaved"}};
  std::optional<std::vector<std::vector<float>>> first_losses;
  for (const auto& [schedule, recomputation] : runs) {
    INFO(schedule << " " << recomputation);
    const sim::RunSpec spec = tiny_resnet(schedule, recomputation);
    CHECK(spec.pipeline.stages.size() == 3);
    sim::SimulateOptions options;
    options.numeric = sim::NumericMode::kOn;
    const sim::RunReport report = sim::simulate(spec, options);
    REQUIRE(report.numeric);
    CHECK(report.numeric->bit_identical);
    CHECK(report.numeric->max_abs_diff_loss == 0.0);
    CHECK(report.numeric->max_abs_diff_weights == 0.0);
    REQUIRE(report.numeric->losses.size() == 2);
    CHECK(report.numeric->losses[1].size() == 6);
    CHECK(report.numeric->losses == report.numeric->reference_losses);
    // The same seed and data train alike whatever the schedule and recomputation.
    if (!first_losses)
      first_losses = report.numeric->losses;
    CHECK(report.numeric->losses == *first_losses);
  }
}

TEST_CASE("the tiny ResNet's FIFO entries hold what its kernels keep, skip connections included") {
  const sim::RunSpec spec = tiny_resnet("grouped", "none");
  const auto data = sim::training_data(spec);
  models::ParameterStore parameters(spec.model, sim::training_options(spec));
  sim::NumericPipeline pipeline(spec, parameters, *data, {});
  const sim::CostModel cost = sim::build_cost_model(spec);
  sim::replay(spec, cost, sim::ReplayOptions{false, {&pipeline}, {}});
  // Per sample, in fp32 elements; each layer keeps its own copy. Stage 0: the image (the stem
  // convolution's input) and eight 28x28x8 tensors, the inputs of three batch norms and two
  // convolutions and the outputs of three relus. Stage 1: the 28x28x8 input of both strided
  // convolutions and six 14x14x16 tensors, the inputs of three batch norms and one convolution
  // and the outputs of two relus.
  const std::int64_t stage0 = 784 + 8 * 28 * 28 * 8;
  const std::int64_t stage1 = 2 * 28 * 28 * 8 + 6 * 14 * 14 * 16;
  CHECK(pipeline.fifo(0, 0).entry_bytes() == 4 * 4 * stage0);
  CHECK(pipeline.fifo(1, 0).entry_bytes() == 4 * 4 * stage1);
  CHECK(cost.substage(0, 0).stash_bytes == 4 * 4 * stage0);
  CHECK(cost.substage(1, 0).stash_bytes == 4 * 4 * stage1);
}
