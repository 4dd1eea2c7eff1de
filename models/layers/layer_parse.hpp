#pragma once
// Reads one entry of a model's "layers" list into a Layer. It checks what the entry alone can
// tell: the type, the keys that type allows, each value's range, and how many inputs the type
// takes. What needs other layers (input ids, shapes) is checked by LayerGraph and parse_model.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "models/layers/layer.hpp"
#include "sim/core/config_node.hpp"

namespace ipusim::models {

// The longest model name or layer id, in bytes: every report copies names, and numeric mode
// names files after layer ids (`<id>.moving_variance.gradient.npy` must stay within the 255
// bytes of a file name).
constexpr std::size_t kMaxNameBytes = 200;

// Why `id` cannot be a layer id, or nullopt. Numeric mode names files after layer ids (the
// `initial_weights` folder, `train --save`, the weights `import` writes), so an id is one plain
// file name: not empty, at most kMaxNameBytes, without '/', '\', ".." or a control character.
// The one rule for every way a name becomes a path.
std::optional<std::string> layer_id_problem(const std::string& id);

// The keys every layer of `type` takes before its type's own: id, type, inputs (not an input
// layer, where the model input enters), cycles and checkpoint.
std::vector<std::string> common_layer_keys(LayerType type);

// `inputs` stays empty when the entry has no "inputs" key: parse_model fills in the default
// (the previous layer) because only it knows the neighbours.
Layer parse_layer(const core::ConfigNode& node);

}  // namespace ipusim::models
