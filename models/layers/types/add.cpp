// add: the elementwise sum of two or more inputs of one shape.

#include "models/layers/types/type_support.hpp"

namespace ipusim::models {
namespace {

Shape add_shape(const Layer& layer, const std::vector<InputShape>& inputs) {
  for (const InputShape& input : inputs) {
    if (input.shape != inputs.front().shape) {
      fail_layer(layer, "needs inputs of equal shape, but " + input_text(inputs.front()) + " and " +
                            input_text(input));
    }
  }
  return inputs.front().shape;
}

LayerCost add_cost(const Layer& /*layer*/, const std::vector<Shape>& /*inputs*/,
                   const CostSizes& /*size*/) {
  return operations_cost(0);
}

std::vector<Operation> add_operations(const Layer& /*layer*/, const std::vector<Shape>& inputs,
                                      const Shape& output) {
  const double out = double(element_count(output));
  Operation add =
      lowered(vector_op("add", OpClass::kElementwise, double(inputs.size() - 1) * out, 1),
              VectorLowering::kAdd, double(inputs.size() - 1) * out);
  add.backward = {};  // the gradient passes through unchanged
  return {add};
}

std::unique_ptr<Kernel> add_kernel(const Layer& /*layer*/, const std::vector<Shape>& inputs,
                                   DType dtype, std::uint64_t /*seed*/) {
  return detail::make_add(inputs, dtype);
}

}  // namespace

LayerTypeDef add_type() {
  return {.name = "add",
          .keys = {},
          .inputs = LayerInputs::kTwoOrMore,
          .view = false,
          .read = read_no_keys,
          .shape = add_shape,
          .cost = add_cost,
          .lower = add_operations,
          .kernel = add_kernel};
}

}  // namespace ipusim::models
