#pragma once
// The `ipusim model` and `ipusim validate` texts: a Keras-style layer table with stages and
// IPUs, and a one-line summary of a validated run.

#include <string>

#include "sim/spec/spec.hpp"

namespace ipusim::sim {

std::string render_model_summary(const RunSpec& spec);
std::string one_line_summary(const RunSpec& spec);

}  // namespace ipusim::sim
