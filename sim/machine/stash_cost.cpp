#include "sim/machine/stash_cost.hpp"

#include <algorithm>
#include <set>

namespace ipusim::sim {

using models::Model;
using schedules::StashKind;

namespace {

// What one sample's stash entry of `layers` under `kind` holds, in the compute dtype: the model
// input it stashes as read (token ids stay exact), and activations (the saved state of every
// layer; or the stage inputs, and under kCheckpoints the checkpoints' outputs and the final
// forward stage's kept layers' state, the inputs only when a segment is rebuilt). The dropout
// seeds, which no recomputation can recreate, are per micro-batch.
struct StashContent {
  std::int64_t model_input = 0;
  std::int64_t activations = 0;
  std::int64_t seeds = 0;
};

StashContent stash_content(const RunSpec& spec, const std::vector<int>& layers, StashKind kind,
                           const models::RecomputePlan& plan) {
  StashContent content;
  std::int64_t saved = 0;
  for (int layer : layers) {
    saved += spec.model.info[layer].saved_bytes;
    content.seeds += spec.model.info[layer].seed_bytes;
  }
  if (kind == StashKind::kNone)
    return {};
  if (kind == StashKind::kActivations) {
    content.activations = saved;
    return content;
  }
  // The stage inputs are kept for the recomputation that starts from them; a final forward
  // stage that recomputes nothing keeps its layers' state from the forward instead.
  if (kind == StashKind::kStageInputs || !plan.recomputations.empty()) {
    const ExternalInputs inputs = external_inputs(spec, layers);
    content.model_input = inputs.model_input;
    content.activations = inputs.activations;
  }
  for (int layer : plan.checkpoints)
    content.activations += spec.model.info[layer].activation_bytes;
  for (int layer : plan.kept)
    content.activations += spec.model.info[layer].saved_bytes;
  return content;
}

// Elements per sample that a recomputing stash casts to stash_dtype before it stashes them and
// back after it reads them (PopART BERT's activation_checkpoint_dtype: the checkpoints' outputs
// only, so not the model input); 0 when the stash keeps the compute dtype.
std::int64_t cast_elements(const RunSpec& spec, const StashContent& content, StashKind kind) {
  if (!recomputes(kind) || spec.pipeline.stash_dtype == spec.pipeline.dtype)
    return 0;
  return content.activations / models::dtype_bytes(spec.pipeline.dtype);
}

}  // namespace

std::int64_t model_input_elements(const RunSpec& spec) {
  std::int64_t elements = 1;
  for (auto dim : spec.model.input_shape)
    elements *= dim;
  return elements;
}

std::int64_t tensor_bytes(const RunSpec& spec, int layer) {
  if (layer >= 0)
    return spec.model.info[layer].activation_bytes;
  const std::int64_t element_bytes =
      spec.data.eight_bit_io ? 1 : models::dtype_bytes(spec.model.dtype);
  return model_input_elements(spec) * element_bytes;
}

std::vector<int> producers(const Model& model, int layer) {
  const auto& inputs = model.graph.inputs_of(layer);
  if (inputs.empty())
    return {-1};
  return inputs;
}

ExternalInputs external_inputs(const RunSpec& spec, const std::vector<int>& layers) {
  std::set<int> inside(layers.begin(), layers.end());
  std::set<int> seen;
  ExternalInputs bytes;
  for (int layer : layers) {
    for (int producer : producers(spec.model, layer)) {
      if (inside.count(producer) || !seen.insert(producer).second)
        continue;
      (producer < 0 ? bytes.model_input : bytes.activations) += tensor_bytes(spec, producer);
    }
  }
  return bytes;
}

bool recomputes(StashKind kind) {
  return kind == StashKind::kStageInputs || kind == StashKind::kCheckpoints;
}

models::RecomputePlan recompute_plan(const RunSpec& spec, const std::vector<int>& layers,
                                     StashKind kind, bool final_forward_stage) {
  if (kind != StashKind::kCheckpoints)
    return {};
  return models::recompute_plan(
      spec.model, layers, {spec.pipeline.recompute_checkpoint_every_layer, final_forward_stage});
}

std::int64_t stash_bytes(const RunSpec& spec, const std::vector<int>& layers, StashKind kind,
                         const models::RecomputePlan& plan) {
  const StashContent content = stash_content(spec, layers, kind, plan);
  const std::int64_t cast = cast_elements(spec, content, kind);
  const std::int64_t activations =
      cast > 0 ? cast * models::dtype_bytes(spec.pipeline.stash_dtype) : content.activations;
  return (content.model_input + activations) * spec.pipeline.micro_batch_size + content.seeds;
}

// The casts around a stash in another dtype: one vector pass over its elements before the
// stash (in the forward) and one after (in the recomputation, which reads it), in the compute
// dtype, as PopART's CastToFp8 and CastFromFp8 run.
std::optional<models::Operation> stash_cast_operation(const RunSpec& spec,
                                                      const std::vector<int>& layers,
                                                      StashKind kind,
                                                      const models::RecomputePlan& plan) {
  const double elements =
      double(cast_elements(spec, stash_content(spec, layers, kind, plan), kind));
  if (elements == 0)
    return std::nullopt;
  models::Operation cast{"cast_" + models::dtype_name(spec.pipeline.stash_dtype),
                         models::OpClass::kElementwise,
                         {},
                         {}};
  cast.forward = {elements, elements, 0, 1, elements};
  return cast;
}

std::vector<std::int64_t> held_on_chip(const schedules::Schedule& schedule, bool offload_fifos) {
  std::vector<std::int64_t> held = schedule.microbatches_held();
  if (offload_fifos && schedule.step_based()) {
    for (auto& count : held)
      count = std::min<std::int64_t>(count, 1);
  }
  return held;
}

std::int64_t backward_state_bytes(const RunSpec& spec, const std::vector<int>& layers,
                                  StashKind kind, const models::RecomputePlan& plan) {
  std::int64_t largest = 0;
  const auto saved = [&](const std::vector<int>& held) {
    std::int64_t bytes = 0;
    for (int layer : held)
      bytes += spec.model.info[layer].saved_bytes;
    largest = std::max(largest, bytes * spec.pipeline.micro_batch_size);
  };
  if (kind == StashKind::kStageInputs)
    saved(layers);
  for (const auto& held : plan.recomputations)
    saved(held);
  return largest;
}

}  // namespace ipusim::sim
