#include "models/kernels/stage_executor.hpp"

#include <algorithm>
#include <set>

#include "models/kernels/init.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {
namespace {

std::unique_ptr<Kernel> kernel_of(const Model& model, int layer, std::uint64_t seed) {
  const Layer& spec = model.layers[static_cast<std::size_t>(layer)];
  if (spec.type == LayerType::kInput)
    return nullptr;
  return make_kernel(spec, input_shapes_of(model, layer), model.dtype, seed);
}

}  // namespace

std::vector<int> producers_of(const Model& model, int layer) {
  const std::vector<int>& inputs = model.graph.inputs_of(layer);
  return inputs.empty() ? std::vector<int>{kModelInput} : inputs;
}

std::vector<Shape> input_shapes_of(const Model& model, int layer) {
  std::vector<Shape> shapes;
  for (const int producer : producers_of(model, layer)) {
    shapes.push_back(producer == kModelInput
                         ? model.input_shape
                         : model.info[static_cast<std::size_t>(producer)].output);
  }
  return shapes;
}

LayerTensorShapes tensor_shapes_of(const Model& model, int layer) {
  LayerTensorShapes shapes;
  const auto kernel = kernel_of(model, layer, 0);  // shapes do not depend on the seed
  if (kernel == nullptr)
    return shapes;
  const std::vector<ParameterSpec> specs = kernel->parameters();
  const bool tied = !model.layers[static_cast<std::size_t>(layer)].tied_to.empty();
  for (auto spec = specs.begin() + (tied ? 1 : 0); spec != specs.end(); ++spec)
    shapes.parameters.push_back(spec->shape);
  for (const Tensor& statistic : kernel->initial_running_statistics())
    shapes.running_statistics.push_back(statistic.shape());
  return shapes;
}

void add_gradient(TensorMap& gradients, int producer, Tensor gradient, DType dtype) {
  const auto [at, inserted] = gradients.try_emplace(producer, std::move(gradient));
  if (inserted)
    return;
  Tensor& sum = at->second;
  IPUSIM_CHECK(sum.shape() == gradient.shape());
  for (std::int64_t i = 0; i < sum.elements(); ++i)
    sum[i] += gradient[i];
  round_to_dtype(sum, dtype);
}

ParameterStore::ParameterStore(const Model& model, const TrainingOptions& options)
    : seed_(options.seed),
      accumulator_dtype_(options.accumulator_dtype),
      optimizer_(options.optimizer, model.dtype),
      layers_(model.layers.size()) {
  for (int layer = 0; layer < static_cast<int>(model.layers.size()); ++layer) {
    const auto kernel = kernel_of(model, layer, seed_);
    if (kernel == nullptr)
      continue;
    const Layer& spec = model.layers[index(layer)];
    const std::vector<ParameterSpec> specs = kernel->parameters();
    LayerState& state = layers_[index(layer)];
    // A tied layer's kernel takes the word matrix first; the layer owns the rest.
    const std::size_t shared = spec.tied_to.empty() ? 0 : 1;
    if (shared != 0) {
      state.tied_to = model.index_of(spec.tied_to);
      IPUSIM_CHECK(state.tied_to >= 0 && state.tied_to < layer);
      layers_[index(state.tied_to)].tied_by.push_back(layer);
    }
    const std::vector<ParameterSpec> owned(specs.begin() + static_cast<std::ptrdiff_t>(shared),
                                           specs.end());
    state.values = initial_parameters(owned, seed_, spec.id, model.dtype);
    state.running = kernel->initial_running_statistics();
    for (const ParameterSpec& parameter : specs)
      state.gradients.emplace_back(parameter.shape, options.accumulator_dtype, options.reduction);
    for (const ParameterSpec& parameter : owned)
      state.optimizer.push_back(
          optimizer_.initial_state(parameter.shape, takes_weight_decay(parameter.role)));
  }
}

std::span<const Tensor> ParameterStore::kernel_parameters(int layer,
                                                          std::vector<Tensor>& scratch) const {
  const LayerState& state = layers_.at(index(layer));
  if (state.tied_to < 0)
    return state.values;
  // A copy of the word matrix: the kernels take their parameters as one contiguous span. It
  // costs far less than the product with it.
  scratch.clear();
  scratch.push_back(layers_.at(index(state.tied_to)).values.at(0));
  scratch.insert(scratch.end(), state.values.begin(), state.values.end());
  return scratch;
}

