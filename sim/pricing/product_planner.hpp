#pragma once
// How poplin plans a matrix product or a convolution on one IPU, and what its plan costs
// (graphcore/poplibs @7eac0f26 lib/poplin/ConvPlan.cpp and ConvModel.cpp). A pass is canonical
// convolution parameters; the planner searches how to split its conv groups, output field,
// input channels and output channels over the tiles, which vertex runs each tile's share and
// which transform prepares it, within the temporary memory `available_memory_proportion` of a
// tile allows, and keeps the plan of fewest cycles.
//
// The cycles are the planner's own estimate: the exchange of inputs, weights and partials, the
// vertex, the reduction of partials across tiles and the transform copies. The syncs between
// its compute sets are not in it (compute_sets counts them for the caller).

#include <cstdint>
#include <string>

#include "models/layers/dtype.hpp"
#include "sim/pricing/tile_target.hpp"
#include "sim/pricing/vertex_work.hpp"

namespace ipusim::sim::pricing {

// poplin's ConvParams of one pass, per micro-batch.
struct ProductShape {
  std::int64_t groups = 1;
  std::int64_t batch = 1;
  std::int64_t out_height = 1;
  std::int64_t out_width = 1;
  std::int64_t kernel_height = 1;
  std::int64_t kernel_width = 1;
  std::int64_t stride = 1;        // down the field's height
  std::int64_t stride_width = 1;  // across it: 1 once the kernel's width is expanded into channels
  std::int64_t in_chans = 1;      // per group
  std::int64_t out_chans = 1;     // per group

  bool operator==(const ProductShape&) const = default;
};

struct PlanOptions {
  models::DType input = models::DType::kFp16;
  models::DType partials = models::DType::kFp32;
  // poplin's availableMemoryProportion: the share of a tile's memory the plan's temporaries may
  // take (default 0.6, poplin ConvOptions.hpp).
  double available_memory_proportion = 0.6;

  bool operator==(const PlanOptions&) const = default;
};

enum class Vertex { kAmp1x1, kAmpNx1, kHorizontalMac };
std::string_view to_string(Vertex vertex);  // "AMP 1x1", "AMP nx1", "HMAC"

enum class Transform { kNone, kCombineGroups, kExpandKernelWidth };

struct Partition {
  std::int64_t groups = 1;  // ways each dimension is split over tiles
  std::int64_t field = 1;
  std::int64_t in_chans = 1;
  std::int64_t out_chans = 1;
  std::int64_t tiles() const { return groups * field * in_chans * out_chans; }
};

// What a plan costs, all serial passes together; `serial` passes over slices of the output
// channels (poplin's outChanSplit.serial) each hold a slice's temporaries.

struct ProductPlan {
  Vertex vertex = Vertex::kAmp1x1;
  Transform transform = Transform::kNone;
  std::int64_t combined_groups = 1;  // conv groups combined into one (kCombineGroups)
  ProductShape planned;              // the shape after the transform
  Partition split;
  std::int64_t serial = 1;  // passes over slices of the output channels, one at a time
  VertexWork work;          // the busiest tile's share
  std::int64_t positions_per_tile = 0;
  std::int64_t input_exchange = 0;  // cycles
  std::int64_t weight_exchange = 0;
  std::int64_t partial_exchange = 0;
  std::int64_t vertex_cycles = 0;
  std::int64_t reduce_cycles = 0;
  std::int64_t transform_cycles = 0;
  int compute_sets = 0;
  std::int64_t temporary_bytes = 0;  // on the busiest tile
  bool fits = true;                  // within available_memory_proportion
  // The share of a tile the plan was made within: available_memory_proportion, doubled while no
  // plan fitted.
  double bound_proportion = 0;
  double macs = 0;  // multiply-adds of the pass as given

  // The parts above are one serial pass's; the transform is made once.
  std::int64_t cycles() const {
    return serial * (input_exchange + weight_exchange + partial_exchange + vertex_cycles +
                     reduce_cycles) +
           transform_cycles;
  }
};

ProductPlan plan_product(const TileTarget& target, const ProductShape& shape,
                         const PlanOptions& options);

// The three passes of a product: forward, input gradient, weight gradient. A matmul of
// [rows, inner] x [inner, cols], `count` of them, maps to a 1x1 convolution over `rows`
// positions, as poplin's matMul does; its gradients are the products poplin's fully connected
// passes run (rows x cols x inner, and inner x rows x cols).
struct ProductPasses {
  ProductShape forward;
  ProductShape input_gradient;
  ProductShape weight_gradient;
};
ProductPasses matmul_passes(std::int64_t count, std::int64_t rows, std::int64_t inner,
                            std::int64_t cols);
// A convolution's: the input gradient a convolution of the output gradient over the input's
// field (over the output's when strided: the same multiply-adds), the weight gradient a product
// contracting batch and output field [D].
ProductPasses conv_passes(const ProductShape& forward, std::int64_t in_height,
                          std::int64_t in_width);

}  // namespace ipusim::sim::pricing
