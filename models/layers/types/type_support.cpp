#include "models/layers/types/type_support.hpp"

#include <algorithm>
#include <cmath>
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
  const std::int64_t height = window_span(layer, ImageAxis::kHeight);
  const std::int64_t width = window_span(layer, ImageAxis::kWidth);
  expect_span(layer, std::max(height, width));
  const std::int64_t kernel_h = window_size(layer, ImageAxis::kHeight);
  const std::int64_t kernel_w = window_size(layer, ImageAxis::kWidth);
  const std::string window =
      std::to_string(kernel_h) + "x" + std::to_string(kernel_w) + " " + what +
      (height == kernel_h && width == kernel_w
           ? ""
           : " dilated to " + std::to_string(height) + "x" + std::to_string(width));
  if (!pad.same && (height > input.shape[0] + pad.top + pad.bottom ||
                    width > input.shape[1] + pad.left + pad.right)) {
    fail_layer(layer, "has a " + window + " larger than its input" +
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
    std::tie(params.stride_h, params.stride_w) = core::read_pair_value(*stride);
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
  ProductGeometry g;
  g.groups = std::llround(p.count);
  g.out_width = g.in_width = std::llround(p.rows);
  g.in_chans = std::llround(p.inner);
  g.out_chans = std::llround(p.cols);
  g.weights = p.weights;
  op.product = g;
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

Operation lowered(Operation op, VectorLowering lowering, double width, bool batch_widens) {
  op.lowering = lowering;
  op.vector_width = width;
  op.vector_batch_widens = batch_widens;
  return op;
}

Operation normalization_op(std::string name, double elements, double flops_per_element,
                           double width, VectorLowering lowering, bool batch_widens) {
  Operation op = vector_op(std::move(name), OpClass::kReduction, elements, flops_per_element, 2, 2);
  op.backward.flops = 2 * op.forward.flops;
  return lowered(op, lowering, width, batch_widens);
}

Operation softmax_op(std::string name, OpClass op_class, double elements, int forward_sets,
                     double width) {
  Operation op = vector_op(std::move(name), op_class, elements, kSoftmaxFlops, forward_sets, 1);
  op.backward.flops = kSoftmaxBackwardFlops * elements;
  return lowered(op, VectorLowering::kSoftmax, width);
}

void add_activation(std::vector<Operation>& ops, Activation activation, double elements) {
  switch (activation) {
    case Activation::kNone:
      return;
    case Activation::kRelu:
      ops.push_back(lowered(vector_op("relu", OpClass::kElementwise, elements, kReluFlops),
                            VectorLowering::kRelu, elements));
      return;
    case Activation::kTanh:
      ops.push_back(lowered(vector_op("tanh", OpClass::kNonLinear, elements, kTanhFlops),
                            VectorLowering::kTanh, elements));
      return;
    case Activation::kGelu:
    case Activation::kGeluTanh:
      ops.push_back(lowered(vector_op("gelu", OpClass::kNonLinear, elements, kGeluFlops),
                            VectorLowering::kGelu, elements));
      return;
  }
}

// A dense convolution, or a grouped one whose groups fill the AMP's input, is a product on the
// AMP units, each group its own (poplin's AMP vertices take one conv group at a time: "AMP only
// supports a conv group grouping of 1"). With fewer input channels per group the AMP would be fed
// mostly padding: poplin ranks its candidate vertices by effectiveMaxFLOPs, the unit's MACs per
// cycle times the share of the padded channels that are real (sortConvVertexTypeCandidates in
// graphcore/poplibs lib/poplin/ConvVertexType.cpp). A depthwise group pads 1 input and 1 output
// channel to 4 x 8 (4 x 16), leaving the AMP 1 MAC a cycle of its 32 (64), against the 4 of the
// HMAC and VMAC vertices, which multiply-add on the vector unit at its vector width
// (getMaxMACsPerCyclePerTile in lib/poplin/ConvModel.cpp; codelets ConvPartialHorizontalMac.cpp,
// ConvPartialVerticalMac.cpp). So such a conv is vector work, one element a multiply-add, under
// the fitted pricing; planned pricing plans it as poplin would (sim/pricing), from its geometry.
// (For half inputs poplin also has SLIC, feeding up to 16 small groups to the conv units at once, 8
// MACs a cycle when depthwise; this model leaves it out.)
ProductGeometry conv_geometry(const Convolution& conv) {
  ProductGeometry g;
  g.groups = conv.groups;
  g.out_height = conv.out_height;
  g.out_width = conv.out_width > 0 ? conv.out_width : std::llround(conv.positions);
  g.in_height = conv.in_height;
  g.in_width = conv.in_width > 0 ? conv.in_width : g.out_width;
  g.kernel_height = conv.kernel_height;
  g.kernel_width = conv.kernel_width > 0 ? conv.kernel_width : std::llround(conv.taps);
  g.stride = conv.stride;
  g.in_chans = conv.in_channels / conv.groups;
  g.out_chans = conv.filters / conv.groups;
  return g;
}

Operation convolution_op(const Convolution& conv) {
  const std::int64_t in_per_group = conv.in_channels / conv.groups;
  const double window = conv.taps * double(in_per_group);
  const double per_group = double(conv.filters / conv.groups);
  Operation op;
  if (conv.groups == 1 || in_per_group >= kAmpInputChannels) {
    op = product("conv", OpClass::kConv,
                 {conv.positions, window, per_group, double(conv.groups), true});
    op.forward.weight_elements = op.backward.weight_elements = window * double(conv.filters);
  } else {
    const double macs = conv.positions * window * double(conv.filters);
    op = vector_op("conv", OpClass::kElementwise, macs, 2);
    // Backward is two convolutions of the forward's size: the input and weight gradients.
    op.backward = {2 * macs, 0, 0, 2, 4 * macs};
    op.forward.weight_elements = op.backward.weight_elements = window * double(conv.filters);
  }
  op.product = conv_geometry(conv);
  // The window is gathered on the tiles, not exchanged: each input element arrives once.
  op.forward.exchanged_elements = conv.in;
  op.backward.exchanged_elements = conv.in + conv.out;
  return op;
}

void expect_groups(const Layer& layer, std::int64_t in_channels) {
  const std::int64_t groups = layer.params.groups;
  if (in_channels % groups != 0 || layer.params.filters % groups != 0) {
    fail_layer(layer, "has groups " + std::to_string(groups) + ", which must divide its " +
                          std::to_string(in_channels) + " input channels and its " +
                          std::to_string(layer.params.filters) + " filters");
  }
}

void expect_span(const Layer& layer, std::int64_t span) {
  if (span > core::kMaxCount)
    fail_layer(layer, "has a kernel whose dilation spans more than 2^40 inputs");
}

}  // namespace ipusim::models
