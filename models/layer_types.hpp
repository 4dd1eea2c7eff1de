#pragma once
// Names of layer types and activations as configs spell them.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "models/layer.hpp"

namespace ipusim::models {

// How many layer types there are: LayerType's values run from 0 to its last, which a type added
// at the end of the enum must replace here. Every switch over LayerType lists each type and has
// no default, so that -Wswitch (an error under -Werror) refuses a type some switch forgets.
inline constexpr std::size_t kLayerTypeCount =
    static_cast<std::size_t>(LayerType::kTransformerFeedForward) + 1;

const std::vector<std::string>& layer_type_names();
std::optional<LayerType> layer_type_from_name(const std::string& name);
std::string layer_type_name(LayerType type);
// How errors name a layer: "layer 'fc1' (dense)".
std::string layer_label(const Layer& layer);

const std::vector<std::string>& activation_names();
std::optional<Activation> activation_from_name(const std::string& name);

}  // namespace ipusim::models
