#pragma once
// The hardware a run is simulated on: a preset (gc200, bow, gc2, ideal) with any field
// overridden by the config. Every default cites its source in ../shared/spec/ipu-hardware.md.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "models/layers/dtype.hpp"
#include "models/layers/operations.hpp"
#include "sim/core/config_node.hpp"

namespace ipusim::sim {

// How pipeline stages (shards) map onto physical IPUs of the ladder, as TF's SelectionOrder.
enum class SelectionOrder { kSnake, kHoof, kZigzag };

// What one class of operations reaches on a tile: a share of its unit's peak, and the least
// work (FLOPs on the AMP units, elements otherwise) worth a tile of its own, so that a small
// operation spreads over fewer tiles.
struct OpClassCost {
  double efficiency = 1;
  double min_work_per_tile = 0;  // 0: every operation spreads over all tiles

  bool operator==(const OpClassCost&) const = default;
};

// How operations are priced: by the roofline of op_cost.hpp with its fitted efficiencies, or as
// Poplar plans them (sim/pricing).
enum class Pricing { kFitted, kPlanned };

// The per-operation cost model's parameters (see sim/machine/op_cost.hpp).
struct OperationCosts {
  Pricing pricing = Pricing::kFitted;  // every preset sets kPlanned
  // Planned pricing: the cycles a pass takes per cycle of poplibs' estimate of it, which leaves
  // out what happens around the plan (calibratable).
  double plan_scale = 1;
  // Vertex launch and on-tile sync, per compute set: an average over vertices, fractional when
  // `ipusim calibrate` fits it.
  double compute_set_cycles = 0;
  std::int64_t exchange_cycles = 0;          // fixed cost of the exchange before a compute set
  double exchange_bytes_per_tile_cycle = 0;  // on-chip exchange per receiving tile; 0: free
  double vector_fp32_per_tile_cycle = 0;     // elements per cycle of a tile's vector unit
  double vector_fp16_per_tile_cycle = 0;
  std::array<OpClassCost, models::kOpClasses.size()> classes{};
  // What the AMP classes (matmul, conv) reach when the program is compiled by an SDK before 2.5,
  // as a share of what they reach under 2.5 and later (see HardwareSpec::sdk).
  double amp_efficiency_before_sdk_2_5 = 1;

  const OpClassCost& of(models::OpClass op_class) const {
    return classes[std::size_t(models::index(op_class))];
  }
  OpClassCost& of(models::OpClass op_class) {
    return classes[std::size_t(models::index(op_class))];
  }
  bool operator==(const OperationCosts&) const = default;
};

// Code and vertex state an IPU holds for the operations placed on it, plus its control program.
struct CodeMemory {
  std::int64_t control_bytes = 0;           // per IPU: control program and host-exchange code
  std::int64_t compute_set_bytes = 0;       // per compute set: its exchange and control code
  std::int64_t tile_compute_set_bytes = 0;  // per tile a compute set uses: vertex code and state

