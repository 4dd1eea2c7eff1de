#pragma once
// The plans of the operations a run prices, each distinct shape planned once per process, so
// that plan, sweep and calibrate, which price the same shapes many times, stay fast.

#include <cstdint>

#include "models/layers/operations.hpp"
#include "sim/pricing/product_planner.hpp"
#include "sim/pricing/vector_lowering.hpp"

namespace ipusim::sim::pricing {

// The passes of a product of `geometry` (per sample) over a micro-batch of `micro_batch`: with
// weights the micro-batch adds output positions (poplin's batch), without them groups. A product
// run in slices is one slice's passes.
ProductPasses passes_of(const models::ProductGeometry& geometry, std::int64_t micro_batch);

// plan_product and plan_vector, remembered (thread-safe).
const ProductPlan& cached_plan(const TileTarget& target, const ProductShape& shape,
                               const PlanOptions& options);
const VectorPlan& cached_vector_plan(const TileTarget& target, VectorKind kind,
                                     const VectorShape& shape, models::DType dtype);

}  // namespace ipusim::sim::pricing
