#include "sim/spec/hardware.hpp"

#include <cmath>

#include "sim/core/checked.hpp"
#include "sim/core/error.hpp"
#include "sim/core/time.hpp"
#include "sim/spec/config_keys.hpp"

namespace ipusim::sim {
namespace {

using core::ConfigNode;
using core::Dimension;

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
  // Fitted to the MLPerf steps of ../shared/fidelity/train.csv that ran on GC200s, A1 (BERT)
  // and R1 (ResNet-50), both SDK 2.1: ipusim calibrate --fit matmul.efficiency,conv.efficiency.
  // The AMP alone would reach 0.7 (poplin's 4 M + 230 cycles per 16x16 block and tile); the fit
  // takes up what the model lacks around a matmul: operands broadcast to many tiles, the
  // vertex's fixed cost. A tile earns its place from 48 rows (2x48x16x16), where poplin's formula
  // gives 41% of peak. The conv guess before any fit was 0.6, a matmul with its windows gathered.
  ops.of(OpClass::kMatmul) = {0.3109, 24576};
  ops.of(OpClass::kConv) = {0.303, 24576};
  // [D] add and multiply take 0.75 cycles per fp16 element, 1.5 per fp32: a third of peak.
  ops.of(OpClass::kElementwise) = {1.0 / 3, 256};
  ops.of(OpClass::kNonLinear) = {0.2, 256};  // [D] GELU 1.25 cycles per fp16 element
  // [D] softmax: max, exp, sum and divide, 2.25 cycles per fp16 element (reduce 0.25 each).
  ops.of(OpClass::kReduction) = {0.11, 256};
  // [D] multiSlice moves about 1 element per cycle against 12 fp16 elements of tile memory.
  ops.of(OpClass::kGather) = {0.08, 256};
  ops.of(OpClass::kCopy) = {0.33, 256};  // guess: 8 bytes per cycle, a load and a store
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
  // Fitted to the train.csv steps that ran on Bow IPUs, A6 (BERT) and R7 (ResNet-50), both SDK
  // 2.5.1, as the gc200 values are to A1 and R1 (SDK 2.1). The tile is the same, yet the Bow
  // runs did 1.22x (matmul) and 1.16x (conv) the work per cycle: one value shared by both presets
  // left the GC200 rows 6-11% fast and the Bow rows 5-7% slow. Each preset is thus its chip with
  // the software of its MLPerf round.
  hw.operations.of(models::OpClass::kMatmul).efficiency = 0.3791;
  hw.operations.of(models::OpClass::kConv).efficiency = 0.3522;
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
  hw.gw_link_latency_cycles = 0;
  hw.host_round_trip_cycles = 0;
  return hw;
}

HardwareSpec clocked_preset(const std::string& name) {
  if (name == "bow")
    return bow();
  if (name == "gc2")
    return gc2();
  return gc200();
}

// The sources give syncs in time, so their cycle counts follow each preset's clock.
HardwareSpec preset(const std::string& name) {
  if (name == "ideal")
    return ideal();
  HardwareSpec hw = clocked_preset(name);
  hw.host_sync_cycles = core::cycles_from_seconds(5e-6, hw.clock_hz);  // §3: uncalibrated guess
  set_sync_from_ipumodel_formula(hw);                                  // §3: IPUModel formula
  // Guesses, uncalibrated: a host round trip is a host sync each way (§3 has no published
  // figure); a GW-Link hop is a 100 GbE RoCE hop through the gateways, a few µs.
  hw.host_round_trip_cycles = 2 * hw.host_sync_cycles;
  hw.gw_link_latency_cycles = core::cycles_from_seconds(2e-6, hw.clock_hz);
  return hw;
}

std::int64_t read_cycles(const ConfigNode& node) {
  return node.as_int(0, std::int64_t{1} << 40);
}

// A mean over many events, so not necessarily whole.
double read_average_cycles(const ConfigNode& node) {
  const double cycles = node.as_number();
  if (!(cycles >= 0 && cycles <= double(std::int64_t{1} << 40)))
    node.fail("expected a number of cycles from 0 to 1099511627776, found " + node.json().dump());
  return cycles;
}

// Plausible from a slow serial line to far beyond any memory; outside, times overflow or vanish.
double read_bandwidth(const ConfigNode& node) {
  const double bandwidth = node.as_quantity(Dimension::kBandwidth);
  if (bandwidth < 1e3 || bandwidth > 1e15) {
    node.fail("expected a bandwidth from 1kB/s to 1PB/s, found " + node.json().dump() +
              " (the ideal preset models free transfers)");
  }
  return bandwidth;
}

double read_flop_rate(const ConfigNode& node) {
  const double rate = node.as_quantity(Dimension::kFlopRate);
  if (rate < 1e6 || rate > 1e18)
    node.fail("expected a FLOP rate from 1MFLOPS to 1000PFLOPS, found " + node.json().dump());
  return rate;
}

void read_links(const ConfigNode& node, HardwareSpec& hw) {
  node.expect_only_keys(
      {"bandwidth", "latency_cycles", "links_in_pair", "links_up_down", "links_cross"});
  if (auto v = node.find("bandwidth"))
    hw.link_bandwidth = read_bandwidth(*v);
  if (auto v = node.find("latency_cycles"))
    hw.link_latency_cycles = read_cycles(*v);
  if (auto v = node.find("links_in_pair"))
    hw.links_in_pair = int(v->as_int(0, 16));
  if (auto v = node.find("links_up_down"))
    hw.links_up_down = int(v->as_int(0, 16));
  if (auto v = node.find("links_cross"))
    hw.links_cross = int(v->as_int(0, 16));
}

void read_gw_link(const ConfigNode& node, HardwareSpec& hw) {
  node.expect_only_keys({"bandwidth", "latency_cycles"});
  if (auto v = node.find("bandwidth"))
    hw.gw_link_bandwidth = read_bandwidth(*v);
  if (auto v = node.find("latency_cycles"))
    hw.gw_link_latency_cycles = read_cycles(*v);
}

void read_sync(const ConfigNode& node, HardwareSpec& hw) {
  node.expect_only_keys({"base_cycles", "per_ipu_cycles", "exchange_overhead_cycles", "host_cycles",
                         "host_round_trip_cycles"});
  if (auto v = node.find("base_cycles"))
    hw.sync_base_cycles = read_cycles(*v);
  if (auto v = node.find("per_ipu_cycles"))
    hw.sync_per_ipu_cycles = read_cycles(*v);
  if (auto v = node.find("exchange_overhead_cycles"))
    hw.exchange_overhead_cycles = read_cycles(*v);
  if (auto v = node.find("host_cycles"))
    hw.host_sync_cycles = read_cycles(*v);
  if (auto v = node.find("host_round_trip_cycles"))
    hw.host_round_trip_cycles = read_cycles(*v);
}

std::int64_t read_memory(const ConfigNode& node) {
  const double bytes = node.as_quantity(Dimension::kBytes);
  if (bytes > 1e15)
    node.fail("a memory of more than 1 PB per IPU is not plausible");
  if (bytes < 1)
    node.fail("the memory must be at least 1 byte");
  return static_cast<std::int64_t>(bytes);
}

void read_peak(const ConfigNode& node, HardwareSpec& hw) {
  node.expect_only_keys({"fp32", "fp16"});
  if (auto v = node.find("fp32"))
    hw.peak_flops_fp32 = read_flop_rate(*v);
  if (auto v = node.find("fp16"))
    hw.peak_flops_fp16 = read_flop_rate(*v);
}

double read_positive(const ConfigNode& node, int most) {
  const double value = node.as_number();
  if (!(value > 0 && value <= most))
    node.fail("expected a number in (0, " + std::to_string(most) + "], found " +
              node.json().dump());
  return value;
}

void read_op_class(const ConfigNode& node, OpClassCost& cost) {
  node.expect_only_keys({"efficiency", "min_work_per_tile"});
  if (auto v = node.find("efficiency"))
    cost.efficiency = read_positive(*v, 1);
  if (auto v = node.find("min_work_per_tile"))
    cost.min_work_per_tile = double(v->as_int(0, std::int64_t{1} << 40));
}

std::vector<std::string> operation_keys() {
  std::vector<std::string> keys = {"compute_set_cycles", "exchange_cycles",
                                   "exchange_bytes_per_tile_cycle",
                                   "vector_elements_per_tile_cycle"};
  for (auto op_class : models::kOpClasses)
    keys.emplace_back(models::to_string(op_class));
  return keys;
}

void read_operations(const ConfigNode& node, OperationCosts& ops) {
  node.expect_only_keys(operation_keys());
  if (auto v = node.find("compute_set_cycles"))
    ops.compute_set_cycles = read_average_cycles(*v);
  if (auto v = node.find("exchange_cycles"))
    ops.exchange_cycles = read_cycles(*v);
  if (auto v = node.find("exchange_bytes_per_tile_cycle"))
    ops.exchange_bytes_per_tile_cycle = read_positive(*v, 1024);
  if (auto v = node.find("vector_elements_per_tile_cycle")) {
    v->expect_only_keys({"fp32", "fp16"});
    if (auto rate = v->find("fp32"))
      ops.vector_fp32_per_tile_cycle = read_positive(*rate, 1024);
    if (auto rate = v->find("fp16"))
      ops.vector_fp16_per_tile_cycle = read_positive(*rate, 1024);
  }
  for (auto op_class : models::kOpClasses) {
    if (auto v = node.find(std::string(models::to_string(op_class))))
      read_op_class(*v, ops.of(op_class));
  }
}

void read_code_memory(const ConfigNode& node, CodeMemory& code) {
  node.expect_only_keys({"control", "per_compute_set", "per_tile_per_compute_set"});
  if (auto v = node.find("control"))
    code.control_bytes = read_memory(*v);
  if (auto v = node.find("per_compute_set"))
    code.compute_set_bytes = read_memory(*v);
  if (auto v = node.find("per_tile_per_compute_set"))
    code.tile_compute_set_bytes = read_memory(*v);
}

// Keys earlier versions read, with where their meaning went.
void reject_replaced_keys(const ConfigNode& node) {
  if (auto v = node.find("efficiency")) {
    v->fail(
        "the achieved share of peak is now set per operation class: use "
        "hardware.operations.<class>.efficiency, with <class> one of matmul, conv, "
        "elementwise, non_linear, reduction, gather, copy");
  }
  if (auto v = node.find("always_live_memory")) {
    v->fail(
        "code memory now grows with the operations on each IPU: use "
        "hardware.code_memory.control for the fixed part per IPU");
  }
}

void read_overrides(const ConfigNode& node, HardwareSpec& hw) {
  if (auto v = node.find("clock")) {
    hw.clock_hz = v->as_quantity(Dimension::kFrequency);
    if (hw.clock_hz < 1e6 || hw.clock_hz > 1e11)
      v->fail("expected a clock between 1MHz and 100GHz");
  }
  if (auto v = node.find("tiles"))
    hw.tiles = v->as_int(1, 1 << 20);
  if (auto v = node.find("memory_per_ipu"))
    hw.memory_per_ipu_bytes = read_memory(*v);
  if (auto v = node.find("peak_flops"))
    read_peak(*v, hw);
  if (auto v = node.find("memory_bandwidth"))
    hw.memory_bandwidth = read_bandwidth(*v);
  if (auto v = node.find("ipu_link"))
    read_links(*v, hw);
  if (auto v = node.find("gw_link"))
    read_gw_link(*v, hw);
  if (auto v = node.find("ipus_per_ild"))
    hw.ipus_per_ild = int(v->as_int(1, 1024));
  if (auto v = node.find("selection_order")) {
    const auto name = v->as_enum({"snake", "hoof", "zigzag"});
    hw.selection_order = name == "hoof"     ? SelectionOrder::kHoof
                         : name == "zigzag" ? SelectionOrder::kZigzag
                                            : SelectionOrder::kSnake;
  }
  if (auto v = node.find("host_link_bandwidth"))
    hw.host_link_bandwidth = read_bandwidth(*v);
  if (auto v = node.find("host_input_bandwidth"))
    hw.host_input_bandwidth = read_bandwidth(*v);
  if (auto v = node.find("ipus_per_host"))
    hw.ipus_per_host = int(v->as_int(1, 1024));
  if (auto v = node.find("streaming_memory_bandwidth")) {
    hw.streaming_memory_bandwidth = read_bandwidth(*v);
  }
  if (auto v = node.find("sync"))
    read_sync(*v, hw);
  if (auto v = node.find("operations"))
    read_operations(*v, hw.operations);
  if (auto v = node.find("code_memory"))
    read_code_memory(*v, hw.code);
}

}  // namespace