  bool operator==(const CodeMemory&) const = default;
};

// The validated hardware of a run: rates in base units (Hz, bytes/s, FLOP/s), sizes in bytes,
// latencies and overheads in IPU cycles.
struct HardwareSpec {
  std::string preset;
  int ipus = 0;  // physical IPUs in the device (a power of two)
  double clock_hz = 0;
  std::int64_t tiles = 0;
  std::int64_t memory_per_ipu_bytes = 0;
  double peak_flops_fp32 = 0;  // FLOP/s per IPU
  double peak_flops_fp16 = 0;
  double memory_bandwidth = 0;  // bytes/s of in-processor memory, all tiles together
  // IPU-Links on the ladder: a link's bandwidth and how many links join two IPUs.
  double link_bandwidth = 0;  // bytes/s of one link, after efficiency
  std::int64_t link_latency_cycles = 0;
  int links_in_pair = 0;  // the rung: IPUs 2i and 2i+1
  int links_up_down = 0;  // IPU i and i+2 on the same rail
  int links_cross = 0;    // IPU i and the other rail's IPU one rung away
  SelectionOrder selection_order = SelectionOrder::kSnake;
  double host_link_bandwidth = 0;         // bytes/s per IPU for infeed and outfeed
  double streaming_memory_bandwidth = 0;  // bytes/s per IPU to remote (streaming) memory
  std::int64_t host_sync_cycles = 0;      // per host transfer
  std::int64_t sync_base_cycles = 0;      // global sync: base + per_ipu * IPUs
  std::int64_t sync_per_ipu_cycles = 0;
  std::int64_t exchange_overhead_cycles = 0;  // fixed cost of each inter-IPU exchange
  // Once per device program (repeat_count weight updates): the host starts the program and
  // waits for its end, and for each weight tensor writes the optimizer's values and serves its
  // streams.
  double host_call_seconds = 0;
  double host_call_seconds_per_tensor = 0;
  // The Poplar SDK release that compiles the program, as "2.5": its matmul and conv plans.
  std::string sdk;
  // IPU-Link domains (ILDs): a POD64's IPUs share one IPU-Link torus; ILDs join through the
  // IPU-Gateways' GW-Links, one host per ILD.
  int ipus_per_ild = 0;
  double gw_link_bandwidth = 0;  // bytes/s one IPU sends to other ILDs; 0: unlimited
  // The hosts that feed the IPUs: each prepares the input of the replicas on its IPUs (decodes,
  // augments, sends) at `host_input_bandwidth` bytes/s, beside the IPUs' compute.
  int ipus_per_host = 0;            // 0: one host per ILD
  double host_input_bandwidth = 0;  // bytes/s per host; 0: unlimited
  // Each process (poprun instance) runs its own input pipeline, which decodes at most this many
  // samples a second when they come compressed (DataSpec::host_decode); its host's bandwidth is
  // shared by the instances on it.
  double instance_decode_rate = 0;  // samples/s per instance; 0: unlimited
  std::int64_t gw_link_latency_cycles = 0;
  OperationCosts operations;
  CodeMemory code;

  double peak_flops(models::DType dtype) const {
    return dtype == models::DType::kFp16 ? peak_flops_fp16 : peak_flops_fp32;
  }
  // Peak work per cycle of one tile's unit for `op_class`: FLOPs on the AMP units, elements on
  // the vector units, elements through tile memory for gathers and copies.
  double unit_peak_per_tile_cycle(models::OpClass op_class, models::DType dtype) const;
  std::int64_t global_sync_cycles(int participating_ipus) const {
    return sync_base_cycles + sync_per_ipu_cycles * participating_ipus;
  }
  bool ideal() const { return preset == "ideal"; }
  int ilds() const { return (ipus + ipus_per_ild - 1) / ipus_per_ild; }
  int host_ipus() const { return ipus_per_host > 0 ? ipus_per_host : ipus_per_ild; }
  // One device program's host call, for a model of `weight_tensors` tensors.
  std::int64_t host_call_cycles(std::int64_t weight_tensors) const;
  // The share of its class's efficiency an operation of `op_class` reaches under this SDK.
  double software_factor(models::OpClass op_class) const;
  // Two specs are equal when every figure is: a key set to its preset's value changes nothing.
  bool operator==(const HardwareSpec&) const = default;
};

// Where data-parallel replicas sit: `replicas` in all, `per_ild` of them in each IPU-Link
// domain (all of them when they fit in one).
struct ReplicaLayout {
  int replicas = 1;
  int per_ild = 1;
  int ilds() const { return replicas / per_ild; }
};

// The layout of `replicas` replicas of `ipus_per_replica` IPUs on ILDs of `ipus_per_ild` IPUs;
// `error` says why when they cannot fill whole ILDs alike.
ReplicaLayout replica_layout(int replicas, int ipus_per_replica, int ipus_per_ild,
                             std::string* error);

const std::vector<std::string>& hardware_preset_names();
// The named preset's hardware, before any override (hardware_presets.cpp).
HardwareSpec preset_hardware(const std::string& name);
// The Poplar SDK releases `hardware.sdk` takes, oldest first.
const std::vector<std::string>& sdk_releases();

// Reads the `hardware` section. `ipus_needed` (stages' IPUs x replicas) gives the default IPU
// count, rounded up to a power of two; `note` says so when rounding happened.
HardwareSpec parse_hardware(const core::ConfigNode& hardware, int ipus_needed, std::string* note);

std::string selection_order_name(SelectionOrder order);

}  // namespace ipusim::sim
