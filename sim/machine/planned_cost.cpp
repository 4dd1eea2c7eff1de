#include "sim/machine/planned_cost.hpp"

#include <algorithm>
#include <cmath>

#include "sim/core/format.hpp"
#include "sim/core/time.hpp"
#include "sim/pricing/plan_cache.hpp"

namespace ipusim::sim {
namespace {

std::int64_t scaled(double cycles, double scale) {
  const double total = std::ceil(cycles * scale - 1e-9);
  if (!(total < 4611686018427387904.0))
    throw core::Overflow("simulated time");
  return std::int64_t(total);
}

OpBound bound_of(const OpPassCost& cost) {
  if (cost.compute >= cost.exchange && cost.compute >= cost.overhead)
    return OpBound::kCompute;
  return cost.exchange >= cost.overhead ? OpBound::kExchange : OpBound::kOverhead;
}

// A plan whose temporaries pass the proportion: the bound poplin's retry made it within.
std::string bound_text(const pricing::ProductPlan& plan) {
  if (plan.fits)
    return "";
  return std::isinf(plan.bound_proportion) ? " unbounded"
                                           : " within " + fixed(plan.bound_proportion, 2);
}

// One or two plans as one pass, run `slices` times (a serialised product's slices).
OpPassCost product_pass(const pricing::TileTarget& target,
                        std::initializer_list<const pricing::ProductPlan*> plans, double scale,
                        double slices) {
  OpPassCost cost;
  for (const auto* plan : plans) {
    const double serial = double(plan->serial) * slices;
    cost.tiles = std::max(cost.tiles, plan->split.tiles());
    cost.overhead += slices * double(plan->compute_sets) * target.sync_cycles;
    cost.exchange += scale * serial *
                     double(plan->input_exchange + plan->weight_exchange + plan->partial_exchange);
    cost.compute += scale * (serial * double(plan->vertex_cycles + plan->reduce_cycles) +
                             slices * double(plan->transform_cycles));
  }
  cost.cycles = scaled(cost.overhead + cost.exchange + cost.compute, 1);
  cost.bound = bound_of(cost);
  return cost;
}

OpPassCost vector_pass(const std::vector<pricing::PricedComputeSet>& sets, int sync_cycles,
                       double scale) {
  OpPassCost cost;
  for (const auto& set : sets) {
    cost.tiles = std::max(cost.tiles, set.tiles);
    cost.overhead += sync_cycles;
    cost.exchange += scale * double(set.exchange_cycles);
    cost.compute += scale * double(set.vertex_cycles);
  }
  cost.cycles = scaled(cost.overhead + cost.exchange + cost.compute, 1);
  cost.bound = bound_of(cost);
  return cost;
}

PlannedCost planned_product(const HardwareSpec& hw, models::DType dtype,
                            const models::ProductGeometry& geometry, std::int64_t micro_batch,
                            const PlanSettings& settings) {
  const auto target = pricing::tile_target(hw);
  pricing::PlanOptions options;
  options.input = dtype;
  options.partials = settings.partials;
  options.available_memory_proportion = settings.memory_proportion;
  const auto passes = pricing::passes_of(geometry, micro_batch);
  const auto& forward = pricing::cached_plan(target, passes.forward, options);
  const auto& weight = pricing::cached_plan(target, passes.weight_gradient, options);
  // No SDK factor: the older SDKs' runs are planned at the memory proportions they state, and
  // with it free the fit to all 39 runs puts it at 1.02.
  const double scale = hw.operations.plan_scale;
  const double slices = double(geometry.slices);
  PlannedCost cost;
  cost.forward = product_pass(target, {&forward}, scale, slices);
  // The input gradient is planned only where it runs.
  cost.backward =
      settings.input_gradient
          ? product_pass(target,
                         {&pricing::cached_plan(target, passes.input_gradient, options), &weight},
                         scale, slices)
          : product_pass(target, {&weight}, scale, slices);
  if (geometry.weights)
    cost.weight_gradient_cycles = product_pass(target, {&weight}, scale, slices).cycles;
  const auto& split = forward.split;
  cost.plan = std::string(pricing::to_string(forward.vertex)) + " " + std::to_string(split.groups) +
              "/" + std::to_string(split.field) + "/" + std::to_string(split.in_chans) + "/" +
              std::to_string(split.out_chans) +
              (forward.serial > 1 ? " x " + std::to_string(forward.serial) + " serial" : "") +
              (geometry.slices > 1 ? " x " + std::to_string(geometry.slices) + " slices" : "") +
              bound_text(forward);
  return cost;
}

PlannedCost planned_vector(const HardwareSpec& hw, models::DType dtype, const models::Operation& op,
                           std::int64_t micro_batch) {
  const auto target = pricing::tile_target(hw);
  const double batch = double(micro_batch);
  pricing::VectorShape shape;
  const double rows = op.forward.work / op.vector_width;
  shape.rows = std::llround(rows * (op.vector_batch_widens ? 1 : batch));
  shape.width = std::llround(op.vector_width * (op.vector_batch_widens ? batch : 1));
  const auto& plan = pricing::cached_vector_plan(target, op.lowering, shape, dtype);
  const double scale = hw.operations.plan_scale;
  return {vector_pass(plan.forward, target.sync_cycles, scale),
          vector_pass(plan.backward, target.sync_cycles, scale), 0,
          std::to_string(plan.forward.size()) + "+" + std::to_string(plan.backward.size()) +
              " compute sets"};
}

}  // namespace

std::optional<PlannedCost> planned_cost(const HardwareSpec& hardware, models::DType dtype,
                                        const models::Operation& op, std::int64_t micro_batch,
                                        const PlanSettings& settings) {
  if (hardware.operations.pricing != Pricing::kPlanned)
    return std::nullopt;
  if (op.product)
    return planned_product(hardware, dtype, *op.product, micro_batch, settings);
  if (op.lowering != models::VectorLowering::kNone)
    return planned_vector(hardware, dtype, op, micro_batch);
  return std::nullopt;
}

}  // namespace ipusim::sim
