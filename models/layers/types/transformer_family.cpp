#include "models/layers/types/transformer_family.hpp"

#include <string>
#include <utility>

#include "sim/core/checked.hpp"

namespace ipusim::models {
namespace {

// Dropout, residual add and layer norm after the attention block and after the FFN.
Operation add_layer_norm(std::string name, double elements, double hidden) {
  return normalization_op(std::move(name), elements, kLayerNormFlops + 2, hidden);
}

}  // namespace

void read_transformer(const core::ConfigNode& layer, LayerParams& params, bool attention,
                      bool feed_forward) {
  read_key(layer, kTransformerHidden, params);
  if (attention) {
    const core::ConfigNode heads = layer.at("heads");
    params.heads = heads.as_positive_int();
    if (params.hidden % params.heads != 0)
      heads.fail("heads (" + std::to_string(params.heads) + ") must divide hidden (" +
                 std::to_string(params.hidden) + ")");
  }
  read_key(layer, kTransformerSequenceLength, params);
  if (feed_forward)
    params.ffn = layer.get_int("ffn", 4 * params.hidden, 1, core::kMaxCount);
  read_key(layer, kTransformerDropout, params);
  if (attention)
    read_key(layer, kCausalKey, params);
}

Shape transformer_shape(const Layer& layer, const std::vector<InputShape>& inputs) {
  const Shape expected = {layer.params.sequence_length, layer.params.hidden};
  if (inputs[0].shape != expected) {
    fail_layer(layer, "needs an input of shape " + shape_text(expected) +
                          " (sequence_length, hidden), but " + input_text(inputs[0]));
  }
  if (inputs.size() == 2)
    expect_sequence(layer, inputs[1], expected[0], "a padding mask");
  return expected;
}

std::unique_ptr<Kernel> transformer_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                           DType dtype, std::uint64_t seed) {
  return detail::make_transformer(layer, inputs, dtype, seed);
}

// Q, K, V and output projections with their biases; what multi-head attention keeps. A causal
// mask changes none of it (kCausalKey).
LayerCost attention_block_cost(const AttentionShape& a, const CostSizes& size) {
  using core::checked_add;
  using core::checked_mul;
  const std::int64_t scores =
      checked_mul(a.heads, checked_mul(a.s, a.s, kAttentionMatrix), kAttentionMatrix);
  LayerCost cost;
  cost.params = checked_mul(4, checked_add(checked_mul(a.h, a.h, kParamCount), a.h, kParamCount),
                            kParamCount);
  cost.param_tensors = 4;  // the packed Q, K, V projection and the output projection, with biases
  cost.flops = FlopsRule::kProducts;
  cost.seed_bytes = a.dropout ? kDropoutSeedBytes : 0;
  // Input, Q, K, V and the context; the probabilities, and their dropped-out copy.
  const std::int64_t kept =
      checked_add(checked_mul(5, a.s * a.h, kAttentionMatrix),
                  checked_mul(a.dropout ? 2 : 1, scores, kAttentionMatrix), kAttentionMatrix);
  cost.saved_bytes = checked_mul(kept, size.d, kAttentionMatrix);
  return cost;
}

// The projections, QKᵀ, softmax, dropout on the probabilities (when it has a rate), the
// attention-weighted sum and the output projection.
std::vector<Operation> attention_block_operations(double s, double h, double heads, bool dropout) {
  const double head = h / heads;
  const double scores = heads * s * s;
  std::vector<Operation> ops = {
      product("qkv_projection", OpClass::kMatmul, {s, h, 3 * h}),
      product("attention_scores", OpClass::kMatmul, {s, head, s, heads, false}),
      softmax_op("softmax", OpClass::kReduction, scores, 2, s),
  };
  if (dropout)
    ops.push_back(
        lowered(vector_op("attention_dropout", OpClass::kElementwise, scores, kDropoutFlops),
                VectorLowering::kDropout, s));
  ops.push_back(product("context", OpClass::kMatmul, {s, s, head, heads, false}));
  ops.push_back(product("output_projection", OpClass::kMatmul, {s, h, h}));
  return ops;
}

// The attention, then dropout, add and layer norm, whose input it keeps. Its dropouts are the
// probabilities' and the block output's.
LayerCost encoder_attention_cost(const LayerParams& p, const CostSizes& size) {
  using core::checked_add;
  using core::checked_mul;
  const std::int64_t s = p.sequence_length;
  const std::int64_t h = p.hidden;
  LayerCost cost = attention_block_cost({s, h, p.heads, p.rate > 0}, size);
  cost.params = checked_add(cost.params, 2 * h, kParamCount);
  cost.param_tensors += 2;  // the layer norm's scale and shift
  cost.seed_bytes *= 2;
  cost.saved_bytes =
      checked_add(cost.saved_bytes, checked_mul(s * h, size.d, kAttentionMatrix), kAttentionMatrix);
  return cost;
}

// W1 [hidden, ffn], b1, gelu, W2 [ffn, hidden], b2, dropout, add and layer norm. It keeps its
// input (the FFN's and the residual's), the GELU's input and output, and the layer norm's input.
LayerCost encoder_feed_forward_cost(const LayerParams& p, const CostSizes& size) {
  using core::checked_add;
  using core::checked_mul;
  const std::int64_t s = p.sequence_length;
  const std::int64_t h = p.hidden;
  const std::int64_t first = checked_add(checked_mul(h, p.ffn, kParamCount), p.ffn, kParamCount);
  LayerCost cost;
  cost.params = checked_add(first, checked_add(first - p.ffn + h, 2 * h, kParamCount), kParamCount);
  cost.param_tensors = 6;  // W1, b1, W2, b2 and the layer norm's scale and shift
  cost.flops = FlopsRule::kProducts;
  cost.seed_bytes = p.rate > 0 ? kDropoutSeedBytes : 0;
  const std::int64_t kept = checked_add(
      checked_mul(2, s * h, kAttentionMatrix),
      checked_mul(2, checked_mul(s, p.ffn, kAttentionMatrix), kAttentionMatrix), kAttentionMatrix);
  cost.saved_bytes = checked_mul(kept, size.d, kAttentionMatrix);
  return cost;
}

// With dropout whatever its rate, as BERT trains it. Each operation is named as in the whole
// encoder.
std::vector<Operation> encoder_attention_operations(const LayerParams& p) {
  const double s = double(p.sequence_length);
  const double h = double(p.hidden);
  std::vector<Operation> ops = attention_block_operations(s, h, double(p.heads), true);
  ops.push_back(add_layer_norm("add_layer_norm_1", s * h, h));
  return ops;
}

std::vector<Operation> encoder_feed_forward_operations(const LayerParams& p) {
  const double s = double(p.sequence_length);
  const double h = double(p.hidden);
  const double f = double(p.ffn);
  return {
      product("ffn1", OpClass::kMatmul, {s, h, f}),
      lowered(vector_op("gelu", OpClass::kNonLinear, s * f, kGeluFlops), VectorLowering::kGelu, f),
      product("ffn2", OpClass::kMatmul, {s, f, h}), add_layer_norm("add_layer_norm_2", s * h, h)};
}

}  // namespace ipusim::models
