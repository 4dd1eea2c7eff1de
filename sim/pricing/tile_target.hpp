#pragma once
// What the pricing room knows of a tile: the figures poplar::Target gives poplibs' planners and
// cycle estimators on a Mk2 IPU (GC200 and Bow share the tile, ../shared/spec/ipu-hardware.md
// §1). Each figure names its source; [D] marks one derived by us from the cited code.

#include <cstdint>

#include "models/layers/dtype.hpp"
#include "sim/spec/hardware.hpp"

namespace ipusim::sim::pricing {

struct TileTarget {
  std::int64_t tiles = 1472;
  std::int64_t tile_memory_bytes = 638976;  // ipu-hardware.md §1: 624 KB
  int workers = 6;                          // ipu-hardware.md §1: 6 worker threads a tile
  // poplin ConvVertexType.cpp, getConvVertexAMPCandidates: IPU2 runs 16 conv units for half
  // and float inputs; a unit chains 4 weights deep (convUnitMaxPipelineDepth) and loads 4 half
  // or 2 float inputs a cycle, so it takes 16 half or 8 float input channels.
  int conv_units = 16;
  int conv_chain = 4;
  // poplin PerformanceEstimation.hpp, getConvPartialAmpSupervisorWeightLoadCycleEstimate: ld128
  // loads 16 bytes of coefficients a cycle; poplin's planner charges half of that unless its
  // option use128BitConvUnitLoad is set, off by default (ConvModel.cpp, ConvOptions.hpp).
  int coefficient_load_bytes_per_cycle = 16;
  bool use_128bit_conv_unit_load = false;
  int data_path_bits = 64;           // ipu-hardware.md §1: 64-bit vector datapath
  int exchange_bytes_per_cycle = 4;  // ipu-hardware.md §1: getExchangeBytesPerCycle() = 4
  int tiles_per_exchange_bus = 2;    // poplin ExchangeEstimator.hpp: bus sharing of 2 tiles
  int sync_cycles = 90;              // popnn CTCLossPlan.cpp: the sync before an exchange
  int exchange_fixed_cycles = 100;   // CTCLossPlan.cpp: fixedOverheadExchangeCycles

  // Input channels a conv unit takes (poplin's weightsPerConvUnit).
  int amp_input_channels(models::DType dtype) const {
    return conv_chain * (dtype == models::DType::kFp32 ? 2 : 4);
  }
  // Elements of `dtype` in one load of the datapath (poplar's getVectorWidth).
  int vector_width(models::DType dtype) const {
    return data_path_bits / int(8 * models::dtype_bytes(dtype));
  }
};

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

inline bool is_float(models::DType dtype) {
  return dtype == models::DType::kFp32;
}

// The target of `hardware`: its tiles and its memory per tile, the rest as above.
TileTarget tile_target(const HardwareSpec& hardware);

}  // namespace ipusim::sim::pricing
