// The kernels over sequences of tokens that ViT and GPT models need: token_mean, token_select,
// position_table and class_token. Hand-computed values and gradients against central
// differences.

#include <cmath>

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

TEST_CASE("position_table adds its table to every sample and sums its gradient over them") {
  const auto kernel = kernel_for(make_layer(LayerType::kPositionTable), {{2, 2}});
  REQUIRE(kernel->parameters().size() == 1);
  CHECK(kernel->parameters()[0].role == ParameterSpec::Role::kTable);
  CHECK(kernel->parameters()[0].shape == Shape{2, 2});
  const Tensor x({2, 2, 2}, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8});
  const std::vector<Tensor> table{Tensor({2, 2}, std::vector<float>{10, 20, 30, 40})};
  const ForwardResult result = kernel->forward({&x}, table, {});
  CHECK(values_of(result.output) == std::vector<float>{11, 22, 33, 44, 15, 26, 37, 48});
  CHECK(result.saved.saved_bytes() == 0);
  const Tensor dy({2, 2, 2}, std::vector<float>{1, 2, 3, 4, -1, 0, 1, 2});
  auto accumulators = sum_accumulators(*kernel);
  CHECK(values_of(kernel->backward(dy, result.saved, table, accumulators).at(0)) == values_of(dy));
  CHECK(values_of(accumulators[0].sum()) == std::vector<float>{0, 2, 4, 6});
  check_gradients(make_layer(LayerType::kPositionTable), {random_tensor({2, 3, 4}, 64)});
  check_gradients(make_layer(LayerType::kPositionTable), {random_tensor({2, 3, 4}, 65)}, {},
                  SIZE_MAX, DType::kFp16);
}

TEST_CASE("class_token puts its token first and sums the first row's gradient into it") {
  const auto kernel = kernel_for(make_layer(LayerType::kClassToken), {{2, 3}});
  CHECK(kernel->output_shape() == Shape{3, 3});
  REQUIRE(kernel->parameters().size() == 1);
  CHECK(kernel->parameters()[0].role == ParameterSpec::Role::kToken);
  CHECK(kernel->parameters()[0].shape == Shape{3});
  const Tensor x({2, 2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  const std::vector<Tensor> token{Tensor({3}, std::vector<float>{-1, -2, -3})};
  const ForwardResult result = kernel->forward({&x}, token, {});
  CHECK(values_of(result.output) ==
        std::vector<float>{-1, -2, -3, 1, 2, 3, 4, 5, 6, -1, -2, -3, 7, 8, 9, 10, 11, 12});
  CHECK(result.saved.saved_bytes() == 0);
  Tensor dy({2, 3, 3});
  for (std::int64_t i = 0; i < dy.elements(); ++i)
    dy[i] = static_cast<float>(i);
  auto accumulators = sum_accumulators(*kernel);
  CHECK(values_of(kernel->backward(dy, result.saved, token, accumulators).at(0)) ==
        std::vector<float>{3, 4, 5, 6, 7, 8, 12, 13, 14, 15, 16, 17});
  CHECK(values_of(accumulators[0].sum()) == std::vector<float>{9, 11, 13});
  check_gradients(make_layer(LayerType::kClassToken), {random_tensor({3, 4, 2}, 66)});
  check_gradients(make_layer(LayerType::kClassToken), {random_tensor({2, 2, 5}, 67)}, {}, SIZE_MAX,
                  DType::kFp16);
}

TEST_CASE("a position table starts normal with standard deviation 0.02 and a class token at 0") {
  const std::vector<ParameterSpec> specs{{ParameterSpec::Role::kTable, {100, 100}, 100, 100},
                                         {ParameterSpec::Role::kToken, {64}, 64, 64}};
  const std::vector<Tensor> initial = initial_parameters(specs, 5, "vit", DType::kFp32);
  double sum = 0;
  double squares = 0;
  for (const float value : initial[0].values()) {
    sum += value;
    squares += double(value) * value;
  }
  const double mean = sum / 10000;
  // 10,000 draws: the mean within 4 standard errors (0.0008) of 0, the deviation within 3%.
  CHECK(std::abs(mean) < 0.0008);
  CHECK(std::abs(std::sqrt(squares / 10000 - mean * mean) - 0.02) < 0.0006);
  CHECK(values_of(initial[1]) == std::vector<float>(64, 0.0f));
}
