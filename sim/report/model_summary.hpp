#pragma once
// The `ipusim model` and `ipusim validate` texts: a Keras-style layer table with stages and
// IPUs, and a one-line summary of a validated run; and `ipusim layers`, the layer types and
// their keys as their registry rows declare them.

#include <string>

#include "sim/spec/spec.hpp"

namespace ipusim::sim {

std::string render_model_summary(const RunSpec& spec);
std::string one_line_summary(const RunSpec& spec);

// Every layer type: the inputs it takes and its own keys.
std::string render_layer_types();
// One type's keys: each with the value it takes, its default and its meaning.
std::string render_layer_type(models::LayerType type);

}  // namespace ipusim::sim
