#include "models/layers/layer_info.hpp"

#include "models/layers/layer_types.hpp"
#include "models/layers/shape_inference.hpp"
#include "sim/core/checked.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {
namespace {

// What an overflow names: "its parameter count does not fit in 64 bits".
constexpr const char* kParams = "parameter count";
constexpr const char* kAttention = "attention matrix (heads x sequence_length^2)";

// Per logit: max, subtract, exp, sum and normalise (the log is once per row).
constexpr double kSoftmaxCrossEntropyFlops = kSoftmaxFlops;

// Where a layer's FLOPs come from (see the header for which layer takes which).
enum class FlopsRule {
  kOperations,  // the sum over its operations, so that the two cannot disagree
  kProducts,    // the sum over its operations on the AMP units: the model FLOPs of attention
  kOwn,         // Cost's forward_flops and backward_flops
};

// The figures that differ by layer type; the rest follows from the shapes.
struct Cost {
  std::int64_t params = 0;
  double forward_flops = 0;  // kOwn only
  double backward_flops = 0;
  std::int64_t saved_bytes = 0;
  std::int64_t seed_bytes = 0;
  FlopsRule flops = FlopsRule::kOwn;
};

struct Sizes {
  std::int64_t in = 0;   // elements of the first input
  std::int64_t out = 0;  // elements of the output
  std::int64_t d = 0;    // bytes per element
};

// Dense and conv2d share the bias, activation and saved-input rules.
Cost linear_cost(const Layer& layer, const Sizes& size, std::int64_t weights) {
  const LayerParams& p = layer.params;
  Cost cost;
  cost.params = core::checked_add(
      weights, p.bias ? (layer.type == LayerType::kDense ? p.units : p.filters) : 0, kParams);
  cost.saved_bytes = size.in * size.d + (p.activation == Activation::kNone ? 0 : size.out * size.d);
  cost.flops = FlopsRule::kOperations;
  return cost;
}

Cost dense_cost(const Layer& layer, const Shape& input, const Sizes& size) {
  return linear_cost(layer, size, core::checked_mul(input.back(), layer.params.units, kParams));
}

Cost conv2d_cost(const Layer& layer, const Shape& input, const Sizes& size) {
  const LayerParams& p = layer.params;
  const std::int64_t weights = core::checked_mul(
      core::checked_mul(core::checked_mul(p.kernel_h, p.kernel_w, kParams), input[2], kParams),
      p.filters, kParams);
  return linear_cost(layer, size, weights);
}

// relu, gelu, tanh, add and the views: their operations' FLOPs, and `saved` bytes kept.
Cost elementwise_cost(std::int64_t saved) {
  Cost cost;
  cost.saved_bytes = saved;
  cost.flops = FlopsRule::kOperations;
  return cost;
}

Cost maxpool2d_cost(const Layer& layer, const Sizes& size) {
  const double window = double(layer.params.pool_h) * double(layer.params.pool_w);
  return {0, window * double(size.out), double(size.out), size.out * 4, 0};
}

// A sum over the image per channel and one division; backward spreads each channel's gradient,
// divided by the pixel count, over the image. Only the input's shape is needed for that, so
// nothing is kept.
Cost global_average_pool2d_cost(const Sizes& size) {
  return {0, double(size.in + size.out), double(size.in), 0, 0};
}

Cost softmax_cross_entropy_cost(const Shape& input, const Sizes& size) {
  const std::int64_t labels = size.in / input.back();
  return {0, kSoftmaxCrossEntropyFlops * double(size.in), double(size.in),
          size.in * size.d + labels * 4, 0};
}

// Token, position and type rows, then a layer norm. Backward scatter-adds into the tables
// (reading the token ids) and runs the layer norm's backward (reading its input).
Cost embedding_cost(const LayerParams& p, const Sizes& size, std::int64_t id_inputs) {
  Cost cost;
  const std::int64_t rows = core::checked_add(
      core::checked_add(p.vocab_size, p.max_positions, kParams), p.token_types, kParams);
  cost.params = core::checked_add(core::checked_mul(rows, p.hidden, kParams),
                                  p.normalized ? 2 * p.hidden : 0, kParams);
  // An add per position or type vector, then the layer norm.
  const int adds = (p.positions ? 1 : 0) + (p.token_types > 0 ? 1 : 0);
  cost.forward_flops = double(size.out) * (adds + (p.normalized ? kLayerNormFlops : 0));
  cost.backward_flops = 2 * cost.forward_flops;
  cost.saved_bytes = (p.normalized ? size.out * size.d : 0) + 4 * p.sequence_length * id_inputs;
  return cost;
}

// Q, K, V and output projections with their biases; what multi-head attention keeps.
struct AttentionShape {
  std::int64_t s = 0;
  std::int64_t h = 0;
  std::int64_t heads = 0;
  bool dropout = false;
};

Cost attention_cost(const AttentionShape& a, const Sizes& size) {
  using core::checked_add;
  using core::checked_mul;
  const std::int64_t scores = checked_mul(a.heads, checked_mul(a.s, a.s, kAttention), kAttention);
  Cost cost;
  cost.params = checked_mul(4, checked_add(checked_mul(a.h, a.h, kParams), a.h, kParams), kParams);
  cost.flops = FlopsRule::kProducts;
  cost.seed_bytes = a.dropout ? kDropoutSeedBytes : 0;
  // Input, Q, K, V and the context; the probabilities, and their dropped-out copy.
  const std::int64_t kept =
      checked_add(checked_mul(5, a.s * a.h, kAttention),
                  checked_mul(a.dropout ? 2 : 1, scores, kAttention), kAttention);
  cost.saved_bytes = checked_mul(kept, size.d, kAttention);
  return cost;
}

// An encoder's attention half: the attention, then dropout, add and layer norm, whose input it
// keeps. Its dropouts are the probabilities' and the block output's.
Cost transformer_attention_cost(const LayerParams& p, const Sizes& size) {
  using core::checked_add;
  using core::checked_mul;
  const std::int64_t s = p.sequence_length;
  const std::int64_t h = p.hidden;
  Cost cost = attention_cost({s, h, p.heads, p.rate > 0}, size);
  cost.params = checked_add(cost.params, 2 * h, kParams);
  cost.seed_bytes *= 2;
  cost.saved_bytes =
      checked_add(cost.saved_bytes, checked_mul(s * h, size.d, kAttention), kAttention);
  return cost;
}

// An encoder's feed-forward half: W1 [hidden, ffn], b1, gelu, W2 [ffn, hidden], b2, dropout,
// add and layer norm. It keeps its input (the FFN's and the residual's), the GELU's input and
// output, and the layer norm's input.
Cost transformer_feed_forward_cost(const LayerParams& p, const Sizes& size) {
  using core::checked_add;
  using core::checked_mul;
  const std::int64_t s = p.sequence_length;
  const std::int64_t h = p.hidden;
  const std::int64_t first = checked_add(checked_mul(h, p.ffn, kParams), p.ffn, kParams);
  Cost cost;
  cost.params = checked_add(first, checked_add(first - p.ffn + h, 2 * h, kParams), kParams);
  cost.flops = FlopsRule::kProducts;
  cost.seed_bytes = p.rate > 0 ? kDropoutSeedBytes : 0;
  const std::int64_t kept =
      checked_add(checked_mul(2, s * h, kAttention),
                  checked_mul(2, checked_mul(s, p.ffn, kAttention), kAttention), kAttention);
  cost.saved_bytes = checked_mul(kept, size.d, kAttention);
  return cost;
}

// An encoder is its two halves, figure for figure.
Cost transformer_encoder_cost(const LayerParams& p, const Sizes& size) {
  using core::checked_add;
  const Cost attention = transformer_attention_cost(p, size);
  const Cost feed_forward = transformer_feed_forward_cost(p, size);
  return {checked_add(attention.params, feed_forward.params, kParams),
          0,
          0,
          checked_add(attention.saved_bytes, feed_forward.saved_bytes, kAttention),
          attention.seed_bytes + feed_forward.seed_bytes,
          FlopsRule::kProducts};
}

// layer_norm and batch_norm: a scale and a bias per channel (the last axis); the kernel keeps
// the input and recomputes the statistics in backward.
Cost normalization_cost(const Shape& input, const Sizes& size) {
  const double flops = kLayerNormFlops * double(size.out);
  return {2 * input.back(), flops, 2 * flops, size.in * size.d, 0};
}

Cost type_cost(const Layer& layer, const std::vector<Shape>& inputs, const Sizes& size) {
  switch (layer.type) {
    case LayerType::kDense:
      return dense_cost(layer, inputs.front(), size);
    case LayerType::kConv2d:
      return conv2d_cost(layer, inputs.front(), size);
    case LayerType::kMaxPool2d:
      return maxpool2d_cost(layer, size);
    case LayerType::kGlobalAveragePool2d:
      return global_average_pool2d_cost(size);
    case LayerType::kDropout:
      return {0, double(size.out), double(size.out), 0, kDropoutSeedBytes};
    case LayerType::kRelu:
      return elementwise_cost(size.out * size.d);
    case LayerType::kGelu:
      return elementwise_cost(size.in * size.d);
    case LayerType::kAdd:
      return elementwise_cost(0);
    case LayerType::kSoftmaxCrossEntropy:
      return softmax_cross_entropy_cost(inputs.front(), size);
    case LayerType::kEmbedding:
      return embedding_cost(layer.params, size, std::int64_t(inputs.size()));
    case LayerType::kTransformerEncoder:
      return transformer_encoder_cost(layer.params, size);
    case LayerType::kTransformerAttention:
      return transformer_attention_cost(layer.params, size);
    case LayerType::kTransformerFeedForward:
      return transformer_feed_forward_cost(layer.params, size);
    case LayerType::kAttention:
      return attention_cost(
          {inputs.front()[0], inputs.front()[1], layer.params.heads, layer.params.rate > 0}, size);
    case LayerType::kLayerNorm:
    case LayerType::kBatchNorm:
      return normalization_cost(inputs.front(), size);
    case LayerType::kSoftmax:
      return {0, kSoftmaxFlops * double(size.out), 3 * double(size.out), size.out * size.d, 0};
    case LayerType::kTanh:
      return elementwise_cost(size.out * size.d);
    case LayerType::kInput:
    case LayerType::kFlatten:
    case LayerType::kReshape:
    case LayerType::kConcat:
    case LayerType::kSlice:
      return elementwise_cost(0);  // views of their inputs (a concat copies at most)
  }
  core::fail_invariant("layer.type is one of LayerType's values", __FILE__, __LINE__);
}

void fill_traffic(const Layer& layer, const std::vector<Shape>& inputs, LayerInfo& info,
                  std::int64_t d) {
  if (layer_type_row(layer.type).view)
    return;  // it relabels its input's memory
  std::int64_t input_bytes = 0;
  for (const Shape& input : inputs)
    input_bytes += element_count(input) * d;
  info.bytes_moved_forward = input_bytes + info.activation_bytes;
  // The loss starts backward, so it reads no output gradient; token ids get no gradient.
  const bool loss = layer.type == LayerType::kSoftmaxCrossEntropy;
  const bool integer_input = layer.type == LayerType::kEmbedding;
  info.bytes_moved_backward =
      (loss ? 0 : info.activation_bytes) + info.saved_bytes + (integer_input ? 0 : input_bytes);
}

// Sums in operation order, so that a layer's figure is bit for bit its operations' sum.
void fill_flops(const Cost& cost, LayerInfo& info) {
  if (cost.flops == FlopsRule::kOwn) {
    info.forward_flops = cost.forward_flops;
    info.backward_flops = cost.backward_flops;
    return;
  }
  for (const Operation& op : info.operations) {
    if (cost.flops == FlopsRule::kProducts && !on_amp(op.op_class))
      continue;
    info.forward_flops += operation_flops(op, op.forward);
    info.backward_flops += operation_flops(op, op.backward);
  }
}

}  // namespace

