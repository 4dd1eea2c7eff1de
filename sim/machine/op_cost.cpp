#include "sim/machine/op_cost.hpp"

#include <algorithm>
#include <cmath>

#include "sim/core/time.hpp"

namespace ipusim::sim {
namespace {

std::int64_t tiles_used(const HardwareSpec& hardware, const OpClassCost& cost, double work) {
  if (cost.min_work_per_tile <= 0)
    return hardware.tiles;
  const double wanted = std::ceil(work / cost.min_work_per_tile);
  return std::clamp<std::int64_t>(std::int64_t(std::min(wanted, double(hardware.tiles))), 1,
                                  hardware.tiles);
}

// Activations for the batch and the weights, brought to the tiles that compute.
double exchanged_bytes(models::DType dtype, const models::OpPass& pass, double batch) {
  return (pass.exchanged_elements * batch + pass.weight_elements) *
         double(models::dtype_bytes(dtype));
}

OpBound largest(const OpPassCost& cost, bool memory_unit) {
  if (cost.compute >= cost.exchange && cost.compute >= cost.overhead)
    return memory_unit ? OpBound::kMemory : OpBound::kCompute;
  return cost.exchange >= cost.overhead ? OpBound::kExchange : OpBound::kOverhead;
}

}  // namespace

std::string_view to_string(OpBound bound) {
  switch (bound) {
    case OpBound::kCompute:
      return "compute";
    case OpBound::kMemory:
      return "memory";
    case OpBound::kExchange:
      return "exchange";
    case OpBound::kOverhead:
      return "overhead";
  }
  return "?";
}

OpPassTerms pass_terms(const HardwareSpec& hardware, models::DType dtype, models::OpClass op_class,
                       const models::OpPass& pass, std::int64_t micro_batch) {
  OpPassTerms terms;
  if (pass.compute_sets == 0)
    return terms;
  const double batch = double(micro_batch);
  const double work = pass.work * batch;
  terms.tiles = tiles_used(hardware, hardware.operations.of(op_class), work);
  const double tiles = double(terms.tiles);
  terms.compute_sets = double(pass.compute_sets);
  terms.bytes_per_tile = exchanged_bytes(dtype, pass, batch) / tiles;
  terms.peak_cycles = work / (tiles * hardware.unit_peak_per_tile_cycle(op_class, dtype) *
                              hardware.software_factor(op_class));
  return terms;
}

OpPassCost cost_pass(const HardwareSpec& hardware, models::DType dtype, models::OpClass op_class,
                     const models::OpPass& pass, std::int64_t micro_batch) {
  OpPassCost cost;
  if (pass.compute_sets == 0)
    return cost;
  const auto& ops = hardware.operations;
  const OpClassCost& class_cost = ops.of(op_class);
  const double batch = double(micro_batch);
  const double work = pass.work * batch;
  cost.tiles = tiles_used(hardware, class_cost, work);
  const double tiles = double(cost.tiles);
  cost.overhead = double(pass.compute_sets) * ops.compute_set_cycles;
  cost.exchange = double(pass.compute_sets) * double(ops.exchange_cycles);
  if (ops.exchange_bytes_per_tile_cycle > 0)
    cost.exchange +=
        exchanged_bytes(dtype, pass, batch) / (ops.exchange_bytes_per_tile_cycle * tiles);
  const double rate = hardware.unit_peak_per_tile_cycle(op_class, dtype) *
                      hardware.software_factor(op_class) * class_cost.efficiency;
  cost.compute = work / (tiles * rate);
  const double total = cost.overhead + cost.exchange + cost.compute;
  if (!(total < 4611686018427387904.0))
    throw core::Overflow("simulated time");
  cost.cycles = std::int64_t(std::ceil(total - 1e-9));
  const bool memory_unit =
      op_class == models::OpClass::kGather || op_class == models::OpClass::kCopy;
  cost.bound = largest(cost, memory_unit);
  return cost;
}

std::int64_t code_bytes(const CodeMemory& code, const models::OpPass& pass,
                        const OpPassCost& cost) {
  return std::int64_t(pass.compute_sets) *
         (code.compute_set_bytes + cost.tiles * code.tile_compute_set_bytes);
}

}  // namespace ipusim::sim
