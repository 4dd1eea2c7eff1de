#pragma once
// What a sub-stage stashes per micro-batch and what its backward holds at once, by stash kind:
// every layer's saved state (kActivations); the stage inputs (kStageInputs); the stage inputs
// and the checkpoints' outputs, rebuilt a segment at a time (kCheckpoints, see
// models/layers/recompute_plan.hpp). The cost model's helpers for the tensors crossing into a
// sub-stage live here too, as the stash is made of them.

#include <cstdint>
#include <optional>
#include <vector>

#include "models/layers/operations.hpp"
#include "models/layers/recompute_plan.hpp"
#include "schedules/schedule.hpp"
#include "sim/spec/spec.hpp"

namespace ipusim::sim {

std::int64_t model_input_elements(const RunSpec& spec);

// The bytes of one sample of the tensor produced by `layer` (-1: the model input, one byte an
// element under eight_bit_io).
std::int64_t tensor_bytes(const RunSpec& spec, int layer);

// The producers (layer index, or -1 for the model input) of a layer's inputs.
std::vector<int> producers(const models::Model& model, int layer);

// Bytes per sample that enter a sub-stage from outside it: the model input, and the outputs of
// layers in other stages.
struct ExternalInputs {
  std::int64_t model_input = 0;
  std::int64_t activations = 0;
};
ExternalInputs external_inputs(const RunSpec& spec, const std::vector<int>& layers);

// Whether a stage of this kind recomputes its forward before its backward.
bool recomputes(schedules::StashKind kind);

// The checkpoints and recomputations of `layers` under `kind`: none unless it stashes
// checkpoints.
models::RecomputePlan recompute_plan(const RunSpec& spec, const std::vector<int>& layers,
                                     schedules::StashKind kind, bool final_forward_stage);

// One micro-batch's stash of `layers` under `kind`.
std::int64_t stash_bytes(const RunSpec& spec, const std::vector<int>& layers,
                         schedules::StashKind kind, const models::RecomputePlan& plan);

// The casts around a stash in another dtype, when it has one.
std::optional<models::Operation> stash_cast_operation(const RunSpec& spec,
                                                      const std::vector<int>& layers,
                                                      schedules::StashKind kind,
                                                      const models::RecomputePlan& plan);

// Per stage, the stash entries held on chip at most: the schedule's microbatches_held, of which
// offloaded FIFOs (offload_activations, Graphcore's schedules) keep all but the one between the
// forward and the backward in streaming memory.
std::vector<std::int64_t> held_on_chip(const schedules::Schedule& schedule, bool offload_fifos);

// One micro-batch's saved state that the backward holds beside the stash entry it reads: under
// kStageInputs the whole sub-stage's, rebuilt before the backward starts; under kCheckpoints
// the largest segment rebuilt at a time (the final forward stage's kept layers are in its
// entry); under kActivations none, as the entry is that state.
std::int64_t backward_state_bytes(const RunSpec& spec, const std::vector<int>& layers,
                                  schedules::StashKind kind, const models::RecomputePlan& plan);

}  // namespace ipusim::sim
