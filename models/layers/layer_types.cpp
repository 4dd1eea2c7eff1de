#include "models/layers/layer_types.hpp"

#include <array>
#include <sstream>
#include <utility>

#include "sim/core/error.hpp"

namespace ipusim::models {
namespace {

// One row per type, in the enum's order. Every field is given (-Wmissing-field-initializers).
constexpr std::array<LayerTypeRow, kLayerTypeCount> kLayerTypes = {{
    {LayerType::kInput, "input", "shape", LayerInputs::kOne, true},
    {LayerType::kFlatten, "flatten", "", LayerInputs::kOne, true},
    {LayerType::kReshape, "reshape", "shape", LayerInputs::kOne, true},
    {LayerType::kDense, "dense", "units activation bias tied_to", LayerInputs::kOne, false},
    {LayerType::kConv2d, "conv2d", "filters kernel stride padding activation bias",
     LayerInputs::kOne, false},
    {LayerType::kMaxPool2d, "maxpool2d", "pool stride padding", LayerInputs::kOne, false},
    {LayerType::kGlobalAveragePool2d, "global_average_pool2d", "", LayerInputs::kOne, false},
    {LayerType::kDropout, "dropout", "rate", LayerInputs::kOne, false},
    {LayerType::kRelu, "relu", "", LayerInputs::kOne, false},
    {LayerType::kGelu, "gelu", "", LayerInputs::kOne, false},
    {LayerType::kAdd, "add", "", LayerInputs::kTwoOrMore, false},
    {LayerType::kConcat, "concat", "axis", LayerInputs::kTwoOrMore, false},
    {LayerType::kSlice, "slice", "axis start size", LayerInputs::kOne, true},
    {LayerType::kSoftmaxCrossEntropy, "softmax_cross_entropy", "", LayerInputs::kOne, false},
    {LayerType::kEmbedding, "embedding",
     "vocab_size hidden sequence_length max_positions token_types positions layer_norm epsilon",
     LayerInputs::kOneOrTwo, false},
    {LayerType::kTransformerEncoder, "transformer_encoder",
     "hidden heads sequence_length ffn dropout", LayerInputs::kOneOrTwo, false},
    {LayerType::kLayerNorm, "layer_norm", "epsilon", LayerInputs::kOne, false},
    {LayerType::kBatchNorm, "batch_norm", "epsilon momentum", LayerInputs::kOne, false},
    {LayerType::kSoftmax, "softmax", "", LayerInputs::kOne, false},
    {LayerType::kTanh, "tanh", "", LayerInputs::kOne, false},
    {LayerType::kAttention, "attention", "heads dropout", LayerInputs::kOneOrTwo, false},
    {LayerType::kTransformerAttention, "transformer_attention",
     "hidden heads sequence_length dropout", LayerInputs::kOneOrTwo, false},
    {LayerType::kTransformerFeedForward, "transformer_feed_forward",
     "hidden sequence_length ffn dropout", LayerInputs::kOne, false},
}};

// Each type once, in the enum's order, so that none goes without a row and a type's row is at
// its index.
constexpr bool lists_every_type_in_order() {
  for (std::size_t i = 0; i < kLayerTypes.size(); ++i) {
    if (kLayerTypes[i].type != static_cast<LayerType>(i))
      return false;
  }
  return true;
}
static_assert(lists_every_type_in_order());

constexpr std::array<std::pair<Activation, const char*>, 4> kActivations = {{
    {Activation::kNone, "none"},
    {Activation::kRelu, "relu"},
    {Activation::kGelu, "gelu"},
    {Activation::kTanh, "tanh"},
}};

}  // namespace

const LayerTypeRow& layer_type_row(LayerType type) {
  const auto index = static_cast<std::size_t>(type);
  IPUSIM_CHECK(index < kLayerTypes.size());
  return kLayerTypes[index];
}

std::vector<std::string> layer_type_keys(LayerType type) {
  std::vector<std::string> keys;
  std::istringstream words(layer_type_row(type).keys);
  for (std::string key; words >> key;)
    keys.push_back(key);
  return keys;
}

const std::vector<std::string>& layer_type_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const LayerTypeRow& row : kLayerTypes)
      out.emplace_back(row.name);
    return out;
  }();
  return names;
}

std::optional<LayerType> layer_type_from_name(const std::string& name) {
  for (const LayerTypeRow& row : kLayerTypes) {
    if (name == row.name)
      return row.type;
  }
  return std::nullopt;
}

std::string layer_type_name(LayerType type) {
  return layer_type_row(type).name;
}

const std::vector<std::string>& activation_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& entry : kActivations)
      out.emplace_back(entry.second);
    return out;
  }();
  return names;
}

std::optional<Activation> activation_from_name(const std::string& name) {
  for (const auto& [activation, text] : kActivations) {
    if (name == text)
      return activation;
  }
  return std::nullopt;
}

std::string layer_label(const Layer& layer) {
  return "layer '" + layer.id + "' (" + layer_type_name(layer.type) + ")";
}

}  // namespace ipusim::models
