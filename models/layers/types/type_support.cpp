#include "models/layers/types/type_support.hpp"

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

// Output length of one spatial axis; `window` fits when padding is valid.
std::int64_t window_output(std::int64_t size, std::int64_t window, std::int64_t stride,
                           Padding padding) {
  if (padding == Padding::kSame)
    return (size + stride - 1) / stride;
  return (size - window) / stride + 1;
}

Shape windowed_shape(const Layer& layer, const std::vector<InputShape>& inputs, std::int64_t height,
                     std::int64_t width, const std::string& what, std::int64_t channels) {
  const InputShape& input = only_input(inputs);
  expect_image(layer, input);
  const LayerParams& p = layer.params;
  if (p.padding == Padding::kValid && (height > input.shape[0] || width > input.shape[1])) {
    fail_layer(layer, "has a " + std::to_string(height) + "x" + std::to_string(width) + " " + what +
                          " larger than its input: " + input_text(input));
  }
  return {window_output(input.shape[0], height, p.stride_h, p.padding),
          window_output(input.shape[1], width, p.stride_w, p.padding),
          channels > 0 ? channels : input.shape[2]};
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
      ops.push_back(vector_op("gelu", OpClass::kNonLinear, elements, kGeluFlops));
      return;
  }
}

}  // namespace ipusim::models
