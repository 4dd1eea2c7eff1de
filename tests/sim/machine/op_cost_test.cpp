#include "sim/machine/op_cost.hpp"

#include <catch2/catch.hpp>
#include <cmath>

#include "sim/core/config_file.hpp"
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/machine/planned_cost.hpp"
#include "sim/pricing/plan_cache.hpp"

using namespace ipusim;
using models::DType;
using models::OpClass;
using models::OpPass;

namespace {

sim::HardwareSpec hardware(const nlohmann::json& section) {
  const auto document = core::ConfigDocument::from_json({{"hardware", section}}, "hw.json");
  std::string note;
  return sim::parse_hardware(*document.root().find("hardware"), 1, &note);
}

// The dense256 product of the TF1 tutorial per sample: [1, 784] x [784, 256].
const OpPass kDense256{2.0 * 784 * 256, 784, 784.0 * 256, 1};

// A dense layer's matmul, 128 rows a sample of [128, 768] x [768, 3072].
models::Operation dense_matmul() {
  models::Operation op{"matmul", OpClass::kMatmul, {}, {}};
  models::ProductGeometry geometry;
  geometry.out_width = geometry.in_width = 128;
  geometry.in_chans = 768;
  geometry.out_chans = 3072;
  op.product = geometry;
  return op;
}

}  // namespace

TEST_CASE("a matmul pays a compute set, its exchange and its FLOPs on the tiles it fills") {
  const auto gc200 = hardware({{"preset", "gc200"}});
  const auto cost = sim::cost_pass(gc200, DType::kFp32, OpClass::kMatmul, kDense256, 32);
  // 12,845,056 FLOPs at 24,576 a tile want 523 tiles. The AMP does 62.5 TFLOP/s over 1,472
  // tiles at 1.33 GHz, 31.92 FLOP a tile-cycle, of which the class reaches 39.53% (fitted).
  const double work = 2.0 * 32 * 784 * 256;
  CHECK(cost.tiles == 523);
  const double per_tile_cycle = 62.5e12 / (1472 * 1.33e9) * 0.3953;
  const double exchange = 100 + (32.0 * 784 + 784.0 * 256) * 4 / (4 * 523);
  const double compute = work / (523 * per_tile_cycle);
  CHECK(cost.overhead == 240);
  CHECK(cost.exchange == Approx(exchange).epsilon(1e-12));
  CHECK(cost.compute == Approx(compute).epsilon(1e-12));
  CHECK(cost.cycles == std::int64_t(std::ceil(240 + exchange + compute)));
  CHECK(cost.cycles == 2718);  // 240 + 531.7 + 1,946.2, rounded up
  CHECK(cost.bound == sim::OpBound::kCompute);
}

TEST_CASE("a tiny operation runs on one tile and is bound by the compute set's overhead") {
  const auto gc200 = hardware({{"preset", "gc200"}});
  const OpPass ten{10, 10, 0, 1};
  const auto cost = sim::cost_pass(gc200, DType::kFp32, OpClass::kElementwise, ten, 1);
  CHECK(cost.tiles == 1);
  // 10 elements at a third of 2 a cycle; 100 + 40 bytes / 4 exchanged; 240 of overhead.
  CHECK(cost.compute == Approx(15));
  CHECK(cost.exchange == Approx(110));
  CHECK(cost.cycles == 365);
  CHECK(cost.bound == sim::OpBound::kOverhead);
}

TEST_CASE("a pass without compute sets costs nothing") {
  const auto gc200 = hardware({{"preset", "gc200"}});
  const auto cost = sim::cost_pass(gc200, DType::kFp16, OpClass::kElementwise, {}, 8);
  CHECK(cost.cycles == 0);
  CHECK(cost.tiles == 0);
}

TEST_CASE("the ideal preset spreads every operation over all tiles with no fixed costs") {
  const auto ideal = hardware({{"preset", "ideal"}});
  const auto cost = sim::cost_pass(ideal, DType::kFp32, OpClass::kMatmul, kDense256, 32);
  CHECK(cost.tiles == 1472);
  CHECK(cost.overhead == 0);
  CHECK(cost.exchange == 0);
  // The FLOPs at 39.53% of 62.5 TFLOP/s: 12,845,056 / (24.706e12 / 1.33e9) = 691.5 cycles.
  CHECK(cost.cycles == 692);
}

