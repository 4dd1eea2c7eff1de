#pragma once
// The horizontal-MAC convolution vertex, poplin's choice where the AMP does not pay: few channels
// a group, or inputs the conv units cannot take (graphcore/poplibs @7eac0f26
// lib/poplin/PerformanceEstimation.hpp, getConvPartialHorizontalMacSupervisorCycleEstimate).

#include <cstdint>

#include "models/layers/dtype.hpp"
#include "sim/pricing/tile_target.hpp"
#include "sim/pricing/vertex_work.hpp"

namespace ipusim::sim::pricing {

std::int64_t hmac_cycles(const TileTarget& target, models::DType input, models::DType partials,
                         const VertexWork& work);

}  // namespace ipusim::sim::pricing
