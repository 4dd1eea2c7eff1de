#pragma once
// The hosts' input pipeline: each host prepares the next step's samples for the replicas on its
// IPUs (reads, decodes, augments and sends them) while the IPUs compute, at the hardware's
// host_input_bandwidth. A step cannot start before its input is ready, so an input pipeline
// slower than the IPUs makes them wait at the end of each step.

#include <cstdint>

#include "sim/spec/spec.hpp"

namespace ipusim::sim {

struct HostInput {
  int hosts = 1;
  int replicas_per_host = 1;
  std::int64_t bytes = 0;   // per step and host: samples and labels
  std::int64_t cycles = 0;  // to prepare them; 0 when the bandwidth is unlimited
};

// One host's share of a step's input, `sample_bytes` per sample as the infeed carries it.
HostInput host_input(const RunSpec& spec, std::int64_t sample_bytes);

}  // namespace ipusim::sim
