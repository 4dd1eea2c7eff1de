#include "models/kernels/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include <Eigen/Core>
#include <catch2/catch.hpp>

#include "models/layers/layer_info.hpp"
#include "models/layers/layer_types.hpp"
#include "tests/models/kernels_test_support.hpp"

using namespace ipusim::models;
using namespace ipusim::models::testing;

namespace {

// Distinct values 0.05 apart, shuffled, so no two pixels of a pooling window are within 2h.
Tensor spread_tensor(Shape shape, std::uint64_t seed) {
  Tensor tensor(std::move(shape));
  std::vector<std::int64_t> order(static_cast<std::size_t>(tensor.elements()));
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = static_cast<std::int64_t>(i);
  Rng rng(seed);
  for (std::size_t i = order.size() - 1; i > 0; --i)
    std::swap(order[i], order[rng.below(i + 1)]);
  for (std::int64_t i = 0; i < tensor.elements(); ++i)
    tensor[i] =
        0.05f * static_cast<float>(order[static_cast<std::size_t>(i)] - tensor.elements() / 2) +
        0.025f;
  return tensor;
}

}  // namespace

TEST_CASE("dense gradients match central differences for every activation") {
  for (const Activation activation : {Activation::kNone, Activation::kRelu, Activation::kGelu,
                                      Activation::kTanh, Activation::kGeluTanh}) {
    INFO("activation " << static_cast<int>(activation));
    check_gradients(dense(4, activation), {random_tensor({2, 3}, 1)});
  }
}

TEST_CASE("dense applies to the last axis of a rank-3 input") {
  const auto kernel = kernel_for(dense(4), {{5, 3}});
  CHECK(kernel->output_shape() == Shape{5, 4});
  check_gradients(dense(4, Activation::kTanh), {random_tensor({2, 5, 3}, 2)});
}

TEST_CASE("dense without a bias has a weight and no bias parameter") {
  const auto kernel = kernel_for(dense(4, Activation::kNone, false), {{3}});
  REQUIRE(kernel->parameters().size() == 1);
  CHECK(kernel->parameters()[0].shape == Shape{3, 4});
  check_gradients(dense(4, Activation::kNone, false), {random_tensor({2, 3}, 3)});
}

TEST_CASE("conv2d gradients match central differences with valid and same padding") {
  SECTION("valid, stride 1, relu") {
    check_gradients(conv2d(3, 3, 1, kValidPadding, Activation::kRelu),
                    {random_tensor({2, 5, 5, 2}, 4)});
  }
  SECTION("same, stride 2, gelu") {
    check_gradients(conv2d(2, 3, 2, kSamePadding, Activation::kGelu),
                    {random_tensor({2, 6, 5, 2}, 5)});
  }
}

TEST_CASE("maxpool2d gradients match central differences") {
  check_gradients(maxpool2d(2, 2, kValidPadding), {spread_tensor({2, 4, 4, 2}, 6)});
  check_gradients(maxpool2d(3, 2, kSamePadding), {spread_tensor({2, 5, 5, 2}, 7)});
}

TEST_CASE("strided same-padding windows as ResNet uses them match central differences") {
  SECTION("7x7 stride 2 over 8 pixels: two rows of padding before, three after") {
    check_gradients(conv2d(2, 7, 2, kSamePadding), {random_tensor({1, 8, 8, 1}, 20)});
  }
  SECTION("1x1 stride 2, the projection shortcut: no padding") {
    check_gradients(conv2d(3, 1, 2, kSamePadding), {random_tensor({2, 6, 6, 2}, 21)});
  }
  SECTION("3x3 max pool stride 2 over 6 pixels: one row of padding after") {
    check_gradients(maxpool2d(3, 2, kSamePadding), {spread_tensor({2, 6, 6, 2}, 22)});
  }
}

TEST_CASE("batch norm over images normalises each channel over the batch, rows and columns") {
  Layer layer = make_layer(LayerType::kBatchNorm, "bn");
  layer.params.epsilon = kBatchNormEpsilon;
  layer.params.momentum = kBatchNormMomentum;
  check_gradients(layer, {random_tensor({2, 3, 3, 2}, 23)});
  // Channel 0 holds 1, 3, 5, 7 (mean 4, variance 5) and channel 1 holds 2 four times.
  const Tensor x({2, 1, 2, 2}, std::vector<float>{1, 2, 3, 2, 5, 2, 7, 2});
  const std::vector<Tensor> params{Tensor({2}, 1.0f), Tensor({2}, 0.0f)};
  const ForwardResult result = kernel_for(layer, {{1, 2, 2}})->forward({&x}, params, {});
  CHECK(result.statistics[0][0] == 4.0f);
  CHECK(result.statistics[0][1] == 2.0f);
  CHECK(result.statistics[1][0] == 5.0f);
  CHECK(result.statistics[1][1] == 0.0f);
}

