#pragma once
// The reduction of a product's partial sums across the tiles that split its input channels, as
// poplin plans and charges it (graphcore/poplibs @7eac0f26 lib/poplin/ConvReducePlan.cpp,
// getMultiStageReducePlan; lib/poplin/PerformanceEstimation.hpp, estimateConvReduceCycles,
// getReduceCycleEstimate and estimateCastCycles).

#include <cstdint>
#include <vector>

#include "models/layers/dtype.hpp"
#include "sim/pricing/tile_target.hpp"

namespace ipusim::sim::pricing {

// The factors by which each stage but the last divides a reduction `depth` deep: one stage
// below 16 partials, two below 125, three from there (enableMultiStageReduce, the default).
std::vector<std::int64_t> reduce_stage_factors(std::int64_t depth);

// The cycles of the reduce vertices on one tile that ends with `outputs` results from `depth`
// partials each; at depth 1 only the cast from the partials' type, if it differs.
std::int64_t conv_reduce_cycles(const TileTarget& target, std::int64_t outputs, std::int64_t depth,
                                models::DType output, models::DType partials);

// The exchange cycles of the reduction's stages after the first: each brings a stage's partial
// results to the tiles of the next.
std::int64_t reduce_later_exchange_cycles(const TileTarget& target, std::int64_t partials,
                                          std::int64_t depth, models::DType partials_type);

// The compute sets the reduction adds: one per stage.
int reduce_compute_sets(std::int64_t depth);

}  // namespace ipusim::sim::pricing
