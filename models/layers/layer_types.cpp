#include "models/layers/layer_types.hpp"

#include <array>

#include "sim/core/error.hpp"

namespace ipusim::models {
namespace {

// Each type once, in the enum's order, so that a type's row is at its index.
bool lists_every_type_in_order(const std::array<LayerTypeDef, kLayerTypeCount>& rows) {
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].type != static_cast<LayerType>(i))
      return false;
  }
  return true;
}

// One row per type, in the enum's order. A row has no default, so a list one short does not
// compile; the order is checked once, on first use.
std::array<LayerTypeDef, kLayerTypeCount> make_registry() {
  const std::array<LayerTypeDef, kLayerTypeCount> rows = {
      input_type(),
      flatten_type(),
      reshape_type(),
      dense_type(),
      conv2d_type(),
      maxpool2d_type(),
      global_average_pool2d_type(),
      dropout_type(),
      relu_type(),
      gelu_type(),
      add_type(),
      concat_type(),
      slice_type(),
      softmax_cross_entropy_type(),
      embedding_type(),
      transformer_encoder_type(),
      layer_norm_type(),
      batch_norm_type(),
      softmax_type(),
      tanh_type(),
      attention_type(),
      transformer_attention_type(),
      transformer_feed_forward_type(),
      avgpool2d_type(),
      token_mean_type(),
      token_select_type(),
      position_table_type(),
      class_token_type(),
  };
  IPUSIM_CHECK(lists_every_type_in_order(rows));
  return rows;
}

const std::array<LayerTypeDef, kLayerTypeCount>& registry() {
  static const std::array<LayerTypeDef, kLayerTypeCount> rows = make_registry();
  return rows;
}

}  // namespace

const LayerTypeDef& layer_type_row(LayerType type) {
  const auto index = static_cast<std::size_t>(type);
  IPUSIM_CHECK(index < kLayerTypeCount);
  return registry()[index];
}

std::vector<std::string> layer_type_keys(LayerType type) {
  std::vector<std::string> keys;
  for (const LayerKey& key : layer_type_row(type).keys)
    keys.emplace_back(key.name);
  return keys;
}

const std::vector<std::string>& layer_type_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const LayerTypeDef& row : registry())
      out.emplace_back(row.name);
    return out;
  }();
  return names;
}

std::optional<LayerType> layer_type_from_name(const std::string& name) {
  for (const LayerTypeDef& row : registry()) {
    if (name == row.name)
      return row.type;
  }
  return std::nullopt;
}

std::string layer_type_name(LayerType type) {
  return layer_type_row(type).name;
}

std::string layer_label(const Layer& layer) {
  return "layer '" + layer.id + "' (" + layer_type_name(layer.type) + ")";
}

}  // namespace ipusim::models
