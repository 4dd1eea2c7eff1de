#pragma once
// The replicas' collectives: all-reduce, reduce-scatter and all-gather of B bytes over R
// replicas, as cycles. Inside an IPU-Link domain (ILD, one POD64) a collective is a ring over
// the IPU-Links joining the replicas (poplibs ReplicatedCollectives.cpp uses rings): each of
// its steps sends 1/n of the data to the next replica and pays the link's latency. Across ILDs
// it is hierarchical: a reduce-scatter inside each ILD, an all-reduce of each replica's 1/n
// share over the GW-Links between ILDs, then an all-gather inside. Pure functions of the
// hardware and the replicas' layout.

#include <cstdint>
#include <string_view>

#include "sim/spec/spec.hpp"

namespace ipusim::sim {

// The weight update's parts as the report, the trace and the HTML report name them (the
// all-reduce is schedules::Op::kAllReduce's name).
inline constexpr std::string_view kReduceScatter = "reduce-scatter";
inline constexpr std::string_view kAllGather = "all-gather";
inline constexpr std::string_view kHostCall = "host call";
inline constexpr std::string_view kInputWait = "input wait";

// One ring's links as one IPU sees them: what it sends per second and each step's fixed cost.
struct RingLink {
  double bandwidth = 0;  // bytes/s; 0: unlimited
  std::int64_t latency_cycles = 0;
};

// Rings of n members: reduce-scatter and all-gather take n-1 steps of B/n bytes, all-reduce
// (the two back to back) 2(n-1).
std::int64_t ring_reduce_scatter_cycles(double bytes, int n, const RingLink& link, double clock_hz);
std::int64_t ring_all_gather_cycles(double bytes, int n, const RingLink& link, double clock_hz);
std::int64_t ring_all_reduce_cycles(double bytes, int n, const RingLink& link, double clock_hz);

// The run's replicas on its ILDs (the spec has checked that they fill them alike).
ReplicaLayout replica_layout(const RunSpec& spec);

// How many replicas share one copy of the optimizer state: 1 without
// replicated_optimizer_state_sharding, else the replicas of one ILD (Graphcore's multi-host
// BERT shards over the 8 replicas of its POD64 and replicates the state across POD64s).
int sharding_group(const RunSpec& spec);

// The collectives of one run's replicas on its hardware (see the top).
class Collectives {
 public:
  explicit Collectives(const RunSpec& spec);

  // Over all replicas: a ring inside one ILD, hierarchical across ILDs.
  std::int64_t all_reduce(double bytes) const;
  // Over the replicas of one ILD (the sharding group).
  std::int64_t reduce_scatter(double bytes) const;
  std::int64_t all_gather(double bytes) const;
  // The all-reduce of one replica's shard of `bytes` between ILDs over the GW-Links: 0 in one
  // ILD.
  std::int64_t cross_ild_all_reduce(double shard_bytes) const;

  const ReplicaLayout& layout() const { return layout_; }

 private:
  ReplicaLayout layout_;
  RingLink ipu_link_;
  RingLink gw_link_;
  double clock_hz_;
};

}  // namespace ipusim::sim
