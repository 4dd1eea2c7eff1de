// conv2d: a 2-D convolution over [height, width, channels], then a bias and an activation. With
// groups, each of `groups` slices of the channels is convolved apart into filters / groups
// outputs (depthwise when groups equals the input channels), as Keras' and PyTorch's groups.
// A dilated kernel reads pixels `dilation` apart (Keras' dilation_rate, PyTorch's dilation): the
// same weights and FLOPs over a wider window.

#include <algorithm>
#include <array>

#include "models/layers/types/type_support.hpp"
#include "sim/core/checked.hpp"

namespace ipusim::models {
namespace {

const std::array kConv2dKeys = {
    positive_int_key<&LayerParams::filters>("filters", "output channels"),
    pair_key<&LayerParams::kernel_h, &LayerParams::kernel_w>("kernel", "the window: N or [h, w]"),
    pair_key<&LayerParams::stride_h, &LayerParams::stride_w>("stride", 1,
                                                             "the window's step: N or [h, w]"),
    pair_key<&LayerParams::dilation_h, &LayerParams::dilation_w>(
        "dilation", 1, "the step between the kernel's taps: N or [h, w] (1: adjacent pixels)"),
    kPaddingKey,
    kActivationKey,
    kBiasKey,
    int_key<&LayerParams::groups>("groups", 1, 1, core::kMaxCount,
                                  "channel groups, dividing the input channels and filters"),
};

void read_conv2d(const core::ConfigNode& layer, LayerParams& params) {
  read_keys(layer, kConv2dKeys, params);
}

Shape conv2d_shape(const Layer& layer, const std::vector<InputShape>& inputs) {
  Shape output = windowed_shape(layer, inputs, "kernel", layer.params.filters);
  expect_groups(layer, inputs.front().shape[2]);
  return output;
}

LayerCost conv2d_cost(const Layer& layer, const std::vector<Shape>& inputs, const CostSizes& size) {
  const LayerParams& p = layer.params;
  const std::int64_t weights =
      core::checked_mul(core::checked_mul(core::checked_mul(p.kernel_h, p.kernel_w, kParamCount),
                                          inputs.front()[2] / p.groups, kParamCount),
                        p.filters, kParamCount);
  return linear_cost(layer, size, weights, p.filters);
}

std::vector<Operation> conv2d_operations(const Layer& layer, const std::vector<Shape>& inputs,
                                         const Shape& output) {
  const LayerParams& p = layer.params;
  const Shape& input = inputs.front();
  const double out = double(element_count(output));
  std::vector<Operation> ops = {convolution_op({.positions = double(output[0]) * double(output[1]),
                                                .taps = double(p.kernel_h) * double(p.kernel_w),
                                                .in_channels = input[2],
                                                .filters = p.filters,
                                                .groups = p.groups,
                                                .in = double(element_count(input)),
                                                .out = out,
                                                .out_height = output[0],
                                                .out_width = output[1],
                                                .in_height = input[0],
                                                .in_width = input[1],
                                                .kernel_height = p.kernel_h,
                                                .kernel_width = p.kernel_w,
                                                .stride = std::max(p.stride_h, p.stride_w)})};
  if (p.bias)
    ops.push_back(lowered(vector_op("bias_add", OpClass::kElementwise, out, kBiasFlops),
                          VectorLowering::kBiasAdd, double(p.filters)));
  add_activation(ops, p.activation, out);
  return ops;
}

std::unique_ptr<Kernel> conv2d_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                      DType dtype, std::uint64_t /*seed*/) {
  return detail::make_conv2d(layer, inputs, dtype);
}

}  // namespace

LayerTypeDef conv2d_type() {
  return {.name = "conv2d",
          .keys = kConv2dKeys,
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_conv2d,
          .shape = conv2d_shape,
          .cost = conv2d_cost,
          .lower = conv2d_operations,
          .kernel = conv2d_kernel};
}

}  // namespace ipusim::models
