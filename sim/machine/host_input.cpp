#include "sim/machine/host_input.hpp"

#include <algorithm>

#include "sim/core/checked.hpp"
#include "sim/core/time.hpp"

namespace ipusim::sim {

HostInput host_input(const RunSpec& spec, std::int64_t sample_bytes) {
  const auto& hw = spec.hardware;
  const auto& p = spec.pipeline;
  HostInput input;
  // A replica wider than a host still reads its samples through one host.
  input.replicas_per_host =
      std::clamp(hw.host_ipus() / p.ipus_per_replica(), 1, p.replication_factor);
  input.hosts = (p.replication_factor + input.replicas_per_host - 1) / input.replicas_per_host;
  const std::int64_t samples = core::checked_mul(p.micro_batch_size * p.gradient_accumulation_count,
                                                 input.replicas_per_host, "host input");
  input.bytes = core::checked_mul(samples, sample_bytes, "host input");
  input.cycles = core::transfer_cycles(double(input.bytes), hw.host_input_bandwidth, hw.clock_hz);
  return input;
}

}  // namespace ipusim::sim
