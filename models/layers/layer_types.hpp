#pragma once
// What ipusim knows of each layer type without running it (its name as configs spell it, its
// config keys, how many inputs it takes, whether it is a view), one row per type; and the names
// of activations. What a type computes stays in the file of each aspect (layer_parse.cpp reads
// its fields, shape_inference.cpp its output shape, layer_info.cpp its cost, operations.cpp its
// lowering, kernels.cpp its kernel), each a switch over LayerType that the compiler holds
// complete.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "models/layers/layer.hpp"

namespace ipusim::models {

// How many layer types there are: LayerType's values run from 0 to its last, which a type added
// at the end of the enum must replace here. Every switch over LayerType lists each type and has
// no default, so that -Wswitch (an error under -Werror) refuses a type some switch forgets.
inline constexpr std::size_t kLayerTypeCount =
    static_cast<std::size_t>(LayerType::kTransformerFeedForward) + 1;

// How many layers a type takes as inputs ("inputs" in the config; without it, the layer before).
enum class LayerInputs {
  kOne,
  kOneOrTwo,   // an optional second: an embedding's token types, an attention's padding mask
  kTwoOrMore,  // add and concat merge their inputs
};

struct LayerTypeRow {
  LayerType type;
  const char* name;  // as configs spell it
  const char* keys;  // its own config keys, space-separated, beyond those every layer takes
  LayerInputs inputs;
  bool view;  // relabels its input's memory: it moves and computes nothing
};

const LayerTypeRow& layer_type_row(LayerType type);
// The row's keys, in order.
std::vector<std::string> layer_type_keys(LayerType type);

const std::vector<std::string>& layer_type_names();
std::optional<LayerType> layer_type_from_name(const std::string& name);
std::string layer_type_name(LayerType type);
// How errors name a layer: "layer 'fc1' (dense)".
std::string layer_label(const Layer& layer);

const std::vector<std::string>& activation_names();
std::optional<Activation> activation_from_name(const std::string& name);

}  // namespace ipusim::models