ReplicaLayout replica_layout(int replicas, int ipus_per_replica, int ipus_per_ild,
                             std::string* error) {
  if (replicas == 1 || std::int64_t{replicas} * ipus_per_replica <= ipus_per_ild)
    return {replicas, replicas};
  const int per_ild = ipus_per_ild / ipus_per_replica;
  if (per_ild == 0 || replicas % per_ild != 0) {
    *error = std::to_string(replicas) + " replicas of " + std::to_string(ipus_per_replica) +
             " IPUs do not fill IPU-Link domains of " + std::to_string(ipus_per_ild) +
             " IPUs (hardware.ipus_per_ild) alike: each domain must hold the same whole number "
             "of replicas";
    return {replicas, replicas};
  }
  return {replicas, per_ild};
}

const std::vector<std::string>& hardware_preset_names() {
  static const std::vector<std::string> names = {"gc200", "bow", "gc2", "ideal"};
  return names;
}

double HardwareSpec::unit_peak_per_tile_cycle(models::OpClass op_class, models::DType dtype) const {
  const bool fp16 = dtype == models::DType::kFp16;
  if (models::on_amp(op_class))
    return peak_flops(dtype) / (double(tiles) * clock_hz);
  if (op_class == models::OpClass::kGather || op_class == models::OpClass::kCopy)
    return memory_bandwidth / (double(tiles) * clock_hz) / double(models::dtype_bytes(dtype));
  return fp16 ? operations.vector_fp16_per_tile_cycle : operations.vector_fp32_per_tile_cycle;
}