TEST_CASE("global_average_pool2d gradients match central differences") {
  check_gradients(make_layer(LayerType::kGlobalAveragePool2d), {random_tensor({2, 3, 4, 5}, 24)});
}

TEST_CASE("global_average_pool2d takes the mean of each channel over the image") {
  const auto kernel = kernel_for(make_layer(LayerType::kGlobalAveragePool2d), {{2, 2, 2}});
  CHECK(kernel->output_shape() == Shape{2});
  CHECK(kernel->parameters().empty());
  // Channel 0: 1, 3, 5, 7; channel 1: 10, 20, 30, 60.
  const Tensor x({1, 2, 2, 2}, std::vector<float>{1, 10, 3, 20, 5, 30, 7, 60});
  const ForwardResult result = kernel->forward({&x}, {}, {});
  CHECK(std::vector<float>(result.output.values().begin(), result.output.values().end()) ==
        std::vector<float>{4, 30});
  CHECK(result.saved.saved_bytes() == 0);
  const Tensor dy({1, 2}, std::vector<float>{4, -8});
  const Tensor dx = kernel->backward(dy, result.saved, {}, {}).at(0);
  CHECK(std::vector<float>(dx.values().begin(), dx.values().end()) ==
        std::vector<float>{1, -2, 1, -2, 1, -2, 1, -2});
}

TEST_CASE("relu, gelu and dropout gradients match central differences") {
  check_gradients(make_layer(LayerType::kRelu), {spread_tensor({2, 7}, 8)});
  check_gradients(make_layer(LayerType::kGelu), {random_tensor({2, 7}, 9)});
  check_gradients(dropout(0.5), {random_tensor({2, 7}, 10)});
}

TEST_CASE("a slice copies its range forward and scatters it back into zeros") {
  const auto kernel = kernel_for(slice(0, 1, 2), {{4, 3}});
  const Tensor x = random_tensor({2, 4, 3}, 20);
  const Tensor y = kernel->forward({&x}, {}, {}).output;
  REQUIRE(y.shape() == Shape{2, 2, 3});
  for (std::int64_t b = 0; b < 2; ++b) {
    for (std::int64_t i = 0; i < 6; ++i)
      CHECK(y[b * 6 + i] == x[b * 12 + 3 + i]);  // rows 1 and 2 of each sample
  }
  const Tensor dx = kernel->backward(Tensor({2, 2, 3}, 1.0f), {}, {}, {}).at(0);
  for (std::int64_t i = 0; i < 24; ++i) {
    const std::int64_t row = (i % 12) / 3;
    CHECK(dx[i] == (row == 1 || row == 2 ? 1.0f : 0.0f));
  }
}

TEST_CASE("add, concat, slice, flatten and reshape gradients match central differences") {
  check_gradients(
      make_layer(LayerType::kAdd),
      {random_tensor({2, 3}, 11), random_tensor({2, 3}, 12), random_tensor({2, 3}, 13)});
  check_gradients(concat(-1), {random_tensor({2, 2, 3}, 14), random_tensor({2, 2, 1}, 15)});
  check_gradients(concat(0), {random_tensor({2, 2, 3}, 16), random_tensor({2, 1, 3}, 17)});
  check_gradients(slice(-1, 1, 2), {random_tensor({2, 2, 4}, 21)});
  check_gradients(slice(0, 0, 1), {random_tensor({2, 3, 2}, 22)});
  check_gradients(make_layer(LayerType::kFlatten), {random_tensor({2, 2, 3}, 18)});
  check_gradients(reshape({3, -1}), {random_tensor({2, 6}, 19)});
}

TEST_CASE("softmax cross-entropy gradients match central differences") {
  check_gradients(make_layer(LayerType::kSoftmaxCrossEntropy), {random_tensor({3, 4}, 20)},
                  {2, 0, 3});
  check_gradients(make_layer(LayerType::kSoftmaxCrossEntropy), {random_tensor({2, 2, 3}, 21)},
                  {0, 2, 1, 1});
  check_gradients(make_layer(LayerType::kSoftmaxCrossEntropy), {random_tensor({2, 3, 4}, 22)},
                  {1, -1, 3, -1, -1, 0});
}

