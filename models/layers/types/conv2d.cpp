// conv2d: a 2-D convolution over [height, width, channels], then a bias and an activation.

#include <array>

#include "models/layers/types/type_support.hpp"
#include "sim/core/checked.hpp"

namespace ipusim::models {
namespace {

constexpr std::array kConv2dKeys = {
    positive_int_key<&LayerParams::filters>("filters", "output channels"),
    pair_key<&LayerParams::kernel_h, &LayerParams::kernel_w>("kernel", "the window: N or [h, w]"),
    pair_key<&LayerParams::stride_h, &LayerParams::stride_w>("stride", 1,
                                                             "the window's step: N or [h, w]"),
    kPaddingKey,
    kActivationKey,
    kBiasKey,
};

void read_conv2d(const core::ConfigNode& layer, LayerParams& params) {
  read_keys(layer, kConv2dKeys, params);
}

Shape conv2d_shape(const Layer& layer, const std::vector<InputShape>& inputs) {
  return windowed_shape(layer, inputs, "kernel", layer.params.filters);
}

LayerCost conv2d_cost(const Layer& layer, const std::vector<Shape>& inputs, const CostSizes& size) {
  const LayerParams& p = layer.params;
  const std::int64_t weights =
      core::checked_mul(core::checked_mul(core::checked_mul(p.kernel_h, p.kernel_w, kParamCount),
                                          inputs.front()[2], kParamCount),
                        p.filters, kParamCount);
  return linear_cost(layer, size, weights, p.filters);
}

std::vector<Operation> conv2d_operations(const Layer& layer, const std::vector<Shape>& inputs,
                                         const Shape& output) {
  const LayerParams& p = layer.params;
  const Shape& input = inputs.front();
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
