// token_select: one token of [tokens, features...], giving [features...]: a ViT's class token, a
// GPT's last token. A view, as slice is: the token is a contiguous range of its input.

#include <array>

#include "models/layers/types/type_support.hpp"

namespace ipusim::models {
namespace {

const std::array kTokenSelectKeys = {
    int_key<&LayerParams::index>("index", 0, kInt32Min, kInt32Max,
                                 "the token; negative counts from the end (-1: the last)"),
};

void read_token_select(const core::ConfigNode& layer, LayerParams& params) {
  read_keys(layer, kTokenSelectKeys, params);
}

Shape token_select_shape(const Layer& layer, const std::vector<InputShape>& inputs) {
  const InputShape& input = only_input(inputs);
  expect_tokens(layer, input);
  const std::int64_t tokens = input.shape[0];
  const std::int64_t index = layer.params.index;
  if (index < -tokens || index >= tokens) {
    fail_layer(layer, "has index " + std::to_string(index) + ", but its input has " +
                          std::to_string(tokens) + " tokens (allowed: " + std::to_string(-tokens) +
                          " to " + std::to_string(tokens - 1) + "): " + input_text(input));
  }
  return Shape(input.shape.begin() + 1, input.shape.end());
}

std::unique_ptr<Kernel> token_select_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                            DType dtype, std::uint64_t /*seed*/) {
  return detail::make_token_select(layer, inputs, dtype);
}

}  // namespace

LayerTypeDef token_select_type() {
  return {.name = "token_select",
          .keys = kTokenSelectKeys,
          .inputs = LayerInputs::kOne,
          .view = true,
          .read = read_token_select,
          .shape = token_select_shape,
          .cost = no_cost,
          .lower = no_operations,
          .kernel = token_select_kernel};
}

}  // namespace ipusim::models