LayerInfo layer_info(const Layer& layer, const std::vector<Shape>& inputs, const Shape& output,
                     DType dtype) {
  IPUSIM_CHECK(!inputs.empty());
  const Sizes size = {element_count(inputs.front()), element_count(output), dtype_bytes(dtype)};
  const Cost cost = type_cost(layer, inputs, size);
  LayerInfo info;
  info.output = output;
  info.params = cost.params;
  info.weight_elements = cost.params;
  info.operations = lower_layer(layer, inputs, output);
  fill_flops(cost, info);
  info.activation_bytes = size.out * size.d;
  // An attention half's output is a tensor inside the encoder it halves, which the live
  // activations count no more than the encoder's others (Q, K, V, the FFN's hidden layer).
  info.live_bytes = layer.type == LayerType::kTransformerAttention ? 0 : info.activation_bytes;
  info.saved_bytes = cost.saved_bytes;
  info.seed_bytes = cost.seed_bytes;
  info.weight_bytes = cost.params * size.d;
  fill_traffic(layer, inputs, info, size.d);
  return info;
}

StashBytes stash_bytes(const Layer& layer, const std::vector<Shape>& inputs, const Shape& output,
                       DType dtype) {
  IPUSIM_CHECK(!inputs.empty());
  const Sizes size = {element_count(inputs.front()), element_count(output), dtype_bytes(dtype)};
  const Cost cost = type_cost(layer, inputs, size);
  return {cost.saved_bytes, cost.seed_bytes};
}

}  // namespace ipusim::models
