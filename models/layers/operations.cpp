#include "models/layers/operations.hpp"

#include "models/layers/shape_inference.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {
namespace {

// FLOPs per element the report counts for vector work. GELU and tanh evaluate a transcendental
// and a few multiply-adds; a layer norm takes mean, variance, normalise, scale and shift.
constexpr double kBiasFlops = 1;
constexpr double kReluFlops = 1;
constexpr double kTanhFlops = 4;
constexpr double kGeluFlops = 8;
constexpr double kDropoutFlops = 2;  // draw and multiply

// Products of [rows, inner] x [inner, cols], `count` times per sample. With weights, the right
// operand is a weight matrix read once per micro-batch; otherwise it is another activation.
struct Product {
  double rows = 0;
  double inner = 0;
  double cols = 0;
  double count = 1;
  bool weights = true;
};

Operation product(std::string name, OpClass op_class, const Product& p) {
  const double flops = 2 * p.rows * p.inner * p.cols * p.count;
  const double left = p.rows * p.inner * p.count;
  const double right = p.inner * p.cols * (p.weights ? 1 : p.count);
  const double out = p.rows * p.cols * p.count;
  Operation op{std::move(name), op_class, 1, {}, {}};
  op.forward = {flops, p.weights ? left : left + right, p.weights ? right : 0, 1};
  // Each operand's gradient reads the output gradient and the other operand.
  op.backward = {2 * flops, p.weights ? out + left : out + left + right, p.weights ? right : 0, 2};
  return op;
}

// Vector work over `elements` per sample; the backward reads the output gradient and what
// the forward saved.
Operation vector_op(std::string name, OpClass op_class, double elements, double flops_per_element,
                    int forward_sets = 1, int backward_sets = 1) {
  Operation op{std::move(name), op_class, flops_per_element, {}, {}};
  op.forward = {elements, elements, 0, forward_sets};
  op.backward = {elements, 2 * elements, 0, backward_sets};
  return op;
}

void add_activation(std::vector<Operation>& ops, Activation activation, double elements) {
  switch (activation) {
    case Activation::kNone:
      return;
    case Activation::kRelu:
      ops.push_back(vector_op("relu", OpClass::kElementwise, elements, kReluFlops));
      return;
    case Activation::kTanh:
      ops.push_back(vector_op("tanh", OpClass::kNonLinear, elements, kTanhFlops));
      return;
    case Activation::kGelu:
      ops.push_back(vector_op("gelu", OpClass::kNonLinear, elements, kGeluFlops));
      return;
  }
}

std::vector<Operation> dense_ops(const Layer& layer, const Shape& input) {
  const double inner = double(input.back());
  const double rows = double(element_count(input)) / inner;
  const double units = double(layer.params.units);
  std::vector<Operation> ops = {product("matmul", OpClass::kMatmul, {rows, inner, units})};
  if (layer.params.bias)
    ops.push_back(vector_op("bias_add", OpClass::kElementwise, rows * units, kBiasFlops));
  add_activation(ops, layer.params.activation, rows * units);
  return ops;
}

std::vector<Operation> conv2d_ops(const Layer& layer, const Shape& input, const Shape& output) {
  const LayerParams& p = layer.params;
  const double positions = double(output[0]) * double(output[1]);
  const double window = double(p.kernel_h) * double(p.kernel_w) * double(input[2]);
  Operation conv = product("conv", OpClass::kConv, {positions, window, double(p.filters)});
  // The window is gathered on the tiles, not exchanged: each input element arrives once.
  const double in = double(element_count(input));
  const double out = double(element_count(output));
  conv.forward.exchanged_elements = in;
  conv.backward.exchanged_elements = in + out;
  std::vector<Operation> ops = {conv};
  if (p.bias)
    ops.push_back(vector_op("bias_add", OpClass::kElementwise, out, kBiasFlops));
  add_activation(ops, p.activation, out);
  return ops;
}

std::vector<Operation> embedding_ops(const LayerParams& p) {
  const double tokens = double(p.sequence_length);
  const double hidden = double(p.hidden);
  Operation gather{"word_gather", OpClass::kGather, 0, {}, {}};
  gather.forward = {tokens * hidden, tokens, 0, 1};
  gather.backward = {tokens * hidden, tokens * hidden, 0, 1};  // a scatter-add into the table
  std::vector<Operation> ops = {gather};
  const int adds = (p.positions ? 1 : 0) + (p.token_types > 0 ? 1 : 0);
  if (adds > 0) {
    ops.push_back(vector_op("position_type_add", OpClass::kElementwise, adds * tokens * hidden, 1));
  }
  if (p.normalized)
    ops.push_back(
        vector_op("layer_norm", OpClass::kReduction, tokens * hidden, kLayerNormFlops, 2, 2));
  return ops;
}

// Dropout, residual add and layer norm after the attention block and after the FFN.
Operation add_layer_norm(std::string name, double elements) {
  return vector_op(std::move(name), OpClass::kReduction, elements, kLayerNormFlops + 2, 2, 2);
}

// Multi-head self-attention over [s, h]: the projections, QKᵀ, softmax, dropout on the
// probabilities (when it has a rate), the attention-weighted sum and the output projection.
std::vector<Operation> attention_ops(double s, double h, double heads, bool dropout) {
  const double head = h / heads;
  const double scores = heads * s * s;
  std::vector<Operation> ops = {
      product("qkv_projection", OpClass::kMatmul, {s, h, 3 * h}),
      product("attention_scores", OpClass::kMatmul, {s, head, s, heads, false}),
      vector_op("softmax", OpClass::kReduction, scores, kSoftmaxFlops, 2, 1),
  };
  if (dropout)
    ops.push_back(vector_op("attention_dropout", OpClass::kElementwise, scores, kDropoutFlops));
  ops.push_back(product("context", OpClass::kMatmul, {s, s, head, heads, false}));
  ops.push_back(product("output_projection", OpClass::kMatmul, {s, h, h}));
  return ops;
}

// An encoder's halves: its attention block (with dropout whatever its rate, as BERT trains
// it), then its feed-forward block. The encoder is the two concatenated, so each operation is
// named as in the whole layer.
std::vector<Operation> transformer_attention_ops(const LayerParams& p) {
  const double s = double(p.sequence_length);
  const double h = double(p.hidden);
  std::vector<Operation> ops = attention_ops(s, h, double(p.heads), true);
  ops.push_back(add_layer_norm("add_layer_norm_1", s * h));
  return ops;
}

std::vector<Operation> transformer_feed_forward_ops(const LayerParams& p) {
  const double s = double(p.sequence_length);
  const double h = double(p.hidden);
  const double f = double(p.ffn);
  return {product("ffn1", OpClass::kMatmul, {s, h, f}),
          vector_op("gelu", OpClass::kNonLinear, s * f, kGeluFlops),
          product("ffn2", OpClass::kMatmul, {s, f, h}), add_layer_norm("add_layer_norm_2", s * h)};
}

Operation maxpool_op(const LayerParams& p, double in, double out) {
  Operation pool =
      vector_op("maxpool", OpClass::kReduction, out * double(p.pool_h) * double(p.pool_w), 1);
  pool.backward.work = in;  // each window's gradient goes to its argmax
  return pool;
}

// Backward reads one gradient per channel and writes every pixel's share of it.
Operation global_average_pool_op(double in, double out) {
  Operation pool{"global_average_pool", OpClass::kReduction, 1, {}, {}};
  pool.forward = {in, in, 0, 1};
  pool.backward = {in, out, 0, 1};
  return pool;
}

std::vector<Operation> encoder_ops(const LayerParams& p) {
  std::vector<Operation> ops = transformer_attention_ops(p);
  for (Operation& op : transformer_feed_forward_ops(p))
    ops.push_back(std::move(op));
  return ops;
}

}  // namespace

