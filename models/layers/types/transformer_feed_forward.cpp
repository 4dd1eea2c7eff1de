// transformer_feed_forward: the second half of a transformer_encoder,
// out = LN(y + dropout(gelu(y W1 + b1) W2 + b2)).

#include <array>

#include "models/layers/types/transformer_family.hpp"

namespace ipusim::models {
namespace {

const std::array kTransformerFeedForwardKeys = {kTransformerHidden, kTransformerSequenceLength,
                                                kTransformerFfn, kTransformerDropout};

void read_transformer_feed_forward(const core::ConfigNode& layer, LayerParams& params) {
  read_transformer(layer, params, false, true);
}

LayerCost transformer_feed_forward_cost(const Layer& layer, const std::vector<Shape>& /*inputs*/,
                                        const CostSizes& size) {
  return encoder_feed_forward_cost(layer.params, size);
}

std::vector<Operation> transformer_feed_forward_operations(const Layer& layer,
                                                           const std::vector<Shape>& /*inputs*/,
                                                           const Shape& /*output*/) {
  return encoder_feed_forward_operations(layer.params);
}

}  // namespace

LayerTypeDef transformer_feed_forward_type() {
  return {.name = "transformer_feed_forward",
          .keys = kTransformerFeedForwardKeys,
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_transformer_feed_forward,
          .shape = transformer_shape,
          .cost = transformer_feed_forward_cost,
          .lower = transformer_feed_forward_operations,
          .kernel = transformer_kernel};
}

}  // namespace ipusim::models