std::vector<Tensor> ParameterStore::reduced_gradients(int layer) const {
  const LayerState& state = layers_.at(index(layer));
  const std::size_t shared = state.tied_to < 0 ? 0 : 1;
  std::vector<Tensor> reduced;
  for (std::size_t i = shared; i < state.gradients.size(); ++i)
    reduced.push_back(state.gradients[i].result());
  for (const int user : state.tied_by) {
    Tensor& sum = reduced.at(0);
    const Tensor use = layers_.at(index(user)).gradients.at(0).result();
    IPUSIM_CHECK(use.shape() == sum.shape());
    for (std::int64_t e = 0; e < sum.elements(); ++e)
      sum[e] += use[e];
    round_to_dtype(sum, accumulator_dtype_);
  }
  return reduced;
}

void ParameterStore::apply_update(std::span<const int> layers) {
  for (const int layer : layers) {
    LayerState& state = layers_.at(index(layer));
    const std::vector<Tensor> gradients = reduced_gradients(layer);
    for (std::size_t i = 0; i < state.values.size(); ++i)
      optimizer_.apply(state.values[i], gradients[i], state.optimizer[i]);
  }
  // Cleared only once every layer is updated. A tied layer's word-matrix accumulator belongs to
  // the embedding's update, which may come before or after the tied layer's (on another IPU).
  for (const int layer : layers) {
    LayerState& state = layers_.at(index(layer));
    for (std::size_t i = state.tied_to < 0 ? 0 : 1; i < state.gradients.size(); ++i)
      state.gradients[i].reset();
    for (const int user : state.tied_by)
      layers_.at(index(user)).gradients.at(0).reset();
  }
}

void ParameterStore::apply_update() {
  std::vector<int> all(layers_.size());
  for (std::size_t i = 0; i < all.size(); ++i)
    all[i] = static_cast<int>(i);
  apply_update(all);
}

std::int64_t Stash::bytes() const {
  std::int64_t total = 0;
  for (const TensorMap* tensors : {&inputs, &checkpoints}) {
    for (const auto& [producer, tensor] : *tensors)
      total += tensor.elements() * dtype_bytes(dtype);
  }
  for (const auto& [layer, state] : saved)
    total += state.saved_bytes();
  // A kept layer's seeds are in `saved` too, counted there once.
  for (const auto& [layer, state] : kept)
    total += state.saved_bytes() - std::int64_t(state.seeds.size()) * kDropoutSeedBytes;
  return total;
}

StageExecutor::StageExecutor(const Model& model, const std::vector<int>& layers,
                             std::int64_t micro_batch_size, ParameterStore& parameters,
                             StashMode mode, const CheckpointOptions& checkpoints)
    : model_(model), parameters_(parameters), micro_batch_size_(micro_batch_size), mode_(mode) {
  IPUSIM_CHECK(micro_batch_size > 0);
  const std::set<int> members(layers.begin(), layers.end());
  for (const int layer : model.graph.topological_order()) {
    if (members.count(layer) != 0)
      layers_.push_back(layer);
  }
  IPUSIM_CHECK(layers_.size() == members.size());
  std::set<int> inputs;
  const int last = static_cast<int>(model.layers.size()) - 1;
  for (const int layer : layers_) {
    for (const int producer : producers_of(model, layer)) {
      if (members.count(producer) == 0)
        inputs.insert(producer);
    }
    const std::vector<int>& consumers = model.graph.consumers_of(layer);
    const bool leaves = std::any_of(consumers.begin(), consumers.end(),
                                    [&](int consumer) { return members.count(consumer) == 0; });
    if (leaves || layer == last)
      output_producers_.push_back(layer);
    kernels_.emplace(layer, kernel_of(model, layer, parameters.seed()));
  }
  input_producers_.assign(inputs.begin(), inputs.end());
  if (mode_ == StashMode::kCheckpoints)
    plan_ = recompute_plan(model, layers_, checkpoints);
}

StageForward StageExecutor::forward(const TensorMap& inputs, const ForwardContext& context) const {
  TensorMap entering;
  for (const int producer : input_producers_) {
    Tensor tensor = inputs.at(producer);
    IPUSIM_CHECK(tensor.batch() == micro_batch_size_);
    if (producer == kModelInput && !input_holds_ids(model_))
      round_to_dtype(tensor, model_.dtype);
    entering.emplace(producer, std::move(tensor));
  }
  StageForward result = run_forward(entering, context, mode_ == StashMode::kActivations, true);
  // A final forward stage that recomputes nothing keeps its layers' state, not its inputs.
  if (mode_ == StashMode::kStageInputs ||
      (mode_ == StashMode::kCheckpoints && !plan_.recomputations.empty()))
    result.stash.inputs = std::move(entering);
  return result;
}

Stash StageExecutor::recompute(const Stash& stash) const {
  IPUSIM_CHECK(mode_ != StashMode::kActivations && !stash.complete);
  const ForwardContext context{stash.microbatch, stash.repeat, stash.labels};
  Stash full = mode_ == StashMode::kCheckpoints
                   ? recompute_segments(stash, context)
                   : run_forward(stash.inputs, context, true, false).stash;
  for (const auto& [layer, state] : stash.saved)
    IPUSIM_CHECK(state.seeds == full.saved.at(layer).seeds);
  return full;
}

