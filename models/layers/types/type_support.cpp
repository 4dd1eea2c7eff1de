#include "models/layers/types/type_support.hpp"

#include <algorithm>
#include <tuple>
#include <utility>

#include "models/layers/layer_types.hpp"
#include "sim/core/checked.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {

void read_no_keys(const core::ConfigNode& /*layer*/, LayerParams& /*params*/) {}

LayerCost no_cost(const Layer& /*layer*/, const std::vector<Shape>& /*inputs*/,
                  const CostSizes& /*size*/) {
  return operations_cost(0);
}

std::vector<Operation> no_operations(const Layer& /*layer*/, const std::vector<Shape>& /*inputs*/,
                                     const Shape& /*output*/) {
  return {};
}

Shape same_shape(const Layer& /*layer*/, const std::vector<InputShape>& inputs) {
  return only_input(inputs).shape;
}

LayerCost operations_cost(std::int64_t saved_bytes) {
  LayerCost cost;
  cost.saved_bytes = saved_bytes;
  cost.flops = FlopsRule::kOperations;
  return cost;
}

LayerCost normalization_cost(const Layer& /*layer*/, const std::vector<Shape>& inputs,
                             const CostSizes& size) {
  LayerCost cost;
  cost.params = 2 * inputs.front().back();
  cost.param_tensors = 2;  // scale and shift
  cost.saved_bytes = size.in * size.d;
  return cost;
}

LayerCost linear_cost(const Layer& layer, const CostSizes& size, std::int64_t weights,
                      std::int64_t biases) {
  const LayerParams& p = layer.params;
  LayerCost cost = operations_cost(size.in * size.d +
                                   (p.activation == Activation::kNone ? 0 : size.out * size.d));
  cost.params = core::checked_add(weights, p.bias ? biases : 0, kParamCount);
  cost.param_tensors = p.bias ? 2 : 1;
  return cost;
}

void fail_layer(const Layer& layer, const std::string& message) {
  throw core::ConfigError(layer.file, layer.pointer, layer_label(layer) + " " + message);
}

const InputShape& only_input(const std::vector<InputShape>& inputs) {
  IPUSIM_CHECK(inputs.size() == 1);
  return inputs.front();
}

void expect_image(const Layer& layer, const InputShape& input) {
  if (input.shape.size() != 3)
    fail_layer(layer,
               "needs an input of shape [height, width, channels], but " + input_text(input));
}

Shape windowed_shape(const Layer& layer, const std::vector<InputShape>& inputs,
                     const std::string& what, std::int64_t channels) {
  const InputShape& input = only_input(inputs);
  expect_image(layer, input);
  const Padding& pad = layer.params.padding;
  const std::int64_t height = window_size(layer, ImageAxis::kHeight);
  const std::int64_t width = window_size(layer, ImageAxis::kWidth);
  if (!pad.same && (height > input.shape[0] + pad.top + pad.bottom ||
                    width > input.shape[1] + pad.left + pad.right)) {
    fail_layer(layer, "has a " + std::to_string(height) + "x" + std::to_string(width) + " " + what +
                          " larger than its input" +
                          (pad == kValidPadding ? "" : " padded by " + padding_text(pad)) + ": " +
                          input_text(input));
  }
  return {layer_window(layer, ImageAxis::kHeight, input.shape[0]).out,
          layer_window(layer, ImageAxis::kWidth, input.shape[1]).out,
          channels > 0 ? channels : input.shape[2]};
}

std::string padding_text(const Padding& padding) {
  return shape_text({padding.top, padding.left, padding.bottom, padding.right});
}

