// Causal attention: query i attends to keys j <= i only, in attention, transformer_encoder and
// transformer_attention, alone and with a padding mask.

#include <cmath>

#include <catch2/catch.hpp>

#include "models/kernels/kernels.hpp"
#include "tests/models/kernels_test_support.hpp"

using namespace ipusim::models;
using namespace ipusim::models::testing;

namespace {

Layer causal_attention(std::int64_t heads, double rate = 0.0, bool causal = true) {
  Layer layer = make_layer(LayerType::kAttention, "attention");
  layer.params.heads = heads;
  layer.params.rate = rate;
  layer.params.causal = causal;
  return layer;
}

Layer causal(Layer layer) {
  layer.params.causal = true;
  return layer;
}

// One head of width 2 with every projection the identity and no bias.
std::vector<Tensor> identity_parameters() {
  std::vector<Tensor> params;
  for (int i = 0; i < 4; ++i) {
    params.push_back(Tensor({2, 2}, std::vector<float>{1, 0, 0, 1}));
    params.push_back(Tensor({2}, 0.0f));
  }
  return params;
}

// The probabilities attention keeps (after X, Q, K, V), [batch, heads, s, s].
const Tensor& probabilities(const ForwardResult& result) {
  return result.saved.tensors.at(4);
}

}  // namespace

TEST_CASE("causal attention gives a key after the query a probability of exactly 0") {
  // Tokens [1, 0], [0, 1], [1, 1]; with identity projections the scores are x xT / sqrt 2.
  const Tensor x({1, 3, 2}, std::vector<float>{1, 0, 0, 1, 1, 1});
  const auto params = identity_parameters();
  const ForwardResult result = kernel_for(causal_attention(1), {{3, 2}})->forward({&x}, params, {});
  const Tensor& p = probabilities(result);
  // Row 0 attends to key 0 alone, so its output is token 0 exactly.
  CHECK(p[0] == 1.0f);
  CHECK(p[1] == 0.0f);
  CHECK(p[2] == 0.0f);
  CHECK(result.output[0] == 1.0f);
  CHECK(result.output[1] == 0.0f);
  // Row 1 scores keys 0 and 1 as 0 and 1 / sqrt 2; key 2 is masked.
  const double e = std::exp(1 / std::sqrt(2.0));
  CHECK(std::abs(p[3] - 1 / (1 + e)) < 1e-7);
  CHECK(std::abs(p[4] - e / (1 + e)) < 1e-7);
  CHECK(p[5] == 0.0f);
  // Row 2, the last, sees every key: scores 1, 1, 2 over sqrt 2.
  const double one = std::exp(1 / std::sqrt(2.0));
  const double two = std::exp(2 / std::sqrt(2.0));
  CHECK(std::abs(p[8] - two / (2 * one + two)) < 1e-7);
  // Without the mask, row 0 attends to every key.
  const ForwardResult full =
      kernel_for(causal_attention(1, 0.0, false), {{3, 2}})->forward({&x}, params, {});
  CHECK(probabilities(full)[1] > 0.0f);
}

TEST_CASE("causal attention with a padding mask applies both masks") {
  // Key 0 is padding: query 0 has no other key it may see and keeps key 0; query 1 sees key 1
  // alone; query 2 keys 1 and 2.
  const Tensor x({1, 3, 2}, std::vector<float>{1, 0, 0, 1, 1, 1});
  const Tensor mask({1, 3}, std::vector<float>{0, 1, 1});
  const ForwardResult result = kernel_for(causal_attention(1), {{3, 2}, {3}})
                                   ->forward({&x, &mask}, identity_parameters(), {});
  const Tensor& p = probabilities(result);
  CHECK(std::vector<float>(p.values().begin(), p.values().begin() + 6) ==
        std::vector<float>{1, 0, 0, 0, 1, 0});
  CHECK(p[6] == 0.0f);  // e^-10000 underflows
  CHECK(p[7] > 0.0f);
  CHECK(p[8] > 0.0f);
}

TEST_CASE("a causal layer's output at a position does not depend on later tokens") {
  const std::vector<Layer> layers = {
      causal_attention(2),
      causal(transformer(LayerType::kTransformerEncoder, 4, 4, 2, 6, 0.0)),
      causal(transformer(LayerType::kTransformerAttention, 4, 4, 2, 6, 0.0)),
  };
  for (const Layer& layer : layers) {
    INFO(static_cast<int>(layer.type));
    const auto kernel = kernel_for(layer, {{4, 4}});
    std::vector<Tensor> params;
    for (const ParameterSpec& spec : kernel->parameters())
      params.push_back(random_tensor(spec.shape, 50 + params.size()));
    Tensor x = random_tensor({1, 4, 4}, 40);
    const Tensor before = kernel->forward({&x}, params, {}).output;
    for (std::int64_t j = 12; j < 16; ++j)  // the last token
      x[j] += 0.5f;
    const Tensor after = kernel->forward({&x}, params, {}).output;
    for (std::int64_t i = 0; i < 12; ++i)
      CHECK(before[i] == after[i]);
    CHECK(before[12] != after[12]);
  }
}

TEST_CASE("causal attention and encoder gradients match central differences") {
  const Tensor mask({2, 3}, std::vector<float>{1, 0, 1, 0, 1, 1});
  check_gradients(causal_attention(2), {random_tensor({2, 3, 4}, 41)});
  check_gradients(causal_attention(1, 0.3), {random_tensor({2, 3, 4}, 42)});
  check_gradients(causal_attention(2), {random_tensor({2, 3, 4}, 43), mask}, {}, 1);
  check_gradients(causal(transformer(LayerType::kTransformerEncoder, 3, 4, 2, 6, 0.1)),
                  {random_tensor({2, 3, 4}, 44), mask}, {}, 1);
  check_gradients(causal(transformer(LayerType::kTransformerAttention, 3, 4, 2, 6, 0.0)),
                  {random_tensor({2, 3, 4}, 45)});
  check_gradients(causal_attention(2), {random_tensor({2, 3, 4}, 46)}, {}, SIZE_MAX, DType::kFp16);
}
