#include "sim/spec/hardware.hpp"

#include <cmath>

#include "sim/core/checked.hpp"
#include "sim/core/error.hpp"
#include "sim/core/suggest.hpp"
#include "sim/core/time.hpp"
#include "sim/spec/config_keys.hpp"

namespace ipusim::sim {
namespace {

using core::ConfigNode;
using core::Dimension;

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

// From nothing (a program that runs on without the host) to an hour.
double read_host_time(const ConfigNode& node) {
  const double seconds = node.as_quantity(Dimension::kDuration);
  if (!(seconds >= 0 && seconds <= 3600))
    node.fail("expected a time from 0s to 3600s, found " + node.json().dump());
  return seconds;
}

// Samples a second: from one a minute to far beyond any host.
double read_rate(const ConfigNode& node) {
  const double rate = node.as_number();
  if (!(rate >= 1.0 / 60 && rate <= 1e12))
    node.fail("expected samples a second from 0.0167 to 1e12, found " + node.json().dump());
  return rate;
}

void read_host_call(const ConfigNode& node, HardwareSpec& hw) {
  node.expect_only_keys({"per_program", "per_tensor"});
  if (auto v = node.find("per_program"))
    hw.host_call_seconds = read_host_time(*v);
  if (auto v = node.find("per_tensor"))
    hw.host_call_seconds_per_tensor = read_host_time(*v);
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
  if (auto v = node.find("host_round_trip_cycles")) {
    v->fail(
        "the cost of a host call is now a time, charged once per device program: use "
        "hardware.host_call, e.g. {\"per_program\": \"10us\", \"per_tensor\": \"450us\"}");
  }
  node.expect_only_keys(
      {"base_cycles", "per_ipu_cycles", "exchange_overhead_cycles", "host_cycles"});
  if (auto v = node.find("base_cycles"))
    hw.sync_base_cycles = read_cycles(*v);
  if (auto v = node.find("per_ipu_cycles"))
    hw.sync_per_ipu_cycles = read_cycles(*v);
  if (auto v = node.find("exchange_overhead_cycles"))
    hw.exchange_overhead_cycles = read_cycles(*v);
  if (auto v = node.find("host_cycles"))
    hw.host_sync_cycles = read_cycles(*v);
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

Pricing read_pricing(const ConfigNode& node) {
  const std::string name = node.as_string();
  if (name == "fitted")
    return Pricing::kFitted;
  if (name == "planned")
    return Pricing::kPlanned;
  node.fail("expected \"fitted\" or \"planned\", found " + node.json().dump() +
            core::did_you_mean(name, {"fitted", "planned"}));
}

std::vector<std::string> operation_keys() {
  std::vector<std::string> keys = {"compute_set_cycles",
                                   "exchange_cycles",
                                   "exchange_bytes_per_tile_cycle",
                                   "vector_elements_per_tile_cycle",
                                   "amp_efficiency_before_sdk_2_5",
                                   "pricing",
                                   "plan_scale"};
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
  if (auto v = node.find("amp_efficiency_before_sdk_2_5"))
    ops.amp_efficiency_before_sdk_2_5 = read_positive(*v, 1);
  if (auto v = node.find("pricing"))
    ops.pricing = read_pricing(*v);
  if (auto v = node.find("plan_scale"))
    ops.plan_scale = read_positive(*v, 100);
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
  if (auto v = node.find("instance_decode_rate"))
    hw.instance_decode_rate = read_rate(*v);
  if (auto v = node.find("ipus_per_host"))
    hw.ipus_per_host = int(v->as_int(1, 1024));
  if (auto v = node.find("host_call"))
    read_host_call(*v, hw);
  if (auto v = node.find("sdk"))
    hw.sdk = v->as_enum(sdk_releases());

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

std::int64_t HardwareSpec::host_call_cycles(std::int64_t weight_tensors) const {
  return core::cycles_from_seconds(
      host_call_seconds + host_call_seconds_per_tensor * double(weight_tensors), clock_hz);
}

const std::vector<std::string>& sdk_releases() {
  static const std::vector<std::string> releases = {"2.0", "2.1", "2.2", "2.3", "2.4", "2.5",
                                                    "2.6", "3.0", "3.1", "3.2", "3.3", "3.4"};
  return releases;
}

// Every release listed is "major.minor" with one digit each, so text compares as versions do.
double HardwareSpec::software_factor(models::OpClass op_class) const {
  if (!models::on_amp(op_class) || sdk >= "2.5")
    return 1;
  return operations.amp_efficiency_before_sdk_2_5;
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
  HardwareSpec hw = preset_hardware(node.get_enum("preset", "gc200", hardware_preset_names()));
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