// Each segment from the stage inputs and checkpoint outputs alone, as the backward rebuilds
// them; a layer two segments run keeps the state of the first (the same bits).
Stash StageExecutor::recompute_segments(const Stash& stash, const ForwardContext& context) const {
  Stash full;
  full.microbatch = stash.microbatch;
  full.repeat = stash.repeat;
  full.labels = stash.labels;
  full.dtype = stash.dtype;
  full.complete = true;
  full.saved = stash.kept;
  for (const std::vector<int>& layers : plan_.recomputations) {
    TensorMap values = stash.inputs;
    values.insert(stash.checkpoints.begin(), stash.checkpoints.end());
    Stash segment;
    run_layers(layers, values, context, true, false, segment);
    full.saved.merge(segment.saved);
  }
  return full;
}

StageForward StageExecutor::run_forward(const TensorMap& inputs, const ForwardContext& context,
                                        bool keep_all, bool update_running) const {
  StageForward result;
  Stash& stash = result.stash;
  stash.microbatch = context.microbatch;
  stash.repeat = context.repeat;
  stash.labels.assign(context.labels.begin(), context.labels.end());
  stash.dtype = model_.dtype;
  stash.complete = keep_all;
  TensorMap values = inputs;
  run_layers(layers_, values, context, keep_all, update_running, stash);
  for (const int producer : output_producers_)
    result.outputs.emplace(producer, std::move(values.at(producer)));
  return result;
}

void StageExecutor::run_layers(const std::vector<int>& layers, TensorMap& values,
                               const ForwardContext& context, bool keep_all, bool update_running,
                               Stash& stash) const {
  for (const int layer : layers) {
    const std::vector<int> producers = producers_of(model_, layer);
    const Kernel* kernel = kernels_.at(layer).get();
    if (kernel == nullptr) {  // an input layer passes the model input on
      values.insert_or_assign(layer, values.at(producers[0]));
      continue;
    }
    std::vector<const Tensor*> arguments;
    for (const int producer : producers)
      arguments.push_back(&values.at(producer));
    std::vector<Tensor> scratch;
    ForwardResult output =
        kernel->forward(arguments, parameters_.kernel_parameters(layer, scratch), context);
    if (update_running && !output.statistics.empty())
      kernel->update_running_statistics(parameters_.mutable_running_statistics(layer),
                                        output.statistics);
    store(layer, output, keep_all, stash);
    values.insert_or_assign(layer, std::move(output.output));
  }
}

// What the stash keeps of a layer's forward: its whole state, or (recomputing) its seeds, its
// output when it is a checkpoint, and the final forward stage's kept layers' states apart.
void StageExecutor::store(int layer, ForwardResult& output, bool keep_all, Stash& stash) const {
  const bool kept = std::find(plan_.kept.begin(), plan_.kept.end(), layer) != plan_.kept.end();
  if (keep_all) {
    stash.saved.emplace(layer, std::move(output.saved));
    return;
  }
  if (plan_.is_checkpoint(layer))
    stash.checkpoints.emplace(layer, output.output);
  if (kept)
    stash.kept.emplace(layer, output.saved);
  if (!output.saved.seeds.empty())
    stash.saved[layer].seeds = std::move(output.saved.seeds);
}

TensorMap StageExecutor::backward(const TensorMap& output_gradients, const Stash& stash) {
  IPUSIM_CHECK(stash.complete);
  TensorMap gradients = output_gradients;
  const int last = static_cast<int>(model_.layers.size()) - 1;
  if (model_.trainable && kernels_.count(last) != 0)
    gradients.try_emplace(last, Shape{1}, 1.0f);
  for (auto layer = layers_.rbegin(); layer != layers_.rend(); ++layer) {
    const std::vector<int> producers = producers_of(model_, *layer);
    const Tensor& gradient = gradients.at(*layer);
    const Kernel* kernel = kernels_.at(*layer).get();
    if (kernel == nullptr) {
      add_gradient(gradients, producers[0], gradient, model_.dtype);
      continue;
    }
    std::vector<Tensor> scratch;
    std::vector<Tensor> input_gradients = kernel->backward(
        gradient, stash.saved.at(*layer), parameters_.kernel_parameters(*layer, scratch),
        parameters_.gradients(*layer));
    for (std::size_t i = 0; i < producers.size(); ++i)
      add_gradient(gradients, producers[i], std::move(input_gradients[i]), model_.dtype);
  }
  TensorMap result;
  for (const int producer : input_producers_)
    result.emplace(producer, std::move(gradients.at(producer)));
  return result;
}

}  // namespace ipusim::models
