#include "models/layer_types.hpp"

#include <array>
#include <utility>

namespace ipusim::models {
namespace {

constexpr std::array<std::pair<LayerType, const char*>, kLayerTypeCount> kLayerTypes = {{
    {LayerType::kInput, "input"},
    {LayerType::kFlatten, "flatten"},
    {LayerType::kReshape, "reshape"},
    {LayerType::kDense, "dense"},
    {LayerType::kConv2d, "conv2d"},
    {LayerType::kMaxPool2d, "maxpool2d"},
    {LayerType::kGlobalAveragePool2d, "global_average_pool2d"},
    {LayerType::kDropout, "dropout"},
    {LayerType::kRelu, "relu"},
    {LayerType::kGelu, "gelu"},
    {LayerType::kAdd, "add"},
    {LayerType::kConcat, "concat"},
    {LayerType::kSlice, "slice"},
    {LayerType::kSoftmaxCrossEntropy, "softmax_cross_entropy"},
    {LayerType::kEmbedding, "embedding"},
    {LayerType::kTransformerEncoder, "transformer_encoder"},
    {LayerType::kLayerNorm, "layer_norm"},
    {LayerType::kBatchNorm, "batch_norm"},
    {LayerType::kSoftmax, "softmax"},
    {LayerType::kTanh, "tanh"},
    {LayerType::kAttention, "attention"},
    {LayerType::kTransformerAttention, "transformer_attention"},
    {LayerType::kTransformerFeedForward, "transformer_feed_forward"},
}};

// Each type once, in the enum's order, so that none goes without a name.
constexpr bool lists_every_type_in_order() {
  for (std::size_t i = 0; i < kLayerTypes.size(); ++i) {
    if (kLayerTypes[i].first != static_cast<LayerType>(i))
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

const std::vector<std::string>& layer_type_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& entry : kLayerTypes)
      out.emplace_back(entry.second);
    return out;
  }();
  return names;
}

std::optional<LayerType> layer_type_from_name(const std::string& name) {
  for (const auto& [type, text] : kLayerTypes) {
    if (name == text)
      return type;
  }
  return std::nullopt;
}

std::string layer_type_name(LayerType type) {
  for (const auto& [candidate, text] : kLayerTypes) {
    if (candidate == type)
      return text;
  }
  return "?";
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