TEST_CASE("softmax cross-entropy averages over the rows with a target and ignores label -1") {
  const auto kernel = kernel_for(make_layer(LayerType::kSoftmaxCrossEntropy), {{2, 10}});
  Tensor logits({2, 2, 10}, 0.0f);
  logits[1 * 10 + 4] = 50.0f;  // a row without a target: large logits change nothing
  const std::vector<int> labels{0, -1, 9, -1};
  const ForwardResult result = kernel->forward({&logits}, {}, {0, 0, labels});
  CHECK(result.output[0] == 2.30258512f);  // ln(10), the mean of the two rows with a target
  std::vector<GradientAccumulator> none;
  const Tensor gradient = kernel->backward(Tensor({1}, 1.0f), result.saved, {}, none)[0];
  CHECK(gradient[0 * 10 + 0] == -0.45f);  // (0.1 - 1) / 2
  CHECK(gradient[2 * 10 + 1] == 0.05f);   // 0.1 / 2
  for (std::int64_t c = 0; c < 10; ++c) {
    CHECK(gradient[1 * 10 + c] == 0.0f);
    CHECK(gradient[3 * 10 + c] == 0.0f);
  }
}

TEST_CASE("softmax cross-entropy of uniform logits over 10 classes is ln(10)") {
  const auto kernel = kernel_for(make_layer(LayerType::kSoftmaxCrossEntropy), {{10}});
  const Tensor logits({4, 10}, 0.0f);
  const std::vector<int> labels{0, 3, 9, 3};
  const ForwardResult result = kernel->forward({&logits}, {}, {0, 0, labels});
  CHECK(result.output.shape() == Shape{1});
  CHECK(result.output[0] == 2.30258512f);
  std::vector<GradientAccumulator> none;
  const Tensor gradient = kernel->backward(Tensor({1}, 1.0f), result.saved, {}, none)[0];
  CHECK(gradient[0 * 10 + 0] == -0.225f);  // (0.1 - 1) / 4
  CHECK(gradient[0 * 10 + 1] == 0.025f);   // 0.1 / 4
}

TEST_CASE("a dense layer computes x W + b") {
  const auto kernel = kernel_for(dense(3), {{2}});
  const Tensor x({1, 2}, std::vector<float>{1, 2});
  const std::vector<Tensor> params{Tensor({2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6}),
                                   Tensor({3}, std::vector<float>{0.5f, -0.5f, 1})};
  const Tensor y = kernel->forward({&x}, params, {}).output;
  CHECK(y.shape() == Shape{1, 3});
  CHECK(std::vector<float>(y.values().begin(), y.values().end()) ==
        std::vector<float>{9.5f, 11.5f, 16.0f});
}

TEST_CASE("conv2d of a 3x3 image with a 2x2 kernel of ones sums each window") {
  const auto kernel = kernel_for(conv2d(1, 2, 1, kValidPadding), {{3, 3, 1}});
  CHECK(kernel->output_shape() == Shape{2, 2, 1});
  const Tensor x({1, 3, 3, 1}, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9});
  const std::vector<Tensor> params{Tensor({2, 2, 1, 1}, 1.0f), Tensor({1}, 0.0f)};
  const Tensor y = kernel->forward({&x}, params, {}).output;
  CHECK(std::vector<float>(y.values().begin(), y.values().end()) ==
        std::vector<float>{12, 16, 24, 28});
}

TEST_CASE("same padding follows TensorFlow: ceil(in / stride) outputs, extra padding at the end") {
  CHECK(kernel_for(conv2d(1, 3, 2, kSamePadding), {{28, 28, 1}})->output_shape() ==
        Shape{14, 14, 1});
  CHECK(kernel_for(conv2d(8, 3, 1, kValidPadding), {{28, 28, 1}})->output_shape() ==
        Shape{26, 26, 8});
  // A 2x2 pool with stride 2 over 3 columns pads one column on the right only, so the last
  // window sees the last column alone.
  const auto pool = kernel_for(maxpool2d(2, 2, kSamePadding), {{1, 3, 1}});
  CHECK(pool->output_shape() == Shape{1, 2, 1});
  const Tensor x({1, 1, 3, 1}, std::vector<float>{-3, -1, -2});
  const ForwardResult result = pool->forward({&x}, {}, {});
  CHECK(result.output[0] == -1.0f);
  CHECK(result.output[1] == -2.0f);
  CHECK(result.saved.indices == std::vector<std::int32_t>{1, 2});
}

