// class_token: a learned token of the input's width before its first token, [tokens, hidden] to
// [tokens + 1, hidden], as ViT prepends its class token to the patch sequence.

#include "models/layers/types/type_support.hpp"
#include "sim/core/checked.hpp"

namespace ipusim::models {
namespace {

Shape class_token_shape(const Layer& layer, const std::vector<InputShape>& inputs) {
  const InputShape& input = only_input(inputs);
  if (input.shape.size() != 2)
    fail_layer(layer, "needs an input of shape [tokens, hidden], but " + input_text(input));
  return {core::checked_add(input.shape[0], 1, "token count"), input.shape[1]};
}

// The token, one parameter a feature; backward needs nothing but the gradient.
LayerCost class_token_cost(const Layer& /*layer*/, const std::vector<Shape>& inputs,
                           const CostSizes& /*size*/) {
  LayerCost cost = operations_cost(0);
  cost.params = inputs.front()[1];
  cost.param_tensors = 1;
  return cost;
}

// Forward copies at most, as concat does; backward sums the first row of the gradient into the
// token's, an add a feature.
std::vector<Operation> class_token_operations(const Layer& /*layer*/,
                                              const std::vector<Shape>& inputs,
                                              const Shape& /*output*/) {
  const double width = double(inputs.front()[1]);
  Operation token{"class_token", OpClass::kReduction, {}, {}};
  token.backward = {width, width, 0, 1, width};
  return {token};
}

std::unique_ptr<Kernel> class_token_kernel(const Layer& /*layer*/, const std::vector<Shape>& inputs,
                                           DType dtype, std::uint64_t /*seed*/) {
  return detail::make_class_token(inputs, dtype);
}

}  // namespace

LayerTypeDef class_token_type() {
  return {.name = "class_token",
          .keys = {},
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_no_keys,
          .shape = class_token_shape,
          .cost = class_token_cost,
          .lower = class_token_operations,
          .kernel = class_token_kernel};
}

}  // namespace ipusim::models
