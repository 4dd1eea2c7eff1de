// avgpool2d: the mean of each window of [height, width, channels], per channel (PyTorch's
// AvgPool2d, Keras' AveragePooling2D).

#include <array>

#include "models/layers/types/type_support.hpp"

namespace ipusim::models {
namespace {

const std::array kAvgPool2dKeys = {
    kPoolKey,
    kPoolStrideKey,
    kPaddingKey,
    kCeilModeKey,
    bool_key<&LayerParams::count_include_pad>(
        "count_include_pad", true, "the padding counts in each window's divisor (PyTorch's)"),
};

void read_avgpool2d(const core::ConfigNode& layer, LayerParams& params) {
  read_pool(layer, params);
  read_key(layer, kAvgPool2dKeys.back(), params);
}

Shape avgpool2d_shape(const Layer& layer, const std::vector<InputShape>& inputs) {
  return windowed_shape(layer, inputs, "pool window", 0);
}

// Backward spreads each window's gradient over its pixels, for which the shapes suffice.
LayerCost avgpool2d_cost(const Layer& /*layer*/, const std::vector<Shape>& /*inputs*/,
                         const CostSizes& /*size*/) {
  return operations_cost(0);
}

// An add an element of each window and the division folded into the last; backward the same
// count of adds, a share of each window's gradient into each of its pixels.
std::vector<Operation> avgpool2d_operations(const Layer& layer,
                                            const std::vector<Shape>& /*inputs*/,
                                            const Shape& output) {
  const LayerParams& p = layer.params;
  const double out = double(element_count(output));
  return {vector_op("avgpool", OpClass::kReduction, out * double(p.pool_h) * double(p.pool_w), 1)};
}

std::unique_ptr<Kernel> avgpool2d_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                         DType dtype, std::uint64_t /*seed*/) {
  return detail::make_avgpool2d(layer, inputs, dtype);
}

}  // namespace

LayerTypeDef avgpool2d_type() {
  return {.name = "avgpool2d",
          .keys = kAvgPool2dKeys,
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_avgpool2d,
          .shape = avgpool2d_shape,
          .cost = avgpool2d_cost,
          .lower = avgpool2d_operations,
          .kernel = avgpool2d_kernel};
}

}  // namespace ipusim::models