TEST_CASE("a strided same convolution pads TensorFlow's way: the odd row and column at the end") {
  // 4 pixels, 3 taps, stride 2: 2 outputs and 1 padding pixel, after the image (PyTorch-style
  // symmetric padding would put it before and give 1 + 2 + 5 + 6 = 14 at the first output).
  const auto kernel = kernel_for(conv2d(1, 3, 2, kSamePadding), {{4, 4, 1}});
  CHECK(kernel->output_shape() == Shape{2, 2, 1});
  Tensor x({1, 4, 4, 1});
  for (std::int64_t i = 0; i < 16; ++i)
    x[i] = static_cast<float>(i + 1);
  const std::vector<Tensor> params{Tensor({3, 3, 1, 1}, 1.0f), Tensor({1}, 0.0f)};
  const Tensor y = kernel->forward({&x}, params, {}).output;
  CHECK(std::vector<float>(y.values().begin(), y.values().end()) ==
        std::vector<float>{54, 45, 72, 54});
  CHECK(kernel_for(conv2d(64, 7, 2, kSamePadding), {{224, 224, 3}})->output_shape() ==
        Shape{112, 112, 64});
  CHECK(kernel_for(maxpool2d(3, 2, kSamePadding), {{112, 112, 64}})->output_shape() ==
        Shape{56, 56, 64});
}

TEST_CASE("gelu is the exact erf form, not the tanh approximation") {
  const auto kernel = kernel_for(make_layer(LayerType::kGelu), {{2}});
  const Tensor x({1, 2}, std::vector<float>{1.0f, -1.0f});
  const Tensor y = kernel->forward({&x}, {}, {}).output;
  CHECK(y[0] == 0.841344774f);  // the tanh form gives 0.841192
  CHECK(y[1] == -0.158655256f);
}

TEST_CASE("gelu with approximate tanh is PyTorch's tanh form, and its gradient matches") {
  Layer layer = make_layer(LayerType::kGelu);
  layer.params.gelu_form = GeluForm::kTanh;
  const auto kernel = kernel_for(layer, {{3}});
  const Tensor x({1, 3}, std::vector<float>{1.0f, -1.0f, 2.0f});
  const Tensor y = kernel->forward({&x}, {}, {}).output;
  // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) in double, rounded to float32; torch's
  // gelu(approximate='tanh') gives the same three.
  CHECK(y[0] == 0.841192f);
  CHECK(y[1] == -0.15880801f);
  CHECK(y[2] == 1.9545977f);
  check_gradients(layer, {random_tensor({2, 7}, 9)});
}

TEST_CASE("saved bytes follow the stash rule for every kernel") {
  struct Case {
    Layer layer;
    std::vector<Shape> inputs;
    std::int64_t per_sample;
  };
  const std::vector<Case> cases = {
      {dense(128), {{784}}, 784 * 4},
      {dense(128, Activation::kRelu), {{784}}, 784 * 4 + 128 * 4},
      {dense(128, Activation::kTanh), {{784}}, 784 * 4 + 128 * 4},
      {dense(128, Activation::kGelu), {{784}}, 784 * 4 + 128 * 4},
      {conv2d(32, 3, 1, kValidPadding, Activation::kRelu),
       {{28, 28, 1}},
       784 * 4 + 26 * 26 * 32 * 4},
      {conv2d(8, 3, 1, kSamePadding), {{28, 28, 1}}, 784 * 4},
      {make_layer(LayerType::kRelu), {{100}}, 400},
      {make_layer(LayerType::kGelu), {{100}}, 400},
      {maxpool2d(2, 2, kValidPadding), {{26, 26, 32}}, 13 * 13 * 32 * 4},
      {make_layer(LayerType::kGlobalAveragePool2d), {{7, 7, 8}}, 0},
      {dropout(0.5), {{1600}}, 0},
      {make_layer(LayerType::kSoftmaxCrossEntropy), {{10}}, 10 * 4 + 4},
      {make_layer(LayerType::kFlatten), {{5, 5, 64}}, 0},
      {reshape({25, 64}), {{5, 5, 64}}, 0},
      {make_layer(LayerType::kAdd), {{7}, {7}}, 0},
      {concat(-1), {{7}, {3}}, 0},
      {slice(0, 1, 2), {{4, 3}}, 0},
  };
  constexpr std::int64_t kBatch = 3;
  for (const Case& c : cases) {
    INFO(layer_type_name(c.layer.type));
    const auto kernel = kernel_for(c.layer, c.inputs);
    CHECK(kernel->saved_bytes_per_sample() == c.per_sample);
    std::vector<Tensor> inputs;
    for (const Shape& shape : c.inputs) {
      Shape batched{kBatch};
      batched.insert(batched.end(), shape.begin(), shape.end());
      inputs.push_back(random_tensor(batched, 1));
    }
    std::vector<Tensor> params;
    for (const ParameterSpec& spec : kernel->parameters())
      params.emplace_back(spec.shape);
    const std::vector<int> labels(kBatch, 1);
    const ForwardResult result = kernel->forward(pointers(inputs), params, {0, 0, labels});
    CHECK(result.saved.saved_bytes() ==
          kBatch * c.per_sample + (c.layer.type == LayerType::kDropout ? 8 : 0));
  }
}

