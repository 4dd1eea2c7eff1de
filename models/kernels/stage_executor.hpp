#pragma once
// Numeric execution of one pipeline stage (or sub-stage): the forward and backward passes of a
// set of a model's layers on real tensors, with the stash a stage keeps between them. The
// pipeline builds one StageExecutor per stage over its own ParameterStore; the reference builds
// one executor over all layers over another store from the same seed. Run with the same
// micro-batches in the same order, both produce bit-identical losses, gradients and weights.
//
// Tensors crossing a stage boundary are keyed by the layer that produced them (kModelInput for
// the model input). A stage's inputs are the tensors its layers read from outside it; its
// outputs are the tensors its layers produce for layers outside it (or the model's last layer).

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "models/kernels/kernels.hpp"
#include "models/kernels/optimizer.hpp"
#include "models/layers/model.hpp"
#include "models/layers/recompute_plan.hpp"

namespace ipusim::models {

constexpr int kModelInput = -1;
using TensorMap = std::map<int, Tensor>;

// The producers of a layer's inputs, in order; kModelInput for a layer fed by the model input.
std::vector<int> producers_of(const Model& model, int layer);

// The per-sample shapes of a layer's inputs, in order.
std::vector<Shape> input_shapes_of(const Model& model, int layer);

// Adds `gradient` into the gradient of `producer` (inserting it if it is the first), rounding
// the sum to `dtype`. When a tensor feeds several later stages, sum their gradients in
// decreasing stage order before the producing stage's backward, as the reference does.
void add_gradient(TensorMap& gradients, int producer, Tensor gradient, DType dtype);

// The shapes of the tensors a ParameterStore of `model` gives `layer`, found without allocating
// them: its parameters (a tied layer's without the word matrix) and its running statistics.
struct LayerTensorShapes {
  std::vector<Shape> parameters;
  std::vector<Shape> running_statistics;
};
LayerTensorShapes tensor_shapes_of(const Model& model, int layer);

// How a model trains numerically: the seed of its random streams, the optimizer and how
// micro-batch gradients are accumulated.
struct TrainingOptions {
  std::uint64_t seed = 0;  // parameter init and dropout masks
  OptimizerConfig optimizer;
  DType accumulator_dtype = DType::kFp32;
  GradientReduction reduction = GradientReduction::kMean;
};

// The trainable state of a model: for every layer with parameters, the parameter tensors
// (Keras initialisation keyed by (seed, layer id), in the model's dtype), one gradient
// accumulator per tensor and the optimizer state; and the non-trainable running statistics of
// batch_norm layers, which training forwards update in micro-batch order.
//
// Tied weights: a dense layer `tied_to` an embedding owns only its bias; its kernel takes the
// embedding's word matrix (held once, by the embedding) first. The tied layer keeps its own
// accumulator for its use of the matrix, so that each user adds its micro-batch gradients in
// micro-batch order whatever the pipeline stage it runs in; the optimizer then updates the
// matrix once with the sum of the reduced gradients of the embedding and of its tied users, in
// layer order. The pipeline and the reference sum the same way, so they agree bit for bit.
class ParameterStore {
 public:
  ParameterStore(const Model& model, const TrainingOptions& options);

  std::uint64_t seed() const { return seed_; }
  // The tensors a layer owns (a tied layer: not the word matrix).
  std::span<const Tensor> parameters(int layer) const { return layers_.at(index(layer)).values; }
  std::span<Tensor> mutable_parameters(int layer) { return layers_.at(index(layer)).values; }
  // The tensors the layer's kernel takes: parameters(layer), after the word matrix for a tied
  // layer, which is copied into `scratch` with them.
  std::span<const Tensor> kernel_parameters(int layer, std::vector<Tensor>& scratch) const;
  // One accumulator per tensor the layer's kernel takes.
  std::span<GradientAccumulator> gradients(int layer) { return layers_.at(index(layer)).gradients; }
  std::span<const GradientAccumulator> gradients(int layer) const {
    return layers_.at(index(layer)).gradients;
  }
  // The gradients the optimizer applies to parameters(layer): each accumulator's reduced
  // gradient, the word matrix's summed with its tied users' (see the top).
  std::vector<Tensor> reduced_gradients(int layer) const;
  std::span<const Tensor> running_statistics(int layer) const {
    return layers_.at(index(layer)).running;
  }
  std::span<Tensor> mutable_running_statistics(int layer) {
    return layers_.at(index(layer)).running;
  }

  // Applies the optimizer to the reduced gradients of `layers` (or of every layer), then
  // clears their accumulators for the next step. An embedding's update takes and clears its tied
  // users' word-matrix accumulators, whether their own updates come before or after it.
  void apply_update(std::span<const int> layers);
  void apply_update();

