// flatten: its input as one axis, a view.

#include "models/layers/types/type_support.hpp"

namespace ipusim::models {
namespace {

Shape flatten_shape(const Layer& /*layer*/, const std::vector<InputShape>& inputs) {
  return {element_count(only_input(inputs).shape)};
}

std::unique_ptr<Kernel> flatten_kernel(const Layer& /*layer*/, const std::vector<Shape>& inputs,
                                       DType dtype, std::uint64_t /*seed*/) {
  return detail::make_flatten(inputs, dtype);
}

}  // namespace

LayerTypeDef flatten_type() {
  return {.name = "flatten",
          .keys = {},
          .inputs = LayerInputs::kOne,
          .view = true,
          .read = read_no_keys,
          .shape = flatten_shape,
          .cost = no_cost,
          .lower = no_operations,
          .kernel = flatten_kernel};
}

}  // namespace ipusim::models
