#pragma once
// Names of layer types and activations as configs spell them.

#include <optional>
#include <string>
#include <vector>

#include "models/layer.hpp"

namespace ipusim::models {

const std::vector<std::string>& layer_type_names();
std::optional<LayerType> layer_type_from_name(const std::string& name);
std::string layer_type_name(LayerType type);
// How errors name a layer: "layer 'fc1' (dense)".
std::string layer_label(const Layer& layer);

const std::vector<std::string>& activation_names();
std::optional<Activation> activation_from_name(const std::string& name);

}  // namespace ipusim::models