 private:
  struct LayerState {
    std::vector<Tensor> values;
    std::vector<Tensor> running;
    std::vector<GradientAccumulator> gradients;  // the tied word matrix's first, if tied
    std::vector<OptimizerState> optimizer;
    int tied_to = -1;          // the embedding whose word matrix this layer's kernel takes
    std::vector<int> tied_by;  // the layers tied to this embedding, in layer order
  };
  static std::size_t index(int layer) { return static_cast<std::size_t>(layer); }

  std::uint64_t seed_;
  DType accumulator_dtype_;
  Optimizer optimizer_;
  std::vector<LayerState> layers_;  // by layer index; empty for layers without parameters
};

// What a stage stashes per micro-batch (the memory model's stash kinds):
//   kActivations: every layer's SavedState;
//   kStageInputs: the stage inputs and the stateful part (dropout seeds, of dropout layers and
//     of the layers with dropout inside); recompute() rebuilds the rest before backward;
//   kCheckpoints: as kStageInputs plus the outputs of the checkpoints, from which recompute()
//     rebuilds a segment at a time (models/layers/recompute_plan.hpp).
enum class StashMode { kActivations, kStageInputs, kCheckpoints };

// One micro-batch's stash. bytes() is what the memory model charges: the saved bytes of the
// states held, plus the stage inputs and checkpoint outputs at the dtype's size when they are
// held. The labels travel with the micro-batch to the loss and are not counted, nor are the
// states the final forward stage keeps from its forward to its backward (live, not stashed).
struct Stash {
  std::int64_t microbatch = 0;
  std::int64_t repeat = 0;
  std::vector<int> labels;
  DType dtype = DType::kFp32;
  TensorMap inputs;                 // recomputation modes only
  TensorMap checkpoints;            // kCheckpoints: the checkpoint layers' outputs
  std::map<int, SavedState> saved;  // by layer index
  std::map<int, SavedState> kept;   // kCheckpoints: the final forward stage's kept layers
  bool complete = false;            // holds every layer's state: backward can run on it

  std::int64_t bytes() const;
};

// A stage's forward pass: the tensors it hands on and its stash for this micro-batch.
struct StageForward {
  TensorMap outputs;
  Stash stash;
};

// Runs one stage's layers numerically (see the top of this file). Holds its layers' kernels;
// parameters and gradient accumulators live in the ParameterStore it references.
class StageExecutor {
 public:
  // `layers` are layer indices of `model`, in any order; `model` and `parameters` must outlive
  // the executor. `checkpoints` places the checkpoints under kCheckpoints.
  StageExecutor(const Model& model, const std::vector<int>& layers, std::int64_t micro_batch_size,
                ParameterStore& parameters, StashMode mode = StashMode::kActivations,
                const CheckpointOptions& checkpoints = {});

  const std::vector<int>& layers() const { return layers_; }  // in execution order
  const std::vector<int>& input_producers() const { return input_producers_; }
  const std::vector<int>& output_producers() const { return output_producers_; }

  // Runs the stage on `inputs` (one per input producer, batch = micro-batch size). The model
  // input is rounded to the model's dtype on entry, unless it holds token ids (see
  // input_holds_ids). `context` names the micro-batch (dropout masks) and holds the labels if
  // the stage has the loss. batch_norm layers fold the micro-batch's statistics into their
  // running statistics.
  StageForward forward(const TensorMap& inputs, const ForwardContext& context) const;

  // Rebuilds a complete stash from a recomputation-mode one: from the stage inputs, or from
  // the checkpoints a segment at a time, the last first. Dropout seeds come out equal to the
  // stashed ones (checked). Running statistics are not updated a second time.
  Stash recompute(const Stash& stash) const;

  const RecomputePlan& plan() const { return plan_; }

  // Returns the gradients of the stage inputs and adds this micro-batch's parameter gradients
  // to the store. `output_gradients` holds one per output producer; the loss, when the stage
  // has it, gets 1 unless given.
  TensorMap backward(const TensorMap& output_gradients, const Stash& stash);

 private:
  // `keep_all`: keep every layer's whole SavedState (else seeds, checkpoint outputs and the
  // kept layers' states). `update_running`: fold batch_norm statistics into the store (not when
  // recomputing).
  StageForward run_forward(const TensorMap& inputs, const ForwardContext& context, bool keep_all,
                           bool update_running) const;
  // Runs `layers` (in execution order) on `values`, which gains their outputs, into `stash`.
  void run_layers(const std::vector<int>& layers, TensorMap& values, const ForwardContext& context,
                  bool keep_all, bool update_running, Stash& stash) const;
  void store(int layer, ForwardResult& output, bool keep_all, Stash& stash) const;
  Stash recompute_segments(const Stash& stash, const ForwardContext& context) const;

  const Model& model_;
  ParameterStore& parameters_;
  std::int64_t micro_batch_size_;
  StashMode mode_;
  std::vector<int> layers_;
  std::vector<int> input_producers_;
  std::vector<int> output_producers_;
  std::map<int, std::unique_ptr<Kernel>> kernels_;
  RecomputePlan plan_;  // kCheckpoints only
};

}  // namespace ipusim::models
