// The pricing room against figures derived by hand from poplibs' estimators and the
// microbenchmark of ../shared/fidelity/README.md.

#include <catch2/catch.hpp>

#include "sim/pricing/amp_vertex.hpp"
#include "sim/pricing/product_planner.hpp"
#include "sim/pricing/reduce_vertex.hpp"
#include "sim/pricing/vector_lowering.hpp"
#include "sim/pricing/vector_vertex.hpp"

namespace {

using namespace ipusim::sim::pricing;
using ipusim::models::DType;

TEST_CASE("a tile's output positions go to its six workers in order, cut where a row ends") {
  CHECK(split_over_workers(96, 96, 6) == Worklists(6, Worklist{{16, 1}}));
  // Workers take [0,1) [1,3) [3,5) [5,6) [6,8) [8,10) of rows of 4.
  CHECK(split_over_workers(10, 4, 6) ==
        Worklists{{{1, 1}}, {{2, 1}}, {{1, 1}, {1, 1}}, {{1, 1}}, {{2, 1}}, {{2, 1}}});
  CHECK(split_over_workers(4, 4, 6) == Worklists{{}, {{1, 1}}, {{1, 1}}, {}, {{1, 1}}, {{1, 1}}});
  // A million rows a worker are one entry of a million, not a million entries.
  CHECK(split_over_workers(6'000'000, 1, 6) == Worklists(6, Worklist{{1, 1'000'000}}));
  // Rows of 5 over two workers: [0, 19) is rows 0-2 and the start of row 3; [19, 38) the end of
  // row 3, rows 4-6 and the start of row 7.
  CHECK(split_over_workers(38, 5, 2) == Worklists{{{5, 3}, {4, 1}}, {{1, 1}, {5, 3}, {3, 1}}});
}

TEST_CASE("the AMP 1x1 vertex costs 4 cycles a row of an N x 16 by 16 x 16 product plus 327") {
  // Each worker takes N/6 rows: 6 x (37 + (N/6 - 3) x 4 - 7) = 4N + 108, 14 more to tag the
  // fastest worker; the supervisor adds 50 + 6 x 7 + 13 + 11 + 18 + 7 + 64 weight loads = 205
  // (16 units x 32 bytes at the 8 bytes a cycle the planner charges without 128-bit loads).
  // The microbenchmark measured 4.00 N + 331 on all tiles, a sync included.
  const TileTarget target;
  for (const std::int64_t rows : {18, 96, 2046}) {
    VertexWork work;
    work.in_chans_per_group = 16;
    work.out_chans_per_group = 16;
    work.worklists = split_over_workers(rows, rows, 6);
    CHECK(amp_1x1_cycles(target, DType::kFp16, DType::kFp32, work) == 4 * rows + 327);
  }
}

TEST_CASE("a deep reduction is planned in stages as poplin plans it") {
  CHECK(reduce_stage_factors(8).empty());                             // below 16: one stage
  CHECK(reduce_stage_factors(16) == std::vector<std::int64_t>{4});    // 4 + 16/4 < 5 + 16/5
  CHECK(reduce_stage_factors(100) == std::vector<std::int64_t>{10});  // 10 + 10 < 11 + 100/11
  CHECK(reduce_compute_sets(1) == 0);
  CHECK(reduce_compute_sets(16) == 2);
}

TEST_CASE("a product with one row a tile brings only its weights, less the tile's own share") {
  // [1472, 16] x [16, 16]: one row on each tile; the inputs are already there, the 256 weights
  // come to every tile (256 - 256/1472 of them, 2 bytes each, 4 bytes a cycle), and the 16
  // outputs leave in half precision.
  const auto plan = plan_product(TileTarget{}, matmul_passes(1, 1472, 16, 16).forward, {});
  CHECK(plan.split.field == 1472);
  CHECK(plan.split.tiles() == 1472);
  CHECK(plan.input_exchange == 0);
  CHECK(plan.weight_exchange == 128);
  CHECK(plan.partial_exchange == 8);
  CHECK(plan.vertex == Vertex::kAmp1x1);
}

TEST_CASE("a matmul's gradients are the products poplin's fully connected passes run") {
  const auto passes = matmul_passes(3, 512, 1024, 4096);
  CHECK(passes.forward.groups == 3);
  CHECK(passes.forward.out_width == 512);
  CHECK(passes.forward.in_chans == 1024);
  CHECK(passes.forward.out_chans == 4096);
  CHECK(passes.input_gradient.in_chans == 4096);
  CHECK(passes.input_gradient.out_chans == 1024);
  CHECK(passes.weight_gradient.out_width == 1024);
  CHECK(passes.weight_gradient.in_chans == 512);
  CHECK(passes.weight_gradient.out_chans == 4096);
}

TEST_CASE("the available memory proportion bounds each tile's temporaries, at a price") {
  const auto shape = matmul_passes(1, 1024, 1024, 4096).forward;
  const TileTarget target;
  PlanOptions roomy;
  PlanOptions tight;
  tight.available_memory_proportion = 0.05;
  const auto wide = plan_product(target, shape, roomy);
  const auto narrow = plan_product(target, shape, tight);
  REQUIRE(narrow.fits);
  CHECK(double(narrow.temporary_bytes) <= 0.05 * double(target.tile_memory_bytes));
  CHECK(double(wide.temporary_bytes) > 0.05 * double(target.tile_memory_bytes));
  CHECK(narrow.cycles() > wide.cycles());
}

TEST_CASE("where no plan fits, the planner plans again within twice the proportion, as poplin") {
  const auto shape = matmul_passes(1, 1024, 1024, 4096).forward;
  const TileTarget target;
  PlanOptions starved;
  starved.available_memory_proportion = 0.001;
  const auto plan = plan_product(target, shape, starved);
  CHECK_FALSE(plan.fits);
  // The bound doubled until a plan fitted, and no plan fitted within half of it.
  REQUIRE(plan.bound_proportion > 0.001);
  PlanOptions half = starved;
  half.available_memory_proportion = plan.bound_proportion / 2;
  CHECK_FALSE(plan_product(target, shape, half).fits);
  PlanOptions bound = starved;
  bound.available_memory_proportion = plan.bound_proportion;
  const auto at_bound = plan_product(target, shape, bound);
  CHECK(at_bound.fits);
  CHECK(at_bound.cycles() == plan.cycles());
  CHECK(at_bound.split.tiles() == plan.split.tiles());
  CHECK(double(plan.temporary_bytes) <= plan.bound_proportion * double(target.tile_memory_bytes));
  // From a proportion of 1e-300 the doublings below the least temporaries any plan needs are
  // skipped, not searched (a thousand of them would be): the bound is the first doubling that
  // admits a plan.
  PlanOptions vanishing = starved;
  vanishing.available_memory_proportion = 1e-300;
  const auto far = plan_product(target, shape, vanishing);
  CHECK_FALSE(far.fits);
  CHECK(double(far.temporary_bytes) <= far.bound_proportion * double(target.tile_memory_bytes));
  PlanOptions below = vanishing;
  below.available_memory_proportion = far.bound_proportion / 2;
  CHECK_FALSE(plan_product(target, shape, below).fits);
}

TEST_CASE("a kernel's width expanded into channels takes the stride across the field with it") {
  // ResNet-50's first convolution: 7x7, stride 2, 3 channels, on 224 x 224. The copy gathers
  // each output column's 7 x 3 inputs, so the plan sees 21 channels, a 7x1 kernel, stride 2 down
  // the field and 1 across it.
  ProductShape stem;
  stem.batch = 4;
  stem.out_height = stem.out_width = 112;
  stem.kernel_height = stem.kernel_width = 7;
  stem.stride = stem.stride_width = 2;
  stem.in_chans = 3;
  stem.out_chans = 64;
  const auto plan = plan_product(TileTarget{}, stem, {});
  REQUIRE(plan.transform == Transform::kExpandKernelWidth);
  CHECK(plan.planned.in_chans == 21);
  CHECK(plan.planned.kernel_width == 1);
  CHECK(plan.planned.stride == 2);
  CHECK(plan.planned.stride_width == 1);
}

TEST_CASE("a half-precision add runs 3 cycles a vector of 4 on each of six workers") {
  // BinaryOp1D: 26 worker cycles, 2400 elements = 400 a worker = 100 vectors; supervisor 11.
  CHECK(vector_vertex_cycles(TileTarget{}, VectorOp::kAdd, DType::kFp16, 2400) ==
        6 * (26 + 3 * 100) + 11);
}

TEST_CASE("a layer norm lowers to seven compute sets forward, more where rows span tiles") {
  const TileTarget target;
  // 2048 rows of 64: each row on one tile, no second stage.
  const auto whole_rows = plan_vector(target, VectorKind::kLayerNorm, {2048, 64}, DType::kFp16);
  CHECK(whole_rows.forward.size() == 7);
  // 8 rows of 1024 spread over 128 tiles: both sums take a second stage.
  const auto spread = plan_vector(target, VectorKind::kLayerNorm, {8, 1024}, DType::kFp16);
  CHECK(spread.forward.size() == 9);
  CHECK(spread.forward[1].name == "sum of x (second stage)");
  CHECK(spread.forward[1].exchange_cycles > 0);
}

TEST_CASE("PyTorch's swish is two operations forward and four backward") {
  const auto plan = plan_vector(TileTarget{}, VectorKind::kSwish, {1024, 1024}, DType::kFp16);
  CHECK(plan.forward.size() == 2);
  CHECK(plan.backward.size() == 4);
}

}  // namespace
