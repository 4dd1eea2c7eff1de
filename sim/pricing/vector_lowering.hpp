#pragma once
// Vector operations lowered into the compute sets poplibs emits for them, each priced as a sync,
// the exchange it needs, and its vertex on the busiest tile (vector_vertex.hpp). A reduction
// whose rows span tiles takes a second stage, with the partials exchanged to the tiles that
// finish it.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/layers/dtype.hpp"
#include "models/layers/operations.hpp"
#include "sim/pricing/tile_target.hpp"
#include "sim/pricing/vector_vertex.hpp"

namespace ipusim::sim::pricing {

// The kinds of models/layers/operations.hpp, each a row of vector_lowering.cpp's table.
using VectorKind = models::VectorLowering;

std::string_view to_string(VectorKind kind);  // "layer_norm", ...
// The kind named `name`, or false.
bool vector_kind_named(std::string_view name, VectorKind& kind);
const std::vector<std::string>& vector_kind_names();

// A tensor of `rows` x `width` elements; norms and softmax reduce along `width`.
struct VectorShape {
  std::int64_t rows = 1;
  std::int64_t width = 1;
};

struct PricedComputeSet {
  std::string name;
  VectorOp op = VectorOp::kAdd;
  std::int64_t elements = 0;  // over all tiles
  std::int64_t tiles = 0;
  std::int64_t exchange_cycles = 0;
  std::int64_t vertex_cycles = 0;  // on the busiest tile
  std::int64_t cycles = 0;         // sync + exchange + vertex
};

struct VectorPlan {
  std::vector<PricedComputeSet> forward;
  std::vector<PricedComputeSet> backward;
};

std::int64_t total_cycles(const std::vector<PricedComputeSet>& sets);

VectorPlan plan_vector(const TileTarget& target, VectorKind kind, const VectorShape& shape,
                       models::DType dtype);

}  // namespace ipusim::sim::pricing