std::string_view to_string(OpClass op_class) {
  switch (op_class) {
    case OpClass::kMatmul:
      return "matmul";
    case OpClass::kConv:
      return "conv";
    case OpClass::kElementwise:
      return "elementwise";
    case OpClass::kNonLinear:
      return "non_linear";
    case OpClass::kReduction:
      return "reduction";
    case OpClass::kGather:
      return "gather";
    case OpClass::kCopy:
      return "copy";
  }
  return "?";
}

int index(OpClass op_class) {
  return static_cast<int>(op_class);
}

bool on_amp(OpClass op_class) {
  return op_class == OpClass::kMatmul || op_class == OpClass::kConv;
}

std::vector<Operation> lower_layer(const Layer& layer, const std::vector<Shape>& inputs,
                                   const Shape& output) {
  const double in = double(element_count(inputs.front()));
  const double out = double(element_count(output));
  const LayerParams& p = layer.params;
  switch (layer.type) {
    case LayerType::kDense:
      return dense_ops(layer, inputs.front());
    case LayerType::kConv2d:
      return conv2d_ops(layer, inputs.front(), output);
    case LayerType::kMaxPool2d:
      return {maxpool_op(p, in, out)};
    case LayerType::kGlobalAveragePool2d:
      return {global_average_pool_op(in, out)};
    case LayerType::kDropout:
      return {vector_op("dropout", OpClass::kElementwise, in, kDropoutFlops)};
    case LayerType::kRelu:
      return {vector_op("relu", OpClass::kElementwise, out, kReluFlops)};
    case LayerType::kGelu:
      return {vector_op("gelu", OpClass::kNonLinear, out, kGeluFlops)};
    case LayerType::kAdd: {
      Operation add = vector_op("add", OpClass::kElementwise, double(inputs.size() - 1) * out, 1);
      add.backward = {};  // the gradient passes through unchanged
      return {add};
    }
    case LayerType::kSoftmaxCrossEntropy:
      return {vector_op("softmax_cross_entropy", OpClass::kReduction, in, kSoftmaxFlops, 3, 1)};
    case LayerType::kEmbedding:
      return embedding_ops(p);
    case LayerType::kTransformerEncoder:
      return encoder_ops(p);
    case LayerType::kTransformerAttention:
      return transformer_attention_ops(p);
    case LayerType::kTransformerFeedForward:
      return transformer_feed_forward_ops(p);
    case LayerType::kAttention:
      return attention_ops(double(inputs.front()[0]), double(inputs.front()[1]), double(p.heads),
                           p.rate > 0);
    case LayerType::kLayerNorm:
      return {vector_op("layer_norm", OpClass::kReduction, out, kLayerNormFlops, 2, 2)};
    case LayerType::kBatchNorm:
      return {vector_op("batch_norm", OpClass::kReduction, out, kLayerNormFlops, 2, 2)};
    case LayerType::kSoftmax:
      return {vector_op("softmax", OpClass::kNonLinear, out, kSoftmaxFlops, 2, 1)};
    case LayerType::kTanh:
      return {vector_op("tanh", OpClass::kNonLinear, out, kTanhFlops)};
    case LayerType::kInput:
    case LayerType::kFlatten:
    case LayerType::kReshape:
    case LayerType::kConcat:
    case LayerType::kSlice:
      return {};  // views of their inputs' memory
  }
  core::fail_invariant("layer.type is one of LayerType's values", __FILE__, __LINE__);
}

}  // namespace ipusim::models
