#pragma once
// The weight update's work per IPU as operations the cost model prices: the optimizer's
// elementwise passes and, for LAMB and LARS, the trust ratio's norm reductions.

#include <vector>

#include "models/kernels/optimizer.hpp"
#include "models/layers/operations.hpp"

namespace ipusim::sim {

// The operations that update `params` parameters with the optimizer `kind`.
std::vector<models::Operation> weight_update_operations(models::OptimizerConfig::Kind kind,
                                                        double params);

}  // namespace ipusim::sim
