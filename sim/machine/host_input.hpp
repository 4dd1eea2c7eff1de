#pragma once
// The hosts' input pipeline: each poprun instance (a process on one host) prepares the next
// step's samples for its replicas (reads, decodes, augments and sends them) while the IPUs
// compute: the instances on a host share its host_input_bandwidth, and one that decodes its
// samples (DataSpec::host_decode) does at most instance_decode_rate of them a second. A step cannot
// start before its input is ready, so an input pipeline slower than the IPUs makes them wait at the
// end of each step.

#include <cstdint>

#include "sim/spec/spec.hpp"

namespace ipusim::sim {

struct HostInput {
  int hosts = 1;
  int replicas_per_host = 1;
  int instances = 1;
  int replicas_per_instance = 1;
  double bandwidth = 0;     // bytes/s: the instance's share of its host's; 0: unlimited
  bool decoding = false;    // whether decoding its samples takes longer than sending them
  std::int64_t bytes = 0;   // per step and instance: samples and labels
  std::int64_t cycles = 0;  // to prepare them; 0 when the bandwidth is unlimited

  int instances_per_host() const { return instances / hosts; }
};

// One instance's share of a step's input, `sample_bytes` per sample as the infeed carries it.
HostInput host_input(const RunSpec& spec, std::int64_t sample_bytes);

}  // namespace ipusim::sim
