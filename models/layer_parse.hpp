#pragma once
// Reads one entry of a model's "layers" list into a Layer. It checks what the entry alone can
// tell: the type, the keys that type allows, each value's range, and how many inputs the type
// takes. What needs other layers (input ids, shapes) is checked by LayerGraph and parse_model.

#include "models/layer.hpp"
#include "sim/core/config_node.hpp"

namespace ipusim::models {

// `inputs` stays empty when the entry has no "inputs" key: parse_model fills in the default
// (the previous layer) because only it knows the neighbours.
Layer parse_layer(const core::ConfigNode& node);

}  // namespace ipusim::models
