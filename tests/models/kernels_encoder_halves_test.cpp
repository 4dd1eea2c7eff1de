// The kernels of an encoder's halves, transformer_attention and transformer_feed_forward:
// gradients against central differences, and the encoder equal to the two in a row.

#include <catch2/catch.hpp>

#include "models/kernels/kernels.hpp"
#include "models/layers/layer_info.hpp"
#include "tests/models/kernels_test_support.hpp"

using namespace ipusim::models;
using namespace ipusim::models::testing;

namespace {

Layer attention_half(std::int64_t s, std::int64_t h, std::int64_t heads, double rate) {
  return transformer(LayerType::kTransformerAttention, s, h, heads, 0, rate);
}

Layer feed_forward_half(std::int64_t s, std::int64_t h, std::int64_t ffn, double rate) {
  return transformer(LayerType::kTransformerFeedForward, s, h, 0, ffn, rate);
}

std::vector<Tensor> parameters_of(const Kernel& kernel, std::uint64_t seed) {
  std::vector<Tensor> params;
  for (const ParameterSpec& spec : kernel.parameters())
    params.push_back(random_tensor(spec.shape, seed + params.size()));
  return params;
}

}  // namespace

TEST_CASE("transformer attention and feed-forward gradients match central differences") {
  for (const DType dtype : {DType::kFp32, DType::kFp16}) {
    INFO(dtype_name(dtype));
    check_gradients(attention_half(3, 4, 2, 0.0), {random_tensor({2, 3, 4}, 30)}, {}, SIZE_MAX,
                    dtype);
    check_gradients(attention_half(3, 4, 1, 0.2), {random_tensor({2, 3, 4}, 31)}, {}, SIZE_MAX,
                    dtype);
    const Tensor mask({2, 3}, std::vector<float>{1, 0, 1, 1, 1, 0});
    check_gradients(attention_half(3, 4, 2, 0.1), {random_tensor({2, 3, 4}, 32), mask}, {}, 1,
                    dtype);
    check_gradients(feed_forward_half(3, 4, 6, 0.0), {random_tensor({2, 3, 4}, 33)}, {}, SIZE_MAX,
                    dtype);
    check_gradients(feed_forward_half(3, 4, 5, 0.2), {random_tensor({2, 3, 4}, 34)}, {}, SIZE_MAX,
                    dtype);
  }
}

TEST_CASE("an encoder's halves hold 4h² + 4h + 2h and 2h·ffn + ffn + h + 2h parameters") {
  const auto attention = kernel_for(attention_half(8, 16, 4, 0.1), {{8, 16}});
  const auto feed_forward = kernel_for(feed_forward_half(8, 16, 64, 0.1), {{8, 16}});
  CHECK(attention->parameters().size() == 10);
  CHECK(feed_forward->parameters().size() == 6);
  CHECK(parameter_count(*attention) == 4 * 16 * 16 + 4 * 16 + 2 * 16);      // 1,120
  CHECK(parameter_count(*feed_forward) == 2 * 16 * 64 + 64 + 16 + 2 * 16);  // 2,160
  const auto encoder =
      kernel_for(transformer(LayerType::kTransformerEncoder, 8, 16, 4, 64, 0.1), {{8, 16}});
  CHECK(parameter_count(*encoder) == 3280);
  for (const Layer& layer : {attention_half(8, 16, 4, 0.1), feed_forward_half(8, 16, 64, 0.1)}) {
    const auto kernel = kernel_for(layer, {{8, 16}});
    for (const DType dtype : {DType::kFp32, DType::kFp16}) {
      const LayerInfo info = layer_info(layer, {{8, 16}}, {8, 16}, dtype);
      CHECK(info.params == parameter_count(*kernel));
      const auto typed = kernel_for(layer, {{8, 16}}, dtype);
      const Tensor x = random_tensor({2, 8, 16}, 3);
      CHECK(typed->forward({&x}, parameters_of(*typed, 4), {}).saved.saved_bytes() ==
            2 * info.saved_bytes + info.seed_bytes);
    }
  }
  CHECK(attention->saved_bytes_per_micro_batch() == 16);
  CHECK(feed_forward->saved_bytes_per_micro_batch() == 8);
}

TEST_CASE("an encoder computes its attention half then its feed-forward half, bit for bit") {
  const Tensor mask({2, 4}, std::vector<float>{1, 1, 0, 1, 1, 0, 1, 1});
  for (const DType dtype : {DType::kFp32, DType::kFp16}) {
    INFO(dtype_name(dtype));
    const auto encoder = kernel_for(transformer(LayerType::kTransformerEncoder, 4, 8, 2, 16, 0.3),
                                    {{4, 8}, {4}}, dtype);
    const auto attention = kernel_for(attention_half(4, 8, 2, 0.3), {{4, 8}, {4}}, dtype);
    const auto feed_forward = kernel_for(feed_forward_half(4, 8, 16, 0.3), {{4, 8}}, dtype);
    std::vector<Tensor> params = parameters_of(*encoder, 40);
    for (Tensor& param : params)
      round_to_dtype(param, dtype);
    const std::span<const Tensor> all(params);
    Tensor x = random_tensor({2, 4, 8}, 41);
    round_to_dtype(x, dtype);
    const ForwardContext context{5, 2};
    const ForwardResult whole = encoder->forward({&x, &mask}, all, context);
    const ForwardResult first = attention->forward({&x, &mask}, all.first(10), context);
    const ForwardResult second = feed_forward->forward({&first.output}, all.last(6), context);
    CHECK(bit_identical(whole.output, second.output));
    CHECK(whole.saved.saved_bytes() == first.saved.saved_bytes() + second.saved.saved_bytes());
    CHECK(whole.saved.seeds.size() == 3);
    CHECK(whole.saved.seeds[1] == first.saved.seeds.at(1));
    CHECK(whole.saved.seeds[2] == second.saved.seeds.at(0));

    const Tensor dy = random_tensor(whole.output.shape(), 42);
    auto whole_sums = sum_accumulators(*encoder);
    auto first_sums = sum_accumulators(*attention);
    auto second_sums = sum_accumulators(*feed_forward);
    const auto dx = encoder->backward(dy, whole.saved, all, whole_sums);
    const auto d_middle = feed_forward->backward(dy, second.saved, all.last(6), second_sums);
    const auto dx_halves =
        attention->backward(d_middle.at(0), first.saved, all.first(10), first_sums);
    REQUIRE(dx.size() == 2);
    REQUIRE(dx_halves.size() == 2);
    CHECK(bit_identical(dx[0], dx_halves[0]));
    for (std::size_t p = 0; p < 16; ++p) {
      INFO("parameter " << p);
      CHECK(bit_identical(whole_sums[p].sum(),
                          p < 10 ? first_sums[p].sum() : second_sums[p - 10].sum()));
    }
  }
}
