#pragma once
// The rules that join sections of a config: an option that is accepted must act on this run,
// and the replicas, hosts and instances must fit together. Each failure is a config error at the
// key that asked for what cannot be.

#include "sim/core/config_node.hpp"
#include "sim/spec/spec.hpp"

namespace ipusim::sim {

// Checks a spec whose sections were each read and validated on their own.
void check_across_sections(const RunSpec& spec, const core::ConfigNode& root);

}  // namespace ipusim::sim
