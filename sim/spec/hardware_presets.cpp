// The presets' figures, each with its source (../shared/spec/ipu-hardware.md) or marked as a
// guess or a fit.

#include <string>

#include "sim/core/time.hpp"
#include "sim/spec/hardware.hpp"

namespace ipusim::sim {
namespace {

// ipu-hardware.md §2, ladder model (poplibs lib/poplibs_test/Util.cpp): 128 Gbit/s per link at
// 0.85 efficiency; 4 links inside a pair, 2 up, 2 down and 2 cross links per IPU.
constexpr double kLadderLinkBandwidth = 128e9 / 8 * 0.85;

// Bow-2000 datasheet (ipu-hardware.md §2, [P:Bow2000-DS]): "GW-Link 2x 100Gbps Gateway-Links
// for communication between Bow Pods"; the IPU-M2000 has the same two GW-Link ports (§2
// front panel). Both ports of a machine, shared by its 4 IPUs: 2 x 12.5 GB/s / 4 [D].
constexpr double kGwLinkBandwidthPerIpu = 2 * 100e9 / 8 / 4;
constexpr int kIpusPerPod64 = 64;  // §2: a POD64 is 16 IPU-Machines of 4 IPUs, one ILD

// ipu-hardware.md §3: the IPUModel's cross-IPU sync is ceil(15 ns x f x 2 x (1 + N/4)) cycles,
// i.e. 30 ns x f plus 7.5 ns x f per IPU.
void set_sync_from_ipumodel_formula(HardwareSpec& hw) {
  hw.sync_base_cycles = core::cycles_from_seconds(30e-9, hw.clock_hz);
  hw.sync_per_ipu_cycles = core::cycles_from_seconds(7.5e-9, hw.clock_hz);
}

// Per-operation costs of a Mk2 tile, from poplibs' own cycle estimators (graphcore/poplibs
// @7eac0f26; [D] = derived by us from the cited formulas):
// - compute set: the on-tile sync before its exchange, 90 cycles (popnn/CTCLossPlan.cpp), plus
//   the floor of a vertex on a tile, 120-190 cycles for elementwise vertices
//   (popops/popopsCycleEstimators.cpp: 6 workers x ~20 prologue cycles + supervisor) [D];
// - exchange: 100 cycles fixed plus bytes at 4 bytes/cycle per tile (CTCLossPlan.cpp;
//   ipu-hardware.md §1, getExchangeBytesPerCycle() = 4);
// - vector unit: 2 fp32 or 4 fp16 elements per cycle (64-bit datapath, ipu-hardware.md §1).
// Each class's efficiency is its poplibs cycles per element against that peak; its minimum work
// per tile is where the work of a tile equals its vertex floor. Calibratable, like all of them.
OperationCosts mk2_operations() {
  using models::OpClass;
  OperationCosts ops;
  ops.compute_set_cycles = 240;           // [D] 90 sync + 150 vertex floor
  ops.exchange_cycles = 100;              // CTCLossPlan.cpp: fixedOverheadExchangeCycles
  ops.exchange_bytes_per_tile_cycle = 4;  // ipu-hardware.md §1
  ops.vector_fp32_per_tile_cycle = 2;     // ipu-hardware.md §1, 64-bit vectors
  ops.vector_fp16_per_tile_cycle = 4;
  // Fitted pricing: fitted, one value for every chip, with the host call, the instances' input
  // pipeline, the GW-Link step (then 600 µs) and the older SDKs' factor below, to the 19 MLPerf
  // Training steps of ../shared/fidelity/train.csv (round 2, before they priced as planned). The
  // AMP alone would reach 0.7 (poplin's 4 M + 230 cycles per 16x16 block and tile); the fit takes
  // up what the model lacks around a product: operands broadcast to many tiles, the vertex's fixed
  // cost, the partials' reduction. A tile earns its place from 48 rows (2x48x16x16), where poplin's
  // formula gives 41% of peak.
  ops.of(OpClass::kMatmul) = {0.3953, 24576};
  ops.of(OpClass::kConv) = {0.3441, 24576};
  // Fitted likewise: the runs compiled by SDK 2.1 and 2.3 (all on GC200s) did this share of the
  // AMP work per cycle of the SDK 2.5.1 runs (all on Bows; the tile is the same, ipu-hardware.md
  // §1, so the clock is the chips' only difference here).
  ops.amp_efficiency_before_sdk_2_5 = 0.879;
  // [D] add and multiply take 0.75 cycles per fp16 element, 1.5 per fp32: a third of peak.
  ops.of(OpClass::kElementwise) = {1.0 / 3, 256};
  ops.of(OpClass::kNonLinear) = {0.2, 256};  // [D] GELU 1.25 cycles per fp16 element
  // [D] softmax: max, exp, sum and divide, 2.25 cycles per fp16 element (reduce 0.25 each).
  ops.of(OpClass::kReduction) = {0.11, 256};
  // [D] multiSlice moves about 1 element per cycle against 12 fp16 elements of tile memory.
  ops.of(OpClass::kGather) = {0.08, 256};
  ops.of(OpClass::kCopy) = {0.33, 256};  // guess: 8 bytes per cycle, a load and a store
  // Fitted with the host call, the instances' input pipeline and the GW-Link step to all 39
  // measured runs of ../shared/fidelity/train.csv, which price as planned (tools/fit-mlperf
  // --all): poplibs' estimate of a plan leaves out about a fifth of what the pass takes (the
  // syncs and exchange code around it, the estimators' optimism).
  ops.plan_scale = 1.25;
  // Planned by default: a product's plan follows its shape and a norm its compute sets, where
  // the efficiencies above are one a class, fitted on the largest, best-shaped products.
  ops.pricing = Pricing::kPlanned;
  return ops;
}

HardwareSpec gc200() {
  HardwareSpec hw;
  hw.preset = "gc200";
  hw.clock_hz = 1.33e9;                       // §1: MLPerf v1 system JSON; tut6 cycles/µs
  hw.tiles = 1472;                            // §1: libpva tutorial
  hw.memory_per_ipu_bytes = 638976LL * 1472;  // §1: 624 KB/tile x 1472 = 897 MB
  hw.peak_flops_fp16 = 250e12;                // §1: POD128 datasheet, 31.955 PF / 128
  hw.peak_flops_fp32 = 62.5e12;               // §1: POD128 datasheet, 7.989 PF / 128
  hw.memory_bandwidth = 47.5e12;              // §1: 47.5 TB/s in-processor memory
  hw.link_bandwidth = kLadderLinkBandwidth;   // §2 ladder model
  hw.link_latency_cycles = 100;               // §3: fixed exchange overhead ≈100 cycles
  hw.links_in_pair = 4;                       // §2 ladder model
  hw.links_up_down = 2;
  hw.links_cross = 1;                    // 2 cross links per IPU: one per diagonal neighbour
  hw.host_link_bandwidth = 12.5e9;       // §2: host path is 100 GbE RoCE per IPU-Machine
  hw.streaming_memory_bandwidth = 16e9;  // §2: PCIe Gen4 x8 to the Gateway, an upper bound
  hw.exchange_overhead_cycles = 100;     // §3: poplibs CTCLossPlan cost model
  hw.ipus_per_ild = kIpusPerPod64;
  hw.gw_link_bandwidth = kGwLinkBandwidthPerIpu;
  // Guess, calibratable: a host's input pipeline (read, decode, augment, send) delivers what
  // one 100 GbE RoCE port carries (§2), 12.5 GB/s, whatever its IPUs ask.
  hw.host_input_bandwidth = 12.5e9;
  // Fitted with plan_scale (tools/fit-mlperf --all): the ImageNet JPEGs one poprun instance's
  // input pipeline decoded and augmented a second in the ResNet-50 runs.
  hw.instance_decode_rate = 5213;
  // The host's time per device program. Its part per weight tensor is fitted likewise:
  // Graphcore's BERT runs one program per weight update (batches_per_step 1, the optimizer's
  // values written from the host each step), its ResNet-50 25-133 updates a program. The fixed
  // part is a guess, a host sync each way (§3 has no published figure).
  hw.host_call_seconds = 10e-6;
  hw.host_call_seconds_per_tensor = 450e-6;
  hw.sdk = "2.5";
  hw.operations = mk2_operations();
  // Code memory. A trivial Poplar graph's profile (graphcore/tensorflow docs/logging.rst, 2019)
  // holds about 4.3 kB per tile of stack, control, host-exchange and vertex code: ≈6.3 MB on
  // 1,472 tiles, 7 MB with the runtime [D]. Per compute set, 16 bytes of control code on every
  // tile, and per tile it uses a few vertices of about 30 bytes of state plus their exchange
  // code (4 bytes an instruction, poplibs DynamicSlice.cpp): both guesses, calibratable.
  hw.code.control_bytes = 7'000'000;
  hw.code.compute_set_bytes = 16 * 1472;
  hw.code.tile_compute_set_bytes = 150;
  return hw;
}

HardwareSpec bow() {
  HardwareSpec hw = gc200();
  hw.preset = "bow";
  hw.clock_hz = 1.85e9;         // §1: MLPerf v2 system JSON
  hw.peak_flops_fp16 = 350e12;  // §1: convergedigest
  hw.peak_flops_fp32 = 87e12;   // §1: derived, 62.4 x 1.85 / 1.33
  hw.memory_bandwidth = 66e12;  // §1: derived
  return hw;
}

// No measured Mk1 step: the operation costs stay the gc200 preset's, fitted or not.
HardwareSpec gc2() {
  HardwareSpec hw = gc200();
  hw.preset = "gc2";
  hw.clock_hz = 1.6e9;                        // §1: TF profiling report sample
  hw.tiles = 1216;                            // §1
  hw.memory_per_ipu_bytes = 262144LL * 1216;  // §1: 256 KB/tile, 304 MB
  hw.peak_flops_fp16 = 124.5e12;              // §1: Jia et al.
  hw.peak_flops_fp32 = 31.1e12;               // §1: Jia et al.
  hw.memory_bandwidth = 45e12;                // §1: Jia et al.
  hw.link_bandwidth = 64e9 / 2;               // §1: C2 card, 64 GB/s bidirectional per link
  hw.links_in_pair = 3;                       // §1: 3 links between the card's 2 IPUs
  hw.links_up_down = 2;                       // §1: 128 GB/s card to card
  hw.host_link_bandwidth = 16e9;              // §1: PCIe card
  hw.streaming_memory_bandwidth = 16e9;
  return hw;
}

// For analytic checks: a GC200 whose syncs, copies, host I/O, compute-set overheads and code
// cost nothing, and whose operations each spread over every tile.
HardwareSpec ideal() {
  HardwareSpec hw = gc200();
  hw.preset = "ideal";
  hw.operations.compute_set_cycles = 0;
  hw.operations.exchange_cycles = 0;
  hw.operations.exchange_bytes_per_tile_cycle = 0;
  for (auto& op_class : hw.operations.classes)
    op_class.min_work_per_tile = 0;
  hw.code = {};
  hw.link_bandwidth = 0;  // 0 means unlimited
  hw.link_latency_cycles = 0;
  hw.host_link_bandwidth = 0;
  hw.streaming_memory_bandwidth = 0;
  hw.host_sync_cycles = 0;
  hw.sync_base_cycles = 0;
  hw.sync_per_ipu_cycles = 0;
  hw.exchange_overhead_cycles = 0;
  hw.gw_link_bandwidth = 0;
  hw.host_input_bandwidth = 0;
  hw.instance_decode_rate = 0;
  hw.gw_link_latency_cycles = 0;
  hw.operations.plan_scale = 1;  // poplibs' estimates as they are
  hw.host_call_seconds = 0;
  hw.host_call_seconds_per_tensor = 0;
  return hw;
}

HardwareSpec clocked_preset(const std::string& name) {
  if (name == "bow")
    return bow();
  if (name == "gc2")
    return gc2();
  return gc200();
}

}  // namespace

// The sources give syncs in time, so their cycle counts follow each preset's clock.
HardwareSpec preset_hardware(const std::string& name) {
  if (name == "ideal")
    return ideal();
  HardwareSpec hw = clocked_preset(name);
  hw.host_sync_cycles = core::cycles_from_seconds(5e-6, hw.clock_hz);  // §3: uncalibrated guess
  set_sync_from_ipumodel_formula(hw);                                  // §3: IPUModel formula
  // Fitted with plan_scale (tools/fit-mlperf --all): each step of the collectives between
  // IPU-Link domains, a 100 GbE RoCE exchange through the gateways with its syncs, took 140 µs
  // in the runs on 2 and 4 POD64s (a bare RoCE hop would take a few µs).
  hw.gw_link_latency_cycles = core::cycles_from_seconds(140e-6, hw.clock_hz);
  return hw;
}

}  // namespace ipusim::sim
