// transformer_attention: the first half of a transformer_encoder, y = LN(x +
// dropout(attention(x))), which Graphcore's BERT may place on another pipeline stage than the
// second.

#include <array>

#include "models/layers/types/transformer_family.hpp"

namespace ipusim::models {
namespace {

const std::array kTransformerAttentionKeys = {kTransformerHidden, kTransformerHeads,
                                              kTransformerSequenceLength, kTransformerDropout,
                                              kCausalKey};

void read_transformer_attention(const core::ConfigNode& layer, LayerParams& params) {
  read_transformer(layer, params, true, false);
}

// Its output is a tensor inside the encoder it halves, which the live activations count no
// more than the encoder's others (Q, K, V, the FFN's hidden layer).
LayerCost transformer_attention_cost(const Layer& layer, const std::vector<Shape>& /*inputs*/,
                                     const CostSizes& size) {
  LayerCost cost = encoder_attention_cost(layer.params, size);
  cost.live_output = false;
  return cost;
}

std::vector<Operation> transformer_attention_operations(const Layer& layer,
                                                        const std::vector<Shape>& /*inputs*/,
                                                        const Shape& /*output*/) {
  return encoder_attention_operations(layer.params);
}

}  // namespace

LayerTypeDef transformer_attention_type() {
  return {.name = "transformer_attention",
          .keys = kTransformerAttentionKeys,
          .inputs = LayerInputs::kOneOrTwo,
          .view = false,
          .read = read_transformer_attention,
          .shape = transformer_shape,
          .cost = transformer_attention_cost,
          .lower = transformer_attention_operations,
          .kernel = transformer_kernel};
}

}  // namespace ipusim::models
