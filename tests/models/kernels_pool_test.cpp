// Pool and convolution windows with explicit padding and ceil_mode, and avgpool2d's kernel:
// output sizes worked out by hand from PyTorch's rules, hand-computed values, and gradients
// against central differences.

#include <catch2/catch.hpp>

#include "models/kernels/kernels.hpp"
#include "models/layers/window.hpp"
#include "tests/models/kernels_test_support.hpp"

using namespace ipusim::models;
using namespace ipusim::models::testing;

namespace {

Padding pads(std::int64_t top, std::int64_t left, std::int64_t bottom, std::int64_t right) {
  return {.same = false, .top = top, .left = left, .bottom = bottom, .right = right};
}

// A pool of a `pool_h` x `pool_w` window stepping by `stride` along both axes.
Layer pool(LayerType type, std::int64_t pool_h, std::int64_t pool_w, std::int64_t stride,
           Padding padding, bool ceil_mode = false, bool count_include_pad = true) {
  Layer layer = make_layer(type, "pool");
  layer.params.pool_h = pool_h;
  layer.params.pool_w = pool_w;
  layer.params.stride_h = layer.params.stride_w = stride;
  layer.params.padding = padding;
  layer.params.ceil_mode = ceil_mode;
  layer.params.count_include_pad = count_include_pad;
  return layer;
}

Layer avgpool(std::int64_t window, std::int64_t stride, Padding padding, bool ceil_mode = false,
              bool count_include_pad = true) {
  return pool(LayerType::kAvgPool2d, window, window, stride, padding, ceil_mode, count_include_pad);
}

// Distinct values 0.05 apart, so that no two pixels of a max pool window are within 2h.
Tensor distinct_tensor(Shape shape) {
  Tensor tensor(std::move(shape));
  for (std::int64_t i = 0; i < tensor.elements(); ++i)
    tensor[i] = 0.05f * static_cast<float>((i * 7) % tensor.elements()) - 0.4f;
  return tensor;
}

}  // namespace

TEST_CASE("the ResNet stem with PyTorch's padding gives 112x112 then 56x56") {
  Layer conv = conv2d(64, 7, 2, pads(3, 3, 3, 3));
  CHECK(kernel_for(conv, {{224, 224, 3}})->output_shape() == Shape{112, 112, 64});
  // floor((112 + 1 + 1 - 3) / 2) + 1 = 56
  CHECK(kernel_for(maxpool2d(3, 2, pads(1, 1, 1, 1)), {{112, 112, 64}})->output_shape() ==
        Shape{56, 56, 64});
}

TEST_CASE("ceil_mode rounds the output size up unless the last window would start past the input") {
  // in 5, window 2, stride 2: floor(3 / 2) + 1 = 2; ceil(3 / 2) + 1 = 3, whose last window
  // starts at 4, inside the input.
  CHECK(window_axis(5, 2, 2, 0, 0, false).out == 2);
  CHECK(window_axis(5, 2, 2, 0, 0, true).out == 3);
  // in 6, window 3, stride 2: floor 2, ceil 3 (the last window starts at 4).
  CHECK(window_axis(6, 3, 2, 0, 0, false).out == 2);
  CHECK(window_axis(6, 3, 2, 0, 0, true).out == 3);
  // in 4, window 1, stride 2: ceil(3 / 2) + 1 = 3, but the third window would start at 4, past
  // the input: 2, as floor gives.
  CHECK(window_axis(4, 1, 2, 0, 0, true).out == 2);
  // in 5, window 3, stride 3, one pad each side: ceil(4 / 3) + 1 = 3, but (3 - 1) x 3 = 6 is not
  // inside 5 + 1: 2.
  CHECK(window_axis(5, 3, 3, 1, 1, true).out == 2);
  // in 5, window 2, stride 2, one pad each side: ceil(5 / 2) + 1 = 4, corrected to 3.
  CHECK(window_axis(5, 2, 2, 1, 1, true).out == 3);
  CHECK(window_axis(5, 2, 2, 1, 1, false).out == 3);
  CHECK(kernel_for(pool(LayerType::kMaxPool2d, 3, 3, 2, kValidPadding, true), {{6, 5, 1}})
            ->output_shape() == Shape{3, 2, 1});
}

TEST_CASE("an explicit convolution padding pads both sides: PyTorch's padding 1 sums 14 first") {
  // The 4x4 image 1..16 under a 3x3 kernel of ones, stride 2, one pad all round: the first
  // window holds 1 + 2 + 5 + 6 (TensorFlow's "same" gives 54 there, its padding after).
  const auto kernel = kernel_for(conv2d(1, 3, 2, pads(1, 1, 1, 1)), {{4, 4, 1}});
  REQUIRE(kernel->output_shape() == Shape{2, 2, 1});
  Tensor x({1, 4, 4, 1});
  for (std::int64_t i = 0; i < 16; ++i)
    x[i] = static_cast<float>(i + 1);
  const std::vector<Tensor> params{Tensor({3, 3, 1, 1}, 1.0f), Tensor({1}, 0.0f)};
  CHECK(values_of(kernel->forward({&x}, params, {}).output) == std::vector<float>{14, 30, 57, 99});
}

