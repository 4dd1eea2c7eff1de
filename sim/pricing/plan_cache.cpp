#include "sim/pricing/plan_cache.hpp"

#include <array>
#include <cmath>
#include <map>
#include <mutex>

namespace ipusim::sim::pricing {
namespace {

using Key = std::array<std::int64_t, 16>;

Key target_key(const TileTarget& target) {
  Key key{};
  key[0] = target.tiles;
  key[1] = target.tile_memory_bytes;
  return key;
}

std::mutex& cache_mutex() {
  static std::mutex mutex;
  return mutex;
}

// The plan under `key`, made by `make` the first time. Planning runs outside the lock: two
// threads may plan the same shape at once, and the first to store it wins (the same plan).
template <class Plan, class Make>
const Plan& remembered(std::map<Key, Plan>& plans, const Key& key, Make make) {
  {
    const std::lock_guard lock(cache_mutex());
    if (const auto it = plans.find(key); it != plans.end())
      return it->second;
  }
  Plan plan = make();
  const std::lock_guard lock(cache_mutex());
  return plans.emplace(key, std::move(plan)).first->second;
}

}  // namespace

ProductPasses passes_of(const models::ProductGeometry& g, std::int64_t micro_batch) {
  const bool matmul =
      g.kernel_height == 1 && g.kernel_width == 1 && g.stride == 1 && g.out_height == 1;
  const std::int64_t groups = g.weights ? g.groups : g.groups * micro_batch;
  const std::int64_t batch = g.weights ? micro_batch : 1;
  if (matmul)
    return matmul_passes(groups, g.out_width * batch, g.in_chans, g.out_chans / g.slices);
  ProductShape shape;
  shape.groups = groups;
  shape.batch = batch;
  shape.out_height = g.out_height;
  shape.out_width = g.out_width;
  shape.kernel_height = g.kernel_height;
  shape.kernel_width = g.kernel_width;
  // A 1-D convolution (one row in and out) strides across its field only.
  shape.stride = g.in_height == 1 && g.out_height == 1 ? 1 : g.stride;
  shape.stride_width = g.stride;
  shape.in_chans = g.in_chans;
  shape.out_chans = g.out_chans;
  return conv_passes(shape, g.in_height, g.in_width);
}

const ProductPlan& cached_plan(const TileTarget& target, const ProductShape& shape,
                               const PlanOptions& options) {
  static std::map<Key, ProductPlan> plans;
  Key key = target_key(target);
  const std::array<std::int64_t, 13> fields = {
      shape.groups,
      shape.batch,
      shape.out_height,
      shape.out_width,
      shape.kernel_height,
      shape.kernel_width,
      shape.stride,
      shape.stride_width,
      shape.in_chans,
      shape.out_chans,
      std::int64_t(options.input),
      std::int64_t(options.partials),
      std::llround(options.available_memory_proportion * 1e6)};
  std::copy(fields.begin(), fields.end(), key.begin() + 2);
  return remembered(plans, key, [&] { return plan_product(target, shape, options); });
}

const VectorPlan& cached_vector_plan(const TileTarget& target, VectorKind kind,
                                     const VectorShape& shape, models::DType dtype) {
  static std::map<Key, VectorPlan> plans;
  Key key = target_key(target);
  key[2] = std::int64_t(kind);
  key[3] = shape.rows;
  key[4] = shape.width;
  key[5] = std::int64_t(dtype);
  return remembered(plans, key, [&] { return plan_vector(target, kind, shape, dtype); });
}

}  // namespace ipusim::sim::pricing