TEST_CASE("gathers and copies move elements at the tile memory's bandwidth") {
  const auto gc200 =
      hardware({{"preset", "gc200"}, {"operations", {{"gather", {{"efficiency", 1}}}}}});
  const OpPass rows{1472 * 65536.0, 0, 0, 1};
  const auto cost = sim::cost_pass(gc200, DType::kFp16, OpClass::kGather, rows, 1);
  // 65,536 fp16 elements a tile at 47.5 TB/s / (1,472 x 1.33 GHz) = 24.26 bytes a tile-cycle.
  CHECK(cost.tiles == 1472);
  CHECK(cost.compute == Approx(65536 * 2 / (47.5e12 / (1472 * 1.33e9))));
  CHECK(cost.bound == sim::OpBound::kMemory);
}

TEST_CASE("each operation class's efficiency and minimum work per tile can be overridden") {
  const auto tuned = hardware(
      {{"preset", "gc200"},
       {"operations",
        {{"compute_set_cycles", 0},
         {"exchange_cycles", 0},
         {"matmul", {{"efficiency", 0.35}, {"min_work_per_tile", 2.0 * 32 * 784 * 256}}}}}});
  const auto cost = sim::cost_pass(tuned, DType::kFp32, OpClass::kMatmul, kDense256, 32);
  CHECK(cost.tiles == 1);
  CHECK(cost.overhead == 0);
  CHECK(cost.compute == Approx(2.0 * 32 * 784 * 256 / (62.5e12 / (1472 * 1.33e9) * 0.35)));
}

TEST_CASE("an SDK before 2.5 takes its share of the AMP classes' efficiency, and no other's") {
  const nlohmann::json older = {{"preset", "gc200"},
                                {"sdk", "2.3"},
                                {"operations", {{"amp_efficiency_before_sdk_2_5", 0.5}}}};
  auto newer = older;
  newer["sdk"] = "2.5";
  const OpPass add{1e6, 1e6, 0, 1};
  for (const auto op_class : {OpClass::kMatmul, OpClass::kConv}) {
    const auto slow = sim::cost_pass(hardware(older), DType::kFp16, op_class, kDense256, 32);
    const auto fast = sim::cost_pass(hardware(newer), DType::kFp16, op_class, kDense256, 32);
    CHECK(slow.compute == Approx(2 * fast.compute).epsilon(1e-12));
    CHECK(slow.exchange == fast.exchange);
  }
  CHECK(sim::cost_pass(hardware(older), DType::kFp16, OpClass::kElementwise, add, 1).cycles ==
        sim::cost_pass(hardware(newer), DType::kFp16, OpClass::kElementwise, add, 1).cycles);
  CHECK_THROWS_WITH(hardware({{"preset", "gc200"}, {"sdk", "2.7"}}),
                    "hw.json: at /hardware/sdk: unknown value '2.7'; did you mean '2.0'?");
  CHECK_THROWS_WITH(
      hardware({{"preset", "gc200"}, {"operations", {{"amp_efficiency_before_sdk_2_5", 0}}}}),
      "hw.json: at /hardware/operations/amp_efficiency_before_sdk_2_5: expected a number in (0, "
      "1], found 0");
}

TEST_CASE("keys of the old roofline say where their meaning went") {
  CHECK_THROWS_WITH(hardware({{"preset", "gc200"}, {"efficiency", 0.5}}),
                    "hw.json: at /hardware/efficiency: the achieved share of peak is now set per "
                    "operation class: use hardware.operations.<class>.efficiency, with <class> one "
                    "of matmul, conv, elementwise, non_linear, reduction, gather, copy");
  CHECK_THROWS_WITH(hardware({{"preset", "gc200"}, {"always_live_memory", "100MB"}}),
                    "hw.json: at /hardware/always_live_memory: code memory now grows with the "
                    "operations on each IPU: use hardware.code_memory.control for the fixed part "
                    "per IPU");
  CHECK_THROWS_WITH(hardware({{"preset", "gc200"}, {"operations", {{"matmull", {}}}}}),
                    Catch::Contains("did you mean 'matmul'"));
  CHECK_THROWS_WITH(
      hardware({{"preset", "gc200"}, {"operations", {{"matmul", {{"efficiency", 1.5}}}}}}),
      "hw.json: at /hardware/operations/matmul/efficiency: expected a number in (0, 1], found "
      "1.5");
}

