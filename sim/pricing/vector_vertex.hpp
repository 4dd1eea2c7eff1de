#pragma once
// The vector vertices of popops, popnn and poprand and their cycle estimates on one tile: a
// supervisor vertex whose six workers each take a sixth of the tile's elements (graphcore/poplibs
// @7eac0f26 lib/popops/popopsCycleEstimators.cpp, BinaryOp1D and UnaryOp1D; the rates of
// popopsCycleEstimators.hpp's unaryOpPerfInfo and binaryOpPerfInfo tables).

#include <cstdint>
#include <string_view>

#include "models/layers/dtype.hpp"
#include "sim/pricing/tile_target.hpp"

namespace ipusim::sim::pricing {

enum class VectorOp {
  kAdd,      // add, subtract, multiply, scaled add: binaryOpPerfInfo {1, natural width}
  kExp,      // unaryOpPerfInfo EXPONENT half {4, unroll 4}
  kTanh,     // TANH half {4, unroll 4}
  kSigmoid,  // SIGMOID half {6, unroll 4}
  kRelu,     // RELU half {3, unroll 4}
  kSquare,   // SQUARE half {2, unroll 4}
  kRsqrt,    // RSQRT half {19, unroll 4}
  kDivide,   // DIVIDE half {21, unroll 4}
  kGelu,     // popnn's tanh GELU: a guess of tanh and four multiply-adds, {8, unroll 4}
  kReduce,   // an on-tile reduction (getReduceCycleEstimate, single input, float partials)
  kRandom,   // poprand's dropout mask: a guess of one cycle per element, {4, unroll 4}
  kCopy,     // a copy: 8 bytes a cycle (a guess: a 64-bit load and store)
};

std::string_view to_string(VectorOp op);

// The cycles of one vertex of `op` over `elements` elements of `dtype` on one tile.
std::int64_t vector_vertex_cycles(const TileTarget& target, VectorOp op, models::DType dtype,
                                  std::int64_t elements);

}  // namespace ipusim::sim::pricing