TEST_CASE("every kernel keeps the bytes the memory model charges, in fp32 and fp16") {
  const std::vector<std::pair<Layer, std::vector<Shape>>> cases = {
      {dense(16, Activation::kGelu), {{4, 8}}},
      {dense(16), {{8}}},
      {conv2d(4, 3, 2, kSamePadding, Activation::kRelu), {{9, 9, 3}}},
      {maxpool2d(2, 2, kValidPadding), {{8, 8, 4}}},
      {make_layer(LayerType::kGlobalAveragePool2d), {{3, 3, 4}}},
      {make_layer(LayerType::kRelu), {{12}}},
      {make_layer(LayerType::kGelu), {{12}}},
      {dropout(0.1), {{12}}},
      {make_layer(LayerType::kAdd), {{12}, {12}}},
      {concat(0), {{2, 3}, {4, 3}}},
      {make_layer(LayerType::kFlatten), {{2, 3}}},
      {reshape({3, 2}), {{2, 3}}},
      {make_layer(LayerType::kSoftmaxCrossEntropy), {{10}}},
      {make_layer(LayerType::kSoftmaxCrossEntropy), {{6, 10}}},
      {make_layer(LayerType::kTokenMean), {{5, 3}}},
      {make_layer(LayerType::kTokenSelect), {{5, 3}}},
      {make_layer(LayerType::kPositionTable), {{5, 3}}},
      {make_layer(LayerType::kClassToken), {{5, 3}}},
  };
  for (const DType dtype : {DType::kFp32, DType::kFp16}) {
    for (const auto& [layer, inputs] : cases) {
      INFO(layer_type_name(layer.type) << " " << dtype_name(dtype));
      const auto kernel = kernel_for(layer, inputs, dtype);
      const LayerInfo info = layer_info(layer, inputs, kernel->output_shape(), dtype);
      constexpr std::int64_t kBatch = 2;
      std::vector<Tensor> batch;
      for (const Shape& shape : inputs) {
        Shape batched{kBatch};
        batched.insert(batched.end(), shape.begin(), shape.end());
        batch.push_back(random_tensor(batched, 1));
      }
      std::vector<Tensor> params;
      for (const ParameterSpec& spec : kernel->parameters())
        params.emplace_back(spec.shape);
      // One label per row of logits, which only the loss reads.
      const std::vector<int> labels(
          std::size_t(kBatch * element_count(inputs[0]) / inputs[0].back()), 1);
      const ForwardResult result = kernel->forward(pointers(batch), params, {0, 0, labels});
      CHECK(result.saved.saved_bytes() == kBatch * info.saved_bytes + info.seed_bytes);
    }
  }
}

TEST_CASE("a dropout mask depends only on the layer, the micro-batch and the repeat") {
  const Tensor x({4, 64}, 1.0f);
  const auto output = [&](const std::string& id, std::int64_t microbatch, std::int64_t repeat,
                          std::uint64_t seed = 7) {
    const auto y = make_kernel(dropout(0.5, id), {{64}}, DType::kFp32, seed)
                       ->forward({&x}, {}, {microbatch, repeat, {}})
                       .output;
    return std::vector<float>(y.data(), y.data() + y.elements());
  };
  CHECK(output("drop", 3, 1) == output("drop", 3, 1));
  CHECK(output("drop", 3, 1) != output("drop", 4, 1));
  CHECK(output("drop", 3, 1) != output("drop", 3, 2));
  CHECK(output("drop", 3, 1) != output("other", 3, 1));
  CHECK(output("drop", 3, 1) != output("drop", 3, 1, 8));
}