TEST_CASE("a max pool's padding never wins, even over negative pixels") {
  // [-3, -1, -2] with a 1x2 window, stride 2, one pad left and right: windows {pad, -3} and
  // {-1, -2}.
  const auto kernel =
      kernel_for(pool(LayerType::kMaxPool2d, 1, 2, 2, pads(0, 1, 0, 1)), {{1, 3, 1}});
  REQUIRE(kernel->output_shape() == Shape{1, 2, 1});
  const Tensor x({1, 1, 3, 1}, std::vector<float>{-3, -1, -2});
  const ForwardResult result = kernel->forward({&x}, {}, {});
  CHECK(values_of(result.output) == std::vector<float>{-3, -1});
  CHECK(result.saved.indices == std::vector<std::int32_t>{0, 1});
}

TEST_CASE("avgpool2d divides a padded corner by the padded window or by its pixels alone") {
  // The 3x3 image 1..9, a 2x2 window, stride 2, one pad all round: the windows cover rows {0},
  // {1, 2} and the same columns, each two wide with its padding.
  const Tensor x({1, 3, 3, 1}, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9});
  const auto with_pad = kernel_for(avgpool(2, 2, pads(1, 1, 1, 1)), {{3, 3, 1}});
  REQUIRE(with_pad->output_shape() == Shape{2, 2, 1});
  // 1 / 4, (2 + 3) / 4, (4 + 7) / 4, (5 + 6 + 8 + 9) / 4
  CHECK(values_of(with_pad->forward({&x}, {}, {}).output) ==
        std::vector<float>{0.25f, 1.25f, 2.75f, 7.0f});
  const auto without_pad = kernel_for(avgpool(2, 2, pads(1, 1, 1, 1), false, false), {{3, 3, 1}});
  // 1 / 1, 5 / 2, 11 / 2, 28 / 4
  CHECK(values_of(without_pad->forward({&x}, {}, {}).output) ==
        std::vector<float>{1.0f, 2.5f, 5.5f, 7.0f});
  // Backward gives each pixel its windows' gradients over their divisors.
  const Tensor dy({1, 2, 2, 1}, std::vector<float>{4, 8, 12, 16});
  CHECK(values_of(with_pad->backward(dy, {}, {}, {}).at(0)) ==
        std::vector<float>{1, 2, 2, 3, 4, 4, 3, 4, 4});
  CHECK(values_of(without_pad->backward(dy, {}, {}, {}).at(0)) ==
        std::vector<float>{4, 4, 4, 6, 4, 4, 6, 4, 4});
}

TEST_CASE("a ceil_mode window past the padded input averages only what is inside it") {
  // [1, 2, 3, 4, 5] in 1x2 windows, stride 2: 1.5, 3.5, and 5 alone, counted once either way.
  const Tensor x({1, 1, 5, 1}, std::vector<float>{1, 2, 3, 4, 5});
  for (const bool include : {true, false}) {
    const auto kernel =
        kernel_for(pool(LayerType::kAvgPool2d, 1, 2, 2, kValidPadding, true, include), {{1, 5, 1}});
    REQUIRE(kernel->output_shape() == Shape{1, 3, 1});
    CHECK(values_of(kernel->forward({&x}, {}, {}).output) == std::vector<float>{1.5f, 3.5f, 5.0f});
  }
  // With one pad each side, ceil(5 / 2) + 1 = 4 is corrected to 3 windows: {pad, 1}, {2, 3},
  // {4, 5}.
  const auto padded =
      kernel_for(pool(LayerType::kAvgPool2d, 1, 2, 2, pads(0, 1, 0, 1), true), {{1, 5, 1}});
  REQUIRE(padded->output_shape() == Shape{1, 3, 1});
  CHECK(values_of(padded->forward({&x}, {}, {}).output) == std::vector<float>{0.5f, 2.5f, 4.5f});
}

TEST_CASE("avgpool2d keeps nothing for backward") {
  const auto kernel = kernel_for(avgpool(3, 2, pads(1, 1, 1, 1)), {{8, 8, 4}});
  CHECK(kernel->saved_bytes_per_sample() == 0);
  const Tensor x = random_tensor({2, 8, 8, 4}, 3);
  CHECK(kernel->forward({&x}, {}, {}).saved.saved_bytes() == 0);
  CHECK(kernel->parameters().empty());
}

TEST_CASE("avgpool2d gradients match central differences") {
  SECTION("2x2, stride 2, valid") {
    check_gradients(avgpool(2, 2, kValidPadding), {random_tensor({2, 4, 4, 3}, 30)});
  }
  SECTION("3x3, stride 2, padding 1, counting the padding") {
    check_gradients(avgpool(3, 2, pads(1, 1, 1, 1)), {random_tensor({2, 5, 6, 2}, 31)});
  }
  SECTION("3x3, stride 2, padding 1, not counting it, ceil_mode") {
    check_gradients(avgpool(3, 2, pads(1, 0, 1, 1), true, false),
                    {random_tensor({2, 6, 5, 2}, 32)});
  }
  SECTION("same padding, fp16") {
    check_gradients(avgpool(3, 2, kSamePadding), {random_tensor({2, 5, 5, 2}, 33)}, {}, SIZE_MAX,
                    DType::kFp16);
  }
}

TEST_CASE("max pool and convolution gradients match central differences with explicit padding") {
  SECTION("max pool 3x3, stride 2, padding 1, ceil_mode") {
    check_gradients(pool(LayerType::kMaxPool2d, 3, 3, 2, pads(1, 1, 1, 1), true),
                    {distinct_tensor({2, 6, 6, 2})});
  }
  SECTION("convolution 3x3, stride 2, asymmetric padding") {
    check_gradients(conv2d(2, 3, 2, pads(2, 0, 1, 1), Activation::kRelu),
                    {random_tensor({2, 5, 6, 2}, 34)});
  }
}