TEST_CASE("code memory counts every compute set and the tiles it uses") {
  const sim::CodeMemory code{0, 1000, 10};
  sim::OpPassCost cost;
  cost.tiles = 523;
  CHECK(sim::code_bytes(code, {1, 1, 0, 2}, cost) == 2 * (1000 + 523 * 10));
  CHECK(sim::code_bytes(code, {}, cost) == 0);
}

TEST_CASE("a pass's terms, divided by the rates, are its cycles before the ceiling") {
  const auto gc200 = hardware({{"preset", "gc200"}});
  const auto cost = sim::cost_pass(gc200, DType::kFp32, OpClass::kMatmul, kDense256, 32);
  const auto terms = sim::pass_terms(gc200, DType::kFp32, OpClass::kMatmul, kDense256, 32);
  CHECK(terms.tiles == 523);
  CHECK(terms.compute_sets == 1);
  CHECK(terms.bytes_per_tile == Approx((32.0 * 784 + 784.0 * 256) * 4 / 523).epsilon(1e-12));
  const auto& ops = gc200.operations;
  CHECK(terms.compute_sets * (ops.compute_set_cycles + double(ops.exchange_cycles)) +
            terms.bytes_per_tile / ops.exchange_bytes_per_tile_cycle +
            terms.peak_cycles / ops.of(OpClass::kMatmul).efficiency ==
        Approx(cost.overhead + cost.exchange + cost.compute).epsilon(1e-12));
  CHECK(sim::pass_terms(gc200, DType::kFp32, OpClass::kMatmul, {}, 32).tiles == 0);
}

TEST_CASE("compute_set_cycles takes a fractional average and refuses negative cycles") {
  const auto fitted =
      hardware({{"preset", "gc200"}, {"operations", {{"compute_set_cycles", 172.5}}}});
  CHECK(fitted.operations.compute_set_cycles == 172.5);
  CHECK_THROWS_WITH(
      hardware({{"preset", "gc200"}, {"operations", {{"compute_set_cycles", -1}}}}),
      "hw.json: at /hardware/operations/compute_set_cycles: expected a number of cycles from 0 "
      "to 1099511627776, found -1");
}

TEST_CASE("planned pricing costs a product its three plans and a sync for each compute set") {
  const auto bow =
      hardware({{"preset", "bow"}, {"operations", {{"pricing", "planned"}, {"plan_scale", 1}}}});
  // At a micro-batch of 4 poplin plans 512 rows.
  const auto op = dense_matmul();
  const auto cost = sim::planned_cost(bow, DType::kFp16, op, 4);
  REQUIRE(cost);
  const auto target = sim::pricing::tile_target(bow);
  const auto passes = sim::pricing::matmul_passes(1, 512, 768, 3072);
  const auto forward = sim::pricing::plan_product(target, passes.forward, {});
  const auto input = sim::pricing::plan_product(target, passes.input_gradient, {});
  const auto weight = sim::pricing::plan_product(target, passes.weight_gradient, {});
  CHECK(cost->forward.cycles == forward.cycles() + 90 * forward.compute_sets);
  CHECK(cost->backward.cycles ==
        input.cycles() + weight.cycles() + 90 * (input.compute_sets + weight.compute_sets));
  CHECK(cost->weight_gradient_cycles == weight.cycles() + 90 * weight.compute_sets);
}

TEST_CASE("planned pricing plans with the run's partials, and skips the gradient of the data") {
  const auto bow =
      hardware({{"preset", "bow"}, {"operations", {{"pricing", "planned"}, {"plan_scale", 1}}}});
  // A 3x3 convolution of 64 to 64 channels on 56 x 56, the first layer of its model.
  models::Operation op{"conv", OpClass::kConv, {}, {}};
  models::ProductGeometry geometry;
  geometry.out_height = geometry.out_width = geometry.in_height = geometry.in_width = 56;
  geometry.kernel_height = geometry.kernel_width = 3;
  geometry.in_chans = geometry.out_chans = 64;
  op.product = geometry;
  sim::PlanSettings half;
  half.partials = DType::kFp16;
  half.input_gradient = false;
  const auto cost = sim::planned_cost(bow, DType::kFp16, op, 2, half);
  REQUIRE(cost);
  const auto target = sim::pricing::tile_target(bow);
  const auto passes = sim::pricing::passes_of(geometry, 2);
  sim::pricing::PlanOptions options;
  options.partials = DType::kFp16;
  const auto forward = sim::pricing::plan_product(target, passes.forward, options);
  const auto weight = sim::pricing::plan_product(target, passes.weight_gradient, options);
  CHECK(cost->forward.cycles == forward.cycles() + 90 * forward.compute_sets);
  // No input gradient: the backward is the weight gradient's plan alone.
  CHECK(cost->backward.cycles == weight.cycles() + 90 * weight.compute_sets);
  CHECK(cost->weight_gradient_cycles == cost->backward.cycles);
  const auto fp32 = sim::pricing::plan_product(target, passes.forward, {});
  CHECK(fp32.cycles() != forward.cycles());
}

