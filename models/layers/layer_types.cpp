#include "models/layers/layer_types.hpp"

#include <array>

#include "sim/core/error.hpp"

namespace ipusim::models {

// The registry: one row per layer type, each `ROW(name)` naming the function `name_type()` that
// the type's file under types/ defines. A type's position is its LayerType value, so the types
// LayerType names come first and in its order; a type added since is appended here and needs
// nothing else (code that must single it out looks it up by name).
#define IPUSIM_LAYER_TYPES(ROW) \
  ROW(input)                    \
  ROW(flatten)                  \
  ROW(reshape)                  \
  ROW(dense)                    \
  ROW(conv2d)                   \
  ROW(maxpool2d)                \
  ROW(global_average_pool2d)    \
  ROW(dropout)                  \
  ROW(relu)                     \
  ROW(gelu)                     \
  ROW(add)                      \
  ROW(concat)                   \
  ROW(slice)                    \
  ROW(softmax_cross_entropy)    \
  ROW(embedding)                \
  ROW(transformer_encoder)      \
  ROW(layer_norm)               \
  ROW(batch_norm)               \
  ROW(softmax)                  \
  ROW(tanh)                     \
  ROW(attention)                \
  ROW(transformer_attention)    \
  ROW(transformer_feed_forward) \
  ROW(avgpool2d)                \
  ROW(token_mean)               \
  ROW(token_select)             \
  ROW(position_table)           \
  ROW(class_token)              \
  ROW(relative_attention)       \
  ROW(sigmoid)                  \
  ROW(swish)                    \
  ROW(multiply)                 \
  ROW(glu)                      \
  ROW(group_norm)               \
  ROW(conv1d)                   \
  ROW(conv2d_transpose)         \
  ROW(crop2d)                   \
  ROW(relu6)                    \
  ROW(hard_sigmoid)             \
  ROW(hard_swish)               \
  /* a new type's line goes above this one, so that adding it edits no other line */

#define IPUSIM_DECLARE_ROW(name) LayerTypeDef name##_type();
IPUSIM_LAYER_TYPES(IPUSIM_DECLARE_ROW)
#undef IPUSIM_DECLARE_ROW

namespace {

using RowFunction = LayerTypeDef (*)();

#define IPUSIM_LIST_ROW(name) &name##_type,
constexpr std::array kRowFunctions = {IPUSIM_LAYER_TYPES(IPUSIM_LIST_ROW)};
#undef IPUSIM_LIST_ROW

const std::vector<LayerTypeDef>& registry() {
  static const std::vector<LayerTypeDef> rows = [] {
    std::vector<LayerTypeDef> out;
    for (const RowFunction row : kRowFunctions)
      out.push_back(row());
    return out;
  }();
  return rows;
}

}  // namespace

const LayerTypeDef& layer_type_row(LayerType type) {
  const auto index = static_cast<std::size_t>(type);
  IPUSIM_CHECK(index < registry().size());
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
  const std::vector<LayerTypeDef>& rows = registry();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (name == rows[i].name)
      return static_cast<LayerType>(i);
  }
  return std::nullopt;
}

std::size_t layer_type_count() {
  return kRowFunctions.size();
}

std::string layer_type_name(LayerType type) {
  return layer_type_row(type).name;
}

std::string layer_label(const Layer& layer) {
  return "layer '" + layer.id + "' (" + layer_type_name(layer.type) + ")";
}

}  // namespace ipusim::models
