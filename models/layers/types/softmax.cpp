// softmax: over the last per-sample axis.

#include "models/layers/types/type_support.hpp"

namespace ipusim::models {
namespace {

// Backward needs the output: dx = y (dy - sum(dy y)).
LayerCost softmax_cost(const Layer& /*layer*/, const std::vector<Shape>& /*inputs*/,
                       const CostSizes& size) {
  return operations_cost(size.out * size.d);
}

std::vector<Operation> softmax_operations(const Layer& /*layer*/,
                                          const std::vector<Shape>& /*inputs*/,
                                          const Shape& output) {
  return {softmax_op("softmax", OpClass::kNonLinear, double(element_count(output)), 2,
                     double(output.back()))};
}

std::unique_ptr<Kernel> softmax_kernel(const Layer& /*layer*/, const std::vector<Shape>& inputs,
                                       DType dtype, std::uint64_t /*seed*/) {
  return detail::make_softmax(inputs, dtype);
}

}  // namespace

LayerTypeDef softmax_type() {
  return {.name = "softmax",
          .keys = {},
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_no_keys,
          .shape = same_shape,
          .cost = softmax_cost,
          .lower = softmax_operations,
          .kernel = softmax_kernel};
}

}  // namespace ipusim::models