TEST_CASE("the bow preset scales a plan's cycles by the fitted 1.25, its syncs not") {
  const auto bow = hardware({{"preset", "bow"}, {"operations", {{"pricing", "planned"}}}});
  const auto op = dense_matmul();
  const auto cost = sim::planned_cost(bow, DType::kFp16, op, 4);
  REQUIRE(cost);
  const auto forward = sim::pricing::plan_product(
      sim::pricing::tile_target(bow), sim::pricing::matmul_passes(1, 512, 768, 3072).forward, {});
  CHECK(cost->forward.cycles ==
        std::int64_t(std::ceil(90.0 * forward.compute_sets + 1.25 * double(forward.cycles()))));
}

TEST_CASE("a plan over the memory proportion says the bound it was made within") {
  const auto bow = hardware({{"preset", "bow"}, {"operations", {{"pricing", "planned"}}}});
  sim::PlanSettings starved;
  starved.memory_proportion = 0.001;
  const auto cost = sim::planned_cost(bow, DType::kFp16, dense_matmul(), 4, starved);
  REQUIRE(cost);
  sim::pricing::PlanOptions options;
  options.available_memory_proportion = 0.001;
  const auto plan =
      sim::pricing::plan_product(sim::pricing::tile_target(bow),
                                 sim::pricing::matmul_passes(1, 512, 768, 3072).forward, options);
  REQUIRE_FALSE(plan.fits);
  const std::string within = " within " + sim::fixed(plan.bound_proportion, 2);
  CHECK(cost->plan.size() > within.size());
  CHECK(cost->plan.substr(cost->plan.size() - within.size()) == within);
  CHECK(sim::planned_cost(bow, DType::kFp16, dense_matmul(), 4)->plan.find("within") ==
        std::string::npos);
}

TEST_CASE("planned pricing lowers a layer norm into its compute sets, rows times the micro-batch") {
  const auto bow =
      hardware({{"preset", "bow"}, {"operations", {{"pricing", "planned"}, {"plan_scale", 1}}}});
  models::Operation op{"layer_norm", OpClass::kReduction, {}, {}};
  op.lowering = models::VectorLowering::kLayerNorm;
  op.forward.work = 128 * 1024;  // 128 rows of 1024 elements a sample
  op.vector_width = 1024;
  const auto cost = sim::planned_cost(bow, DType::kFp16, op, 8);
  REQUIRE(cost);
  const auto plan =
      sim::pricing::plan_vector(sim::pricing::tile_target(bow), models::VectorLowering::kLayerNorm,
                                {1024, 1024}, DType::kFp16);
  CHECK(cost->forward.cycles == sim::pricing::total_cycles(plan.forward));
  CHECK(cost->backward.cycles == sim::pricing::total_cycles(plan.backward));
}

TEST_CASE("fitted pricing leaves planned lowerings to the roofline, and the chips' presets plan") {
  models::Operation op{"layer_norm", OpClass::kReduction, {}, {}};
  op.lowering = models::VectorLowering::kLayerNorm;
  op.forward.work = 64;
  op.vector_width = 8;
  CHECK_FALSE(sim::planned_cost(
      hardware({{"preset", "bow"}, {"operations", {{"pricing", "fitted"}}}}), DType::kFp16, op, 1));
  // The ideal chip plans too, at poplibs' estimates as they are (plan_scale 1).
  for (const char* preset : {"bow", "gc200", "gc2", "ideal"})
    CHECK(sim::planned_cost(hardware({{"preset", preset}}), DType::kFp16, op, 1));
}

TEST_CASE("an unknown pricing names the choices and the nearest") {
  CHECK_THROWS_WITH(hardware({{"preset", "bow"}, {"operations", {{"pricing", "plan"}}}}),
                    Catch::Contains("/hardware/operations/pricing: expected \"fitted\" or "
                                    "\"planned\", found \"plan\"; did you mean 'planned'?"));
}
