// gelu: x Φ(x) elementwise, the exact erf form.

#include "models/layers/types/type_support.hpp"

namespace ipusim::models {
namespace {

// Backward needs the input.
LayerCost gelu_cost(const Layer& /*layer*/, const std::vector<Shape>& /*inputs*/,
                    const CostSizes& size) {
  return operations_cost(size.in * size.d);
}

std::vector<Operation> gelu_operations(const Layer& /*layer*/, const std::vector<Shape>& /*inputs*/,
                                       const Shape& output) {
  return {vector_op("gelu", OpClass::kNonLinear, double(element_count(output)), kGeluFlops)};
}

std::unique_ptr<Kernel> gelu_kernel(const Layer& /*layer*/, const std::vector<Shape>& inputs,
                                    DType dtype, std::uint64_t /*seed*/) {
  return detail::make_gelu(inputs, dtype);
}

}  // namespace

LayerTypeDef gelu_type() {
  return {.type = LayerType::kGelu,
          .name = "gelu",
          .keys = {},
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_no_keys,
          .shape = same_shape,
          .cost = gelu_cost,
          .lower = gelu_operations,
          .kernel = gelu_kernel};
}

}  // namespace ipusim::models
