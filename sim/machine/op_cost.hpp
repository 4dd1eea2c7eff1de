#pragma once
// The cycles of one pass of one operation on one IPU, per micro-batch:
//
//   tiles    = min(tiles of the IPU, ceil(work / min_work_per_tile)), at least 1
//   overhead = compute sets x compute_set_cycles
//   exchange = compute sets x exchange_cycles
//              + exchanged bytes / (exchange_bytes_per_tile_cycle x tiles)
//   compute  = work / (tiles x unit peak per tile-cycle x efficiency of the class
//                      x amp_efficiency_before_sdk_2_5 for matmul and conv compiled by an SDK
//                      before 2.5)
//   cycles   = ceil(overhead + exchange + compute)
//
// The unit is the AMP for matmul and conv (FLOPs), the vector unit for elementwise, non-linear
// and reduction work (elements), tile memory for gathers and copies (elements at the memory
// bandwidth). What bounds the pass is the largest of the three terms.
//
// At a fixed tile count the sum before the ceiling is linear in compute_set_cycles, in
// 1 / exchange_bytes_per_tile_cycle and in 1 / efficiency: pass_terms gives the coefficients,
// which sim/calibrate fits to measured cycles.

#include <cstdint>
#include <string_view>

#include "models/layers/operations.hpp"
#include "sim/spec/hardware.hpp"

namespace ipusim::sim {

enum class OpBound { kCompute, kMemory, kExchange, kOverhead };

std::string_view to_string(OpBound bound);  // "compute", "memory", "exchange", "overhead"

struct OpPassCost {
  std::int64_t tiles = 0;
  double overhead = 0;  // cycles
  double exchange = 0;
  double compute = 0;
  std::int64_t cycles = 0;
  OpBound bound = OpBound::kOverhead;
};

// The parts of a pass's cycles that no calibratable rate changes: before the ceiling,
//   cycles = compute_sets x (compute_set_cycles + exchange_cycles)
//            + bytes_per_tile / exchange_bytes_per_tile_cycle + peak_cycles / efficiency
// (without the bytes term when the exchange is free). Zero for a pass without compute sets.
struct OpPassTerms {
  std::int64_t tiles = 0;
  double compute_sets = 0;
  double bytes_per_tile = 0;  // bytes each tile that computes receives
  double peak_cycles = 0;     // the work at the unit's peak on those tiles
};

OpPassTerms pass_terms(const HardwareSpec& hardware, models::DType dtype, models::OpClass op_class,
                       const models::OpPass& pass, std::int64_t micro_batch);

// One pass of `op` over a micro-batch of `micro_batch` samples computing in `dtype`.
OpPassCost cost_pass(const HardwareSpec& hardware, models::DType dtype, models::OpClass op_class,
                     const models::OpPass& pass, std::int64_t micro_batch);

// Code and vertex state for the compute sets of `cost` (a pass of that many compute sets).
std::int64_t code_bytes(const CodeMemory& code, const models::OpPass& pass, const OpPassCost& cost);

}  // namespace ipusim::sim
