#include "sim/machine/collectives.hpp"

#include <algorithm>

#include "sim/core/time.hpp"

namespace ipusim::sim {
namespace {

std::int64_t ring_steps_cycles(int steps, double chunk_bytes, const RingLink& link,
                               double clock_hz) {
  if (steps <= 0)
    return 0;
  return steps *
         (link.latency_cycles + core::transfer_cycles(chunk_bytes, link.bandwidth, clock_hz));
}

}  // namespace

std::int64_t ring_reduce_scatter_cycles(double bytes, int n, const RingLink& link,
                                        double clock_hz) {
  return ring_steps_cycles(n - 1, bytes / n, link, clock_hz);
}

std::int64_t ring_all_gather_cycles(double bytes, int n, const RingLink& link, double clock_hz) {
  return ring_steps_cycles(n - 1, bytes / n, link, clock_hz);
}

std::int64_t ring_all_reduce_cycles(double bytes, int n, const RingLink& link, double clock_hz) {
  return ring_steps_cycles(2 * (n - 1), bytes / n, link, clock_hz);
}

ReplicaLayout replica_layout(const RunSpec& spec) {
  std::string error;
  return replica_layout(spec.pipeline.replication_factor, spec.pipeline.ipus_per_replica(),
                        spec.hardware.ipus_per_ild, &error);
}

int sharding_group(const RunSpec& spec) {
  if (!spec.pipeline.replicated_optimizer_state_sharding)
    return 1;
  return replica_layout(spec).per_ild;
}

Collectives::Collectives(const RunSpec& spec)
    : layout_(replica_layout(spec)),
      // A replica's IPU reaches the next replica's over the rails' up/down links at once.
      ipu_link_{spec.hardware.link_bandwidth * std::max(1, spec.hardware.links_up_down),
                spec.hardware.link_latency_cycles},
      gw_link_{spec.hardware.gw_link_bandwidth, spec.hardware.gw_link_latency_cycles},
      clock_hz_(spec.hardware.clock_hz) {}

std::int64_t Collectives::all_reduce(double bytes) const {
  if (layout_.ilds() == 1)
    return ring_all_reduce_cycles(bytes, layout_.replicas, ipu_link_, clock_hz_);
  return reduce_scatter(bytes) + cross_ild_all_reduce(bytes / layout_.per_ild) + all_gather(bytes);
}

std::int64_t Collectives::reduce_scatter(double bytes) const {
  return ring_reduce_scatter_cycles(bytes, layout_.per_ild, ipu_link_, clock_hz_);
}

std::int64_t Collectives::all_gather(double bytes) const {
  return ring_all_gather_cycles(bytes, layout_.per_ild, ipu_link_, clock_hz_);
}

std::int64_t Collectives::cross_ild_all_reduce(double shard_bytes) const {
  return ring_all_reduce_cycles(shard_bytes, layout_.ilds(), gw_link_, clock_hz_);
}

}  // namespace ipusim::sim
