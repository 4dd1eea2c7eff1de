// relu: max(x, 0) elementwise.

#include "models/layers/types/type_support.hpp"

namespace ipusim::models {
namespace {

// Backward needs the output's sign.
LayerCost relu_cost(const Layer& /*layer*/, const std::vector<Shape>& /*inputs*/,
                    const CostSizes& size) {
  return operations_cost(size.out * size.d);
}

std::vector<Operation> relu_operations(const Layer& /*layer*/, const std::vector<Shape>& /*inputs*/,
                                       const Shape& output) {
  const double elements = double(element_count(output));
  return {lowered(vector_op("relu", OpClass::kElementwise, elements, kReluFlops),
                  VectorLowering::kRelu, elements)};
}

std::unique_ptr<Kernel> relu_kernel(const Layer& /*layer*/, const std::vector<Shape>& inputs,
                                    DType dtype, std::uint64_t /*seed*/) {
  return detail::make_relu(inputs, dtype);
}

}  // namespace

LayerTypeDef relu_type() {
  return {.name = "relu",
          .keys = {},
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_no_keys,
          .shape = same_shape,
          .cost = relu_cost,
          .lower = relu_operations,
          .kernel = relu_kernel};
}

}  // namespace ipusim::models
