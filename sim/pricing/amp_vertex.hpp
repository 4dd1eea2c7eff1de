#pragma once
// The AMP convolution vertices and their cycle estimates, as poplin's planner charges them:
// ConvPartial1x1Out for a 1x1 kernel at unit stride and ConvPartialnx1 otherwise
// (graphcore/poplibs @7eac0f26 lib/poplin/PerformanceEstimation.hpp,
// getConvPartial1x1SupervisorCycleEstimate and getConvPartialnx1SupervisorCycleEstimate).
// Half or float inputs with float or half partials; quarter is not modelled.

#include <cstdint>

#include "models/layers/dtype.hpp"
#include "sim/pricing/tile_target.hpp"
#include "sim/pricing/vertex_work.hpp"

namespace ipusim::sim::pricing {

std::int64_t amp_1x1_cycles(const TileTarget& target, models::DType input, models::DType partials,
                            const VertexWork& work);

std::int64_t amp_nx1_cycles(const TileTarget& target, models::DType input, models::DType partials,
                            const VertexWork& work);

}  // namespace ipusim::sim::pricing
