// global_average_pool2d: the mean of each channel over the image, [H, W, C] to [C].

#include "models/layers/types/type_support.hpp"

namespace ipusim::models {
namespace {

// Any image size pools to one value per channel.
Shape global_average_pool2d_shape(const Layer& layer, const std::vector<InputShape>& inputs) {
  const InputShape& input = only_input(inputs);
  expect_image(layer, input);
  return {input.shape[2]};
}

// A sum over the image per channel and one division; backward spreads each channel's gradient,
// divided by the pixel count, over the image. Only the input's shape is needed for that, so
// nothing is kept.
LayerCost global_average_pool2d_cost(const Layer& /*layer*/, const std::vector<Shape>& /*inputs*/,
                                     const CostSizes& /*size*/) {
  return operations_cost(0);
}

// Backward reads one gradient per channel and writes every pixel's share of it.
std::vector<Operation> global_average_pool2d_operations(const Layer& /*layer*/,
                                                        const std::vector<Shape>& inputs,
                                                        const Shape& output) {
  const double in = double(element_count(inputs.front()));
  const double out = double(element_count(output));
  Operation pool{"global_average_pool", OpClass::kReduction, {}, {}};
  pool.forward = {in, in, 0, 1, in + out};
  pool.backward = {in, out, 0, 1, in};
  return {pool};
}

std::unique_ptr<Kernel> global_average_pool2d_kernel(const Layer& /*layer*/,
                                                     const std::vector<Shape>& inputs, DType dtype,
                                                     std::uint64_t /*seed*/) {
  return detail::make_global_average_pool2d(inputs, dtype);
}

}  // namespace

LayerTypeDef global_average_pool2d_type() {
  return {.name = "global_average_pool2d",
          .keys = {},
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_no_keys,
          .shape = global_average_pool2d_shape,
          .cost = global_average_pool2d_cost,
          .lower = global_average_pool2d_operations,
          .kernel = global_average_pool2d_kernel};
}

}  // namespace ipusim::models
