// token_mean: the mean over the first per-sample axis, [tokens, features...] to [features...]:
// mean pooling over a sequence's tokens (a sentence embedding, a ViT's pooled head).

#include "models/layers/types/type_support.hpp"

namespace ipusim::models {
namespace {

Shape token_mean_shape(const Layer& layer, const std::vector<InputShape>& inputs) {
  const InputShape& input = only_input(inputs);
  expect_tokens(layer, input);
  return Shape(input.shape.begin() + 1, input.shape.end());
}

// A sum over the tokens per feature and one division; backward spreads each feature's gradient,
// divided by the token count, over the tokens. Only the shapes are needed for that.
LayerCost token_mean_cost(const Layer& /*layer*/, const std::vector<Shape>& /*inputs*/,
                          const CostSizes& /*size*/) {
  return operations_cost(0);
}

// As global_average_pool2d's: backward reads one gradient per feature and writes every token's
// share of it.
std::vector<Operation> token_mean_operations(const Layer& /*layer*/,
                                             const std::vector<Shape>& inputs,
                                             const Shape& output) {
  const double in = double(element_count(inputs.front()));
  const double out = double(element_count(output));
  Operation mean{"token_mean", OpClass::kReduction, {}, {}};
  mean.forward = {in, in, 0, 1, in + out};
  mean.backward = {in, out, 0, 1, in};
  return {mean};
}

std::unique_ptr<Kernel> token_mean_kernel(const Layer& /*layer*/, const std::vector<Shape>& inputs,
                                          DType dtype, std::uint64_t /*seed*/) {
  return detail::make_token_mean(inputs, dtype);
}

}  // namespace

LayerTypeDef token_mean_type() {
  return {.name = "token_mean",
          .keys = {},
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_no_keys,
          .shape = token_mean_shape,
          .cost = token_mean_cost,
          .lower = token_mean_operations,
          .kernel = token_mean_kernel};
}

}  // namespace ipusim::models
