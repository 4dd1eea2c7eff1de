// tanh: tanh elementwise.

#include "models/layers/types/type_support.hpp"

namespace ipusim::models {
namespace {

// Backward needs the output: 1 - y².
LayerCost tanh_cost(const Layer& /*layer*/, const std::vector<Shape>& /*inputs*/,
                    const CostSizes& size) {
  return operations_cost(size.out * size.d);
}

std::vector<Operation> tanh_operations(const Layer& /*layer*/, const std::vector<Shape>& /*inputs*/,
                                       const Shape& output) {
  const double elements = double(element_count(output));
  return {lowered(vector_op("tanh", OpClass::kNonLinear, elements, kTanhFlops),
                  VectorLowering::kTanh, elements)};
}

std::unique_ptr<Kernel> tanh_kernel(const Layer& /*layer*/, const std::vector<Shape>& inputs,
                                    DType dtype, std::uint64_t /*seed*/) {
  return detail::make_tanh(inputs, dtype);
}

}  // namespace

LayerTypeDef tanh_type() {
  return {.name = "tanh",
          .keys = {},
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_no_keys,
          .shape = same_shape,
          .cost = tanh_cost,
          .lower = tanh_operations,
          .kernel = tanh_kernel};
}

}  // namespace ipusim::models
