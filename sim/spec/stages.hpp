#pragma once
// Reading how a model is cut into pipeline stages (`splits`, or explicit `stages` lists with
// concurrent sub-stages) and mapped onto IPUs (`device_mapping`), with errors naming the JSON
// path.

#include <vector>

#include "models/layers/model.hpp"
#include "sim/core/config_node.hpp"
#include "sim/spec/spec.hpp"

namespace ipusim::sim {

// The stages of `pipeline` (the config's pipeline section); one stage of every layer when
// neither splits nor stages is given. Throws ConfigError.
std::vector<StageSpec> read_stages(const models::Model& model, const core::ConfigNode& pipeline);

}  // namespace ipusim::sim
