#pragma once
// What attention, transformer_encoder and the encoder's halves (transformer_attention,
// transformer_feed_forward) share: the keys of the transformer layers, multi-head attention's
// cost and operations, and each half's, of which an encoder is the sum.

#include <cstdint>
#include <memory>
#include <vector>

#include "models/layers/types/type_support.hpp"

namespace ipusim::models {

inline const LayerKey kTransformerHidden =
    positive_int_key<&LayerParams::hidden>("hidden", "the width of each position");
inline const LayerKey kTransformerHeads =
    own_key("heads", KeyKind::kPositiveInt, nullptr, "attention heads; must divide hidden");
inline const LayerKey kTransformerSequenceLength =
    positive_int_key<&LayerParams::sequence_length>("sequence_length", "positions per sample");
inline const LayerKey kTransformerFfn =
    own_key("ffn", KeyKind::kInt, "4 x hidden", "the feed-forward network's inner width");
inline const LayerKey kTransformerDropout = dropout_rate_key<&LayerParams::rate>(
    "dropout", kBertDropout, "the rate of each of its dropouts (BERT's)");
// Shared with attention. The mask changes no cost figure: the cost model has the IPU compute the
// whole score matrix and then mask it, so the products, the softmax and the stash stay as they
// are without it.
inline const LayerKey kCausalKey = bool_key<&LayerParams::causal>(
    "causal", false, "query i attends to keys j <= i only (a decoder's mask)");

// An encoder's keys, or those of one of its halves: heads and causal for the attention, ffn for
// the feed-forward network, read in the encoder's order.
void read_transformer(const core::ConfigNode& layer, LayerParams& params, bool attention,
                      bool feed_forward);
// A half of an encoder keeps its shape as the whole does; only the attention takes a mask.
Shape transformer_shape(const Layer& layer, const std::vector<InputShape>& inputs);
std::unique_ptr<Kernel> transformer_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                           DType dtype, std::uint64_t seed);

// Multi-head self-attention over [s, h].
struct AttentionShape {
  std::int64_t s = 0;
  std::int64_t h = 0;
  std::int64_t heads = 0;
  bool dropout = false;
};
LayerCost attention_block_cost(const AttentionShape& a, const CostSizes& size);
std::vector<Operation> attention_block_operations(double s, double h, double heads, bool dropout);

// An encoder's halves, figure for figure; the encoder is the two.
LayerCost encoder_attention_cost(const LayerParams& p, const CostSizes& size);
LayerCost encoder_feed_forward_cost(const LayerParams& p, const CostSizes& size);
std::vector<Operation> encoder_attention_operations(const LayerParams& p);
std::vector<Operation> encoder_feed_forward_operations(const LayerParams& p);

}  // namespace ipusim::models
