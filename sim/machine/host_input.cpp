#include "sim/machine/host_input.hpp"

#include <algorithm>

#include "sim/core/checked.hpp"
#include "sim/core/time.hpp"

namespace ipusim::sim {
namespace {

// The longer of an instance's two limits: sending its bytes at its share of the host's
// bandwidth, and decoding its samples when the host decodes them. 0 when neither binds.
void time_preparing(const RunSpec& spec, std::int64_t samples, HostInput& input) {
  const auto& hw = spec.hardware;
  input.bandwidth = hw.host_input_bandwidth / input.instances_per_host();
  input.cycles = core::transfer_cycles(double(input.bytes), input.bandwidth, hw.clock_hz);
  if (!spec.data.host_decode || hw.instance_decode_rate <= 0)
    return;
  const std::int64_t decoding =
      core::cycles_from_seconds(double(samples) / hw.instance_decode_rate, hw.clock_hz);
  input.decoding = decoding > input.cycles;
  input.cycles = std::max(input.cycles, decoding);
}

}  // namespace

HostInput host_input(const RunSpec& spec, std::int64_t sample_bytes) {
  const auto& p = spec.pipeline;
  HostInput input;
  input.replicas_per_host = replicas_per_host(spec.hardware, p);
  input.hosts = (p.replication_factor + input.replicas_per_host - 1) / input.replicas_per_host;
  input.replicas_per_instance = instance_replicas(spec.hardware, p);
  // By default an instance drives a host's replicas, so there are as many as hosts.
  input.instances =
      (p.replication_factor + input.replicas_per_instance - 1) / input.replicas_per_instance;
  const std::int64_t samples = core::checked_mul(p.micro_batch_size * p.gradient_accumulation_count,
                                                 input.replicas_per_instance, "host input");
  input.bytes = core::checked_mul(samples, sample_bytes, "host input");
  time_preparing(spec, samples, input);
  return input;
}

}  // namespace ipusim::sim
