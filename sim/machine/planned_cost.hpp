#pragma once
// An operation's passes priced as Poplar plans them (sim/pricing), when the hardware says so
// (hardware.operations.pricing "planned"): a product's forward is its plan, its backward the
// plans of its two gradients; a vector operation's passes are the compute sets it lowers to.
// Each compute set of a product adds a sync, which poplin's estimate leaves out, and every plan's
// cycles are scaled by operations.plan_scale (and a product's divided by the older SDKs'
// factor, as the fitted model does).

#include <cstdint>
#include <optional>
#include <string>

#include "models/layers/operations.hpp"
#include "sim/machine/op_cost.hpp"
#include "sim/spec/hardware.hpp"

namespace ipusim::sim {

struct PlannedCost {
  OpPassCost forward;
  OpPassCost backward;
  std::int64_t weight_gradient_cycles = 0;  // the part of the backward a W task runs
  // What was planned, for the operations table: a product's forward vertex and split
  // ("AMP 1x1 1/4/4/86", "x 2 serial" when sliced), a vector operation's compute sets.
  std::string plan;
};

// Nothing when the hardware prices by the fitted model or `op` has no planned lowering (a
// gather, a copy, a pooling window): those keep the roofline of op_cost.hpp.
// How the operation's plans are made.
struct PlanSettings {
  double memory_proportion = 0.6;  // poplin's availableMemoryProportion on the operation's IPU
  models::DType partials = models::DType::kFp32;  // poplin's partialsType
  // False for a product reading the model's input: autodiff computes no gradient for data.
  bool input_gradient = true;
};

std::optional<PlannedCost> planned_cost(const HardwareSpec& hardware, models::DType dtype,
                                        const models::Operation& op, std::int64_t micro_batch,
                                        const PlanSettings& settings = {});

}  // namespace ipusim::sim
