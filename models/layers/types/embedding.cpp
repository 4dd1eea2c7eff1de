// embedding: BERT's embeddings by default (token, position and type rows summed, then a layer
// norm); "positions": false and "layer_norm": false leave a plain lookup (Keras' Embedding,
// ONNX's Gather).

#include <array>

#include "models/layers/types/type_support.hpp"
#include "sim/core/checked.hpp"

namespace ipusim::models {
namespace {

const LayerKey kEmbeddingVocabSize =
    positive_int_key<&LayerParams::vocab_size>("vocab_size", "rows of the word table");
const LayerKey kEmbeddingHidden =
    positive_int_key<&LayerParams::hidden>("hidden", "the width of each row");
const LayerKey kEmbeddingSequenceLength =
    positive_int_key<&LayerParams::sequence_length>("sequence_length", "tokens per sample");
const LayerKey kEmbeddingPositions =
    bool_key<&LayerParams::positions>("positions", true, "adds a position table");
const LayerKey kEmbeddingTokenTypes = int_key<&LayerParams::token_types>(
    "token_types", 0, 0, core::kMaxCount, "rows of the type table; 0: none");
const LayerKey kEmbeddingLayerNorm =
    bool_key<&LayerParams::normalized>("layer_norm", true, "a layer norm after the sum");
const LayerKey kEmbeddingEpsilon = positive_number_key<&LayerParams::epsilon>(
    "epsilon", kBertLayerNormEpsilon, "the layer norm's, added to the variance");

const std::array kEmbeddingKeys = {
    kEmbeddingVocabSize,
    kEmbeddingHidden,
    kEmbeddingSequenceLength,
    own_key("max_positions", KeyKind::kPositiveInt, "sequence_length",
            "rows of the position table, at least sequence_length"),
    kEmbeddingTokenTypes,
    kEmbeddingPositions,
    kEmbeddingLayerNorm,
    kEmbeddingEpsilon,
};

void read_max_positions(const core::ConfigNode& layer, LayerParams& params) {
  params.max_positions = params.positions ? params.sequence_length : 0;
  const auto positions = layer.find("max_positions");
  if (!positions)
    return;
  if (!params.positions)
    positions->fail("max_positions sizes the position table, which \"positions\": false removes");
  params.max_positions = positions->as_positive_int();
  if (params.max_positions < params.sequence_length)
    positions->fail("max_positions (" + std::to_string(params.max_positions) +
                    ") must be at least sequence_length (" +
                    std::to_string(params.sequence_length) + ")");
}

// In the order the rules between keys need: positions before max_positions, layer_norm before
// epsilon.
void read_embedding(const core::ConfigNode& layer, LayerParams& params) {
  read_key(layer, kEmbeddingVocabSize, params);
  read_key(layer, kEmbeddingHidden, params);
  read_key(layer, kEmbeddingSequenceLength, params);
  read_key(layer, kEmbeddingPositions, params);
  read_max_positions(layer, params);
  read_key(layer, kEmbeddingTokenTypes, params);
  read_key(layer, kEmbeddingLayerNorm, params);
  const auto epsilon = layer.find("epsilon");
  if (epsilon && !params.normalized)
    epsilon->fail("epsilon belongs to the layer norm, which \"layer_norm\": false removes");
  read_key(layer, kEmbeddingEpsilon, params);
}

// Token ids (and token types) come from the model input, one per position.
Shape embedding_shape(const Layer& layer, const std::vector<InputShape>& inputs) {
  const LayerParams& p = layer.params;
  if (inputs.size() == 2 && p.token_types == 0) {
    fail_layer(layer, "has no token types (token_types is 0), so it takes no second input, but " +
                          input_text(inputs[1]));
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::string what = i == 0 ? "token ids" : "token types";
    if (!inputs[i].model_input)
      fail_layer(layer, "takes " + what + " from the model input, not the output of '" +
                            inputs[i].source + "'");
    expect_sequence(layer, inputs[i], p.sequence_length, what);
  }
  return {p.sequence_length, p.hidden};
}

// Backward scatter-adds into the tables (reading the token ids) and runs the layer norm's
// backward (reading its input). Token ids get no gradient.
LayerCost embedding_cost(const Layer& layer, const std::vector<Shape>& inputs,
                         const CostSizes& size) {
  const LayerParams& p = layer.params;
  LayerCost cost;
  const std::int64_t rows = core::checked_add(
      core::checked_add(p.vocab_size, p.max_positions, kParamCount), p.token_types, kParamCount);
  cost.params = core::checked_add(core::checked_mul(rows, p.hidden, kParamCount),
                                  p.normalized ? 2 * p.hidden : 0, kParamCount);
  // The word table, the position and type tables it has, and its layer norm's two.
  cost.param_tensors =
      1 + (p.max_positions > 0 ? 1 : 0) + (p.token_types > 0 ? 1 : 0) + (p.normalized ? 2 : 0);
  cost.saved_bytes =
      (p.normalized ? size.out * size.d : 0) + 4 * p.sequence_length * std::int64_t(inputs.size());
  cost.input_gradient = false;
  return cost;
}

std::vector<Operation> embedding_operations(const Layer& layer,
                                            const std::vector<Shape>& /*inputs*/,
                                            const Shape& /*output*/) {
  const LayerParams& p = layer.params;
  const double tokens = double(p.sequence_length);
  const double hidden = double(p.hidden);
  // A lookup computes nothing; backward scatter-adds each position's gradient into the table.
  Operation gather{"word_gather", OpClass::kGather, {}, {}};
  gather.forward = {tokens * hidden, tokens, 0, 1, 0};
  gather.backward = {tokens * hidden, tokens * hidden, 0, 1, tokens * hidden};
  std::vector<Operation> ops = {gather};
  const int adds = (p.positions ? 1 : 0) + (p.token_types > 0 ? 1 : 0);
  if (adds > 0) {
    ops.push_back(vector_op("position_type_add", OpClass::kElementwise, adds * tokens * hidden, 1));
  }
  if (p.normalized)
    ops.push_back(normalization_op("layer_norm", tokens * hidden, kLayerNormFlops, hidden));
  return ops;
}

std::unique_ptr<Kernel> embedding_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                         DType dtype, std::uint64_t /*seed*/) {
  return detail::make_embedding(layer, inputs, dtype);
}

}  // namespace

LayerTypeDef embedding_type() {
  return {.name = "embedding",
          .keys = kEmbeddingKeys,
          .inputs = LayerInputs::kOneOrTwo,
          .view = false,
          .read = read_embedding,
          .shape = embedding_shape,
          .cost = embedding_cost,
          .lower = embedding_operations,
          .kernel = embedding_kernel};
}

}  // namespace ipusim::models
