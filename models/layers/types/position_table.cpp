// position_table: a learned tensor of the input's per-sample shape added to it, as ViT adds its
// position embedding (an nn.Parameter of [1, tokens, hidden]) to the patch sequence.

#include "models/layers/types/type_support.hpp"

namespace ipusim::models {
namespace {

// The table, one parameter an element of the input; backward needs nothing but the gradient.
LayerCost position_table_cost(const Layer& /*layer*/, const std::vector<Shape>& /*inputs*/,
                              const CostSizes& size) {
  LayerCost cost = operations_cost(0);
  cost.params = size.in;
  cost.param_tensors = 1;
  return cost;
}

// An add an element, as a bias is added; backward sums the gradient into the table's.
std::vector<Operation> position_table_operations(const Layer& /*layer*/,
                                                 const std::vector<Shape>& /*inputs*/,
                                                 const Shape& output) {
  return {
      vector_op("position_add", OpClass::kElementwise, double(element_count(output)), kBiasFlops)};
}

std::unique_ptr<Kernel> position_table_kernel(const Layer& /*layer*/,
                                              const std::vector<Shape>& inputs, DType dtype,
                                              std::uint64_t /*seed*/) {
  return detail::make_position_table(inputs, dtype);
}

}  // namespace

LayerTypeDef position_table_type() {
  return {.name = "position_table",
          .keys = {},
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_no_keys,
          .shape = same_shape,
          .cost = position_table_cost,
          .lower = position_table_operations,
          .kernel = position_table_kernel};
}

}  // namespace ipusim::models