void read_pool(const core::ConfigNode& layer, LayerParams& params) {
  read_key(layer, kPoolKey, params);
  params.stride_h = params.pool_h;
  params.stride_w = params.pool_w;
  if (const auto stride = layer.find("stride"))
    std::tie(params.stride_h, params.stride_w) = read_pair(*stride);
  read_key(layer, kPaddingKey, params);
  const Padding& pad = params.padding;
  const std::int64_t rows = params.pool_h / 2;
  const std::int64_t cols = params.pool_w / 2;
  if (std::max(pad.top, pad.bottom) > rows || std::max(pad.left, pad.right) > cols) {
    layer.at("padding").fail("expected pads of at most half the " + std::to_string(params.pool_h) +
                             "x" + std::to_string(params.pool_w) + " pool window (" +
                             std::to_string(rows) + " above and below, " + std::to_string(cols) +
                             " left and right), found " + padding_text(pad));
  }
  read_key(layer, kCeilModeKey, params);
}

void expect_tokens(const Layer& layer, const InputShape& input) {
  if (input.shape.size() < 2) {
    fail_layer(layer, "needs an input of shape [tokens, features...], two axes or more, but " +
                          input_text(input));
  }
}

std::size_t axis_index(const Layer& layer, std::size_t rank) {
  const std::int64_t axis = layer.params.axis;
  const auto signed_rank = std::int64_t(rank);
  if (axis < -signed_rank || axis >= signed_rank) {
    fail_layer(layer, "has axis " + std::to_string(axis) + ", but its inputs have " +
                          std::to_string(rank) + " axes (allowed: " + std::to_string(-signed_rank) +
                          " to " + std::to_string(signed_rank - 1) + ")");
  }
  return std::size_t(axis < 0 ? axis + signed_rank : axis);
}

// Ids and types are integers from the model input (directly or through layers that only move
// numbers); no gradient flows into them.
void expect_sequence(const Layer& layer, const InputShape& input, std::int64_t sequence,
                     const std::string& what) {
  const Shape expected = {sequence};
  if (input.shape != expected) {
    fail_layer(layer, "takes " + what + " of shape " + shape_text(expected) +
                          " (sequence_length), but " + input_text(input));
  }
}

Operation product(std::string name, OpClass op_class, const Product& p) {
  const double flops = 2 * p.rows * p.inner * p.cols * p.count;
  const double left = p.rows * p.inner * p.count;
  const double right = p.inner * p.cols * (p.weights ? 1 : p.count);
  const double out = p.rows * p.cols * p.count;
  Operation op{std::move(name), op_class, {}, {}};
  op.forward = {flops, p.weights ? left : left + right, p.weights ? right : 0, 1, flops};
  // Each operand's gradient reads the output gradient and the other operand.
  op.backward = {2 * flops, p.weights ? out + left : out + left + right, p.weights ? right : 0, 2,
                 2 * flops};
  return op;
}

// An elementwise or non-linear vertex runs on the tiles that hold its operands, so it exchanges
// nothing (poplibs' estimators charge these vertices no exchange); a reduction brings partial
// results and broadcasts statistics across tiles.
Operation vector_op(std::string name, OpClass op_class, double elements, double flops_per_element,
                    int forward_sets, int backward_sets) {
  const double flops = elements * flops_per_element;
  const bool in_place = op_class == OpClass::kElementwise || op_class == OpClass::kNonLinear;
  Operation op{std::move(name), op_class, {}, {}};
  op.forward = {elements, in_place ? 0 : elements, 0, forward_sets, flops};
  op.backward = {elements, in_place ? 0 : 2 * elements, 0, backward_sets, flops};
  return op;
}

Operation normalization_op(std::string name, double elements, double flops_per_element) {
  Operation op = vector_op(std::move(name), OpClass::kReduction, elements, flops_per_element, 2, 2);
  op.backward.flops = 2 * op.forward.flops;
  return op;
}

Operation softmax_op(std::string name, OpClass op_class, double elements, int forward_sets) {
  Operation op = vector_op(std::move(name), op_class, elements, kSoftmaxFlops, forward_sets, 1);
  op.backward.flops = kSoftmaxBackwardFlops * elements;
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
    case Activation::kGeluTanh:
      ops.push_back(vector_op("gelu", OpClass::kNonLinear, elements, kGeluFlops));
      return;
  }
}

}  // namespace ipusim::models
