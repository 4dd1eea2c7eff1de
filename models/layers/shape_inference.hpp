#pragma once
// Per-sample output shapes, channels-last (height, width, channels) as in Keras, each type's rule
// in its row (models/layers/types/). Each check names the layer, where its inputs come from and
// their shapes, so a user can see which layer to fix.

#include <span>
#include <string>
#include <vector>

#include "models/layers/layer.hpp"

namespace ipusim::models {

// One input of a layer as shape inference sees it.
struct InputShape {
  std::string source;  // the producing layer's id; empty for the model input itself
  bool model_input;    // the model input, directly or through input, flatten, reshape, slice
  Shape shape;
};

std::int64_t element_count(std::span<const std::int64_t> shape);  // 1 for a scalar
std::string shape_text(const Shape& shape);                       // "[26, 26, 32]"
// numpy's broadcast one way, as multiply takes its second input: `from` broadcasts to `to` when
// it has no more axes and, aligned at the last axis, each of its axes is `to`'s or 1.
bool broadcasts_to(const Shape& from, const Shape& to);
// "'conv1' gives [26, 26, 32]" or "the model input is [28, 28]", for messages.
std::string input_text(const InputShape& input);

// Throws core::ConfigError at the layer's JSON pointer when the inputs do not fit the layer.
Shape infer_output_shape(const Layer& layer, const std::vector<InputShape>& inputs);

}  // namespace ipusim::models