HardwareSpec parse_hardware(const ConfigNode& node, int ipus_needed, std::string* note) {
  reject_replaced_keys(node);
  node.expect_only_keys(key_names(hardware_keys()));
  HardwareSpec hw = preset(node.get_enum("preset", "gc200", hardware_preset_names()));
  if (auto topology = node.find("topology"))
    topology->as_enum({"ladder"});
  read_overrides(node, hw);
  if (auto ipus = node.find("ipus")) {
    hw.ipus = int(ipus->as_int(1, 1024));
    if (hw.ipus < ipus_needed) {
      ipus->fail("the pipeline needs " + std::to_string(ipus_needed) + " IPUs, but only " +
                 std::to_string(hw.ipus) + " are configured");
    }
  } else {
    hw.ipus = core::round_up_to_power_of_two(ipus_needed);
    if (hw.ipus != ipus_needed) {
      *note = "the pipeline uses " + std::to_string(ipus_needed) + " IPUs; the device has " +
              std::to_string(hw.ipus) + " because multi-IPU devices come in powers of two";
    }
  }
  return hw;
}

std::string selection_order_name(SelectionOrder order) {
  switch (order) {
    case SelectionOrder::kSnake:
      return "snake";
    case SelectionOrder::kHoof:
      return "hoof";
    case SelectionOrder::kZigzag:
      return "zigzag";
  }
  return "?";
}

}  // namespace ipusim::sim
