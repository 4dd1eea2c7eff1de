// transformer_encoder: one BERT encoder layer (post-LN), its attention half then its
// feed-forward half.

#include <array>

#include "models/layers/types/transformer_family.hpp"
#include "sim/core/checked.hpp"

namespace ipusim::models {
namespace {

const std::array kTransformerEncoderKeys = {kTransformerHidden,         kTransformerHeads,
                                            kTransformerSequenceLength, kTransformerFfn,
                                            kTransformerDropout,        kCausalKey};

void read_transformer_encoder(const core::ConfigNode& layer, LayerParams& params) {
  read_transformer(layer, params, true, true);
}

// An encoder is its two halves, figure for figure.
LayerCost transformer_encoder_cost(const Layer& layer, const std::vector<Shape>& /*inputs*/,
                                   const CostSizes& size) {
  using core::checked_add;
  const LayerCost attention = encoder_attention_cost(layer.params, size);
  const LayerCost feed_forward = encoder_feed_forward_cost(layer.params, size);
  return {checked_add(attention.params, feed_forward.params, kParamCount),
          attention.param_tensors + feed_forward.param_tensors,
          checked_add(attention.saved_bytes, feed_forward.saved_bytes, kAttentionMatrix),
          attention.seed_bytes + feed_forward.seed_bytes, FlopsRule::kProducts};
}

std::vector<Operation> transformer_encoder_operations(const Layer& layer,
                                                      const std::vector<Shape>& /*inputs*/,
                                                      const Shape& /*output*/) {
  std::vector<Operation> ops = encoder_attention_operations(layer.params);
  for (Operation& op : encoder_feed_forward_operations(layer.params))
    ops.push_back(std::move(op));
  return ops;
}

}  // namespace

LayerTypeDef transformer_encoder_type() {
  return {.name = "transformer_encoder",
          .keys = kTransformerEncoderKeys,
          .inputs = LayerInputs::kOneOrTwo,
          .view = false,
          .read = read_transformer_encoder,
          .shape = transformer_shape,
          .cost = transformer_encoder_cost,
          .lower = transformer_encoder_operations,
          .kernel = transformer_kernel};
}

}  // namespace ipusim::models
