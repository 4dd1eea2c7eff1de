// The kernels over sequences of tokens that ViT and GPT models need: token_mean, token_select,
// position_table and class_token. Hand-computed values and gradients against central
// differences.

#include <catch2/catch.hpp>

#include "models/kernels/kernels.hpp"
#include "tests/models/kernels_test_support.hpp"

using namespace ipusim::models;
using namespace ipusim::models::testing;

namespace {

Layer token_select(std::int64_t index) {
  Layer layer = make_layer(LayerType::kTokenSelect, "select");
  layer.params.index = index;
  return layer;
}

}  // namespace

TEST_CASE("token_mean averages the tokens of each sample, feature by feature") {
  const auto kernel = kernel_for(make_layer(LayerType::kTokenMean), {{3, 2}});
  CHECK(kernel->output_shape() == Shape{2});
  CHECK(kernel->parameters().empty());
  // Sample 0: tokens [1, 10], [2, 20], [6, 30]; sample 1: [0, -3] three times.
  const Tensor x({2, 3, 2}, std::vector<float>{1, 10, 2, 20, 6, 30, 0, -3, 0, -3, 0, -3});
  const ForwardResult result = kernel->forward({&x}, {}, {});
  CHECK(values_of(result.output) == std::vector<float>{3, 20, 0, -3});
  CHECK(result.saved.saved_bytes() == 0);
  const Tensor dy({2, 2}, std::vector<float>{3, -6, 9, 0});
  CHECK(values_of(kernel->backward(dy, result.saved, {}, {}).at(0)) ==
        std::vector<float>{1, -2, 1, -2, 1, -2, 3, 0, 3, 0, 3, 0});
}

TEST_CASE("token_mean over tokens of rank 2 keeps their shape") {
  const auto kernel = kernel_for(make_layer(LayerType::kTokenMean), {{4, 2, 3}});
  CHECK(kernel->output_shape() == Shape{2, 3});
  check_gradients(make_layer(LayerType::kTokenMean), {random_tensor({2, 4, 2, 3}, 60)});
  check_gradients(make_layer(LayerType::kTokenMean), {random_tensor({2, 5, 3}, 61)}, {}, SIZE_MAX,
                  DType::kFp16);
}

TEST_CASE("token_select copies one token and scatters its gradient into zeros") {
  const Tensor x({2, 3, 2}, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  const Tensor dy({2, 2}, std::vector<float>{-1, -2, -3, -4});
  SECTION("the first token, ViT's class token") {
    const auto kernel = kernel_for(token_select(0), {{3, 2}});
    CHECK(kernel->output_shape() == Shape{2});
    CHECK(values_of(kernel->forward({&x}, {}, {}).output) == std::vector<float>{1, 2, 7, 8});
    CHECK(values_of(kernel->backward(dy, {}, {}, {}).at(0)) ==
          std::vector<float>{-1, -2, 0, 0, 0, 0, -3, -4, 0, 0, 0, 0});
  }
  SECTION("index -1, the last token, as a GPT reads it") {
    const auto kernel = kernel_for(token_select(-1), {{3, 2}});
    CHECK(values_of(kernel->forward({&x}, {}, {}).output) == std::vector<float>{5, 6, 11, 12});
    CHECK(values_of(kernel->backward(dy, {}, {}, {}).at(0)) ==
          std::vector<float>{0, 0, 0, 0, -1, -2, 0, 0, 0, 0, -3, -4});
  }
  SECTION("gradients") {
    check_gradients(token_select(1), {random_tensor({2, 3, 4}, 62)});
    check_gradients(token_select(-2), {random_tensor({2, 3, 2, 2}, 63)});
  }
}