TEST_CASE("dropout keeps an 8-byte seed and draws the same mask again in backward") {
  const auto kernel = kernel_for(dropout(0.25), {{1000}});
  const Tensor x({4, 1000}, 3.0f);
  const ForwardResult result = kernel->forward({&x}, {}, {});
  CHECK(result.saved.saved_bytes() == 8);
  CHECK(result.saved.tensors.empty());
  const Tensor ones({4, 1000}, 1.0f);
  const Tensor dx = kernel->backward(ones, result.saved, {}, {}).at(0);
  std::int64_t kept = 0;
  for (std::int64_t i = 0; i < x.elements(); ++i) {
    const bool keep = result.output[i] != 0.0f;
    kept += keep ? 1 : 0;
    CHECK(result.output[i] == (keep ? 4.0f : 0.0f));
    CHECK(dx[i] == (keep ? 4.0f / 3.0f : 0.0f));
  }
  // 4000 draws at keep probability 0.75: 3000 +- 3.7 standard deviations of 27.4.
  CHECK(kept > 2900);
  CHECK(kept < 3100);
}

TEST_CASE("the same inputs give bit-identical outputs and gradients in fresh allocations") {
  const Layer layer = conv2d(16, 3, 1, kSamePadding, Activation::kGelu);
  const auto kernel = kernel_for(layer, {{12, 12, 8}});
  const auto run = [&] {
    const Tensor x = random_tensor({5, 12, 12, 8}, 30);
    std::vector<Tensor> params;
    for (const ParameterSpec& spec : kernel->parameters())
      params.push_back(random_tensor(spec.shape, 31));
    const ForwardResult result = kernel->forward({&x}, params, {});
    auto accumulators = sum_accumulators(*kernel);
    const Tensor dx = kernel->backward(random_tensor(result.output.shape(), 32), result.saved,
                                       params, accumulators)[0];
    return std::vector<Tensor>{result.output, dx, accumulators[0].sum(), accumulators[1].sum()};
  };
  const std::vector<Tensor> first = run();
  const std::vector<Tensor> padding(17, Tensor({3}));  // shifts later allocations
  const std::vector<Tensor> second = run();
  for (std::size_t i = 0; i < first.size(); ++i)
    CHECK(bit_identical(first[i], second[i]));
}

TEST_CASE("fp16 kernels round outputs and gradients to binary16 values") {
  const auto kernel = kernel_for(dense(8, Activation::kGelu), {{16}}, DType::kFp16);
  const Tensor x = random_tensor({4, 16}, 40);
  std::vector<Tensor> params{random_tensor({16, 8}, 41), random_tensor({8}, 42)};
  const ForwardResult result = kernel->forward({&x}, params, {});
  auto accumulators = sum_accumulators(*kernel);
  const Tensor dx =
      kernel->backward(random_tensor({4, 8}, 43), result.saved, params, accumulators)[0];
  const auto all_fp16 = [](const Tensor& tensor) {
    return std::all_of(tensor.values().begin(), tensor.values().end(),
                       [](float v) { return round_to_fp16(v) == v; });
  };
  CHECK(all_fp16(result.output));
  CHECK(all_fp16(result.saved.tensors[1]));
  CHECK(all_fp16(dx));
  CHECK(all_fp16(accumulators[0].sum()));
  CHECK(all_fp16(accumulators[1].sum()));
  CHECK_FALSE(all_fp16(random_tensor({4, 16}, 40)));
}

TEST_CASE("every layer type but input has a kernel") {
  for (const std::string& name : layer_type_names()) {
    const LayerType type = *layer_type_from_name(name);
    CHECK(has_kernel(type) == (type != LayerType::kInput));
  }
}

TEST_CASE("making a kernel pins Eigen's cache sizes, so products sum in one order on any CPU") {
  // Eigen would otherwise size its product blocks from this CPU's caches (a 32 KiB L1 cuts a
  // 784-deep product into two blocks, a 48 KiB one does not) and the last bits would vary.
  kernel_for(dense(4), {{3}});
  CHECK(Eigen::l1CacheSize() == 48 * 1024);
  CHECK(Eigen::l2CacheSize() == 2 * 1024 * 1024);
  CHECK(Eigen::l3CacheSize() == 32 * 1024 * 1024);
}
