// maxpool2d: the maximum of each window of [height, width, channels], per channel.

#include <array>

#include "models/layers/types/type_support.hpp"

namespace ipusim::models {
namespace {

const std::array kMaxPool2dKeys = {kPoolKey, kPoolStrideKey, kPaddingKey, kCeilModeKey};

Shape maxpool2d_shape(const Layer& layer, const std::vector<InputShape>& inputs) {
  return windowed_shape(layer, inputs, "pool window", 0);
}

// Backward sends each window's gradient to its argmax, which it keeps as an int32.
LayerCost maxpool2d_cost(const Layer& /*layer*/, const std::vector<Shape>& /*inputs*/,
                         const CostSizes& size) {
  return operations_cost(size.out * 4);
}

std::vector<Operation> maxpool2d_operations(const Layer& layer, const std::vector<Shape>& inputs,
                                            const Shape& output) {
  const LayerParams& p = layer.params;
  const double out = double(element_count(output));
  Operation pool =
      vector_op("maxpool", OpClass::kReduction, out * double(p.pool_h) * double(p.pool_w), 1);
  pool.backward.work = double(element_count(inputs.front()));
  pool.backward.flops = out;  // one add a window, into its argmax
  return {pool};
}

std::unique_ptr<Kernel> maxpool2d_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                         DType dtype, std::uint64_t /*seed*/) {
  return detail::make_maxpool2d(layer, inputs, dtype);
}

}  // namespace

LayerTypeDef maxpool2d_type() {
  return {.name = "maxpool2d",
          .keys = kMaxPool2dKeys,
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_pool,
          .shape = maxpool2d_shape,
          .cost = maxpool2d_cost,
          .lower = maxpool2d_operations,
          .kernel = maxpool2d_kernel};
}

}  // namespace ipusim::models
