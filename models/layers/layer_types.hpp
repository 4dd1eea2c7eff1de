#pragma once
// The registry of layer types: one row per type (LayerTypeDef, layer_type_def.hpp), made by a
// function in the type's file under models/layers/types/ and listed by one line in
// layer_types.cpp. Reading a layer (layer_parse.cpp), its output shape (shape_inference.cpp),
// its cost (layer_info.cpp), its operations (operations.cpp) and its kernel (kernels.cpp) each
// look up the row; none switches over LayerType.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "models/layers/layer.hpp"
#include "models/layers/layer_type_def.hpp"

namespace ipusim::models {

// How many layer types there are: LayerType's values run from 0 to one less.
std::size_t layer_type_count();

const LayerTypeDef& layer_type_row(LayerType type);
// The names of the row's keys, in order.
std::vector<std::string> layer_type_keys(LayerType type);

const std::vector<std::string>& layer_type_names();
std::optional<LayerType> layer_type_from_name(const std::string& name);
std::string layer_type_name(LayerType type);
// How errors name a layer: "layer 'fc1' (dense)".
std::string layer_label(const Layer& layer);

}  // namespace ipusim::models
