// attention: multi-head self-attention over [sequence, hidden], with an optional padding mask
// as second input and an optional causal mask.

#include <array>

#include "models/layers/types/transformer_family.hpp"

namespace ipusim::models {
namespace {

const std::array kAttentionKeys = {
    positive_int_key<&LayerParams::heads>("heads", "heads; must divide the input's last axis"),
    dropout_rate_key<&LayerParams::rate>("dropout", 0, "the rate of the probabilities' dropout"),
    kCausalKey,
};

void read_attention(const core::ConfigNode& layer, LayerParams& params) {
  read_keys(layer, kAttentionKeys, params);
}

Shape attention_shape(const Layer& layer, const std::vector<InputShape>& inputs) {
  const Shape& x = inputs[0].shape;
  if (x.size() != 2)
    fail_layer(layer, "needs an input of shape [sequence, hidden], but " + input_text(inputs[0]));
  if (x[1] % layer.params.heads != 0) {
    fail_layer(layer, "has " + std::to_string(layer.params.heads) +
                          " heads, which must divide hidden (the last axis), but " +
                          input_text(inputs[0]));
  }
  if (inputs.size() == 2)
    expect_sequence(layer, inputs[1], x[0], "a padding mask");
  return x;
}

LayerCost attention_cost(const Layer& layer, const std::vector<Shape>& inputs,
                         const CostSizes& size) {
  const Shape& x = inputs.front();
  return attention_block_cost({x[0], x[1], layer.params.heads, layer.params.rate > 0}, size);
}

std::vector<Operation> attention_operations(const Layer& layer, const std::vector<Shape>& inputs,
                                            const Shape& /*output*/) {
  const Shape& x = inputs.front();
  return attention_block_operations(double(x[0]), double(x[1]), double(layer.params.heads),
                                    layer.params.rate > 0);
}

std::unique_ptr<Kernel> attention_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                         DType dtype, std::uint64_t seed) {
  return detail::make_attention(layer, inputs, dtype, seed);
}

}  // namespace

LayerTypeDef attention_type() {
  return {.name = "attention",
          .keys = kAttentionKeys,
          .inputs = LayerInputs::kOneOrTwo,
          .view = false,
          .read = read_attention,
          .shape = attention_shape,
          .cost = attention_cost,
          .lower = attention_operations,
          .kernel = attention_kernel};
}

}  // namespace ipusim::models
