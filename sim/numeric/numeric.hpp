#pragma once
// The numeric mode of the replay. NumericPipeline listens to the replay and, as each compute
// task starts, runs its sub-stage's kernels on its micro-batch: F runs the forward and pushes
// the stash onto the sub-stage's FIFO, R pops it and really recomputes, B pops (or takes the
// recomputed stash) and runs the backward, adding parameter gradients in micro-batch order; the
// weight update applies the optimizer to each IPU's layers. The reference runs the same
// micro-batches through the whole model as one stage, in the same accumulation order; the two
// must agree bit for bit.
//
// Micro-batch m of weight update s (counted over the whole run, repeats included) holds the
// data stream's samples (s * M + m) * b .. (s * M + m + 1) * b - 1, for b the micro-batch size
// and M the gradient accumulation count; dropout masks are keyed by (m, s).
//
// Concurrent stages: their sub-stages are independent (validated), so each sub-stage has its
// own executor and FIFO and runs when its own task arrives. Gradients that several sub-stages
// of one stage send to the same tensor are summed in decreasing sub-stage order, once the whole
// stage has run its backward.
//
// Tied weights: the embedding and the dense layer tied to it run in different stages, on one
// IPU or two, whose backwards interleave. Each fills its own accumulator for the word matrix in
// micro-batch order, and the embedding's weight update sums them in layer order (see
// models::ParameterStore), so neither the interleaving nor the IPUs change a bit.
//
// Zero-bubble's split weight gradient: B runs the whole backward (input and weight gradients)
// and W does nothing numerically; accumulation still happens in micro-batch order, since every
// stage runs its B tasks in micro-batch order.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/data/data.hpp"
#include "models/kernels/stage_executor.hpp"
#include "sim/core/error.hpp"
#include "sim/replay/replay_observer.hpp"
#include "sim/spec/spec.hpp"

namespace ipusim::sim {

// A task read a stash entry that its FIFO no longer (or never) held: the FIFO was shallower
// than the schedule needs. With the schedule's own depths this is a bug in ipusim.
class StashUnderflow : public core::InternalError {
 public:
  using core::InternalError::InternalError;
};

// The pipelined numbers differ from the reference's (exit code kNumericMismatch).
class NumericMismatch : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One sub-stage's stash FIFO, a ring buffer of `capacity` entries (one micro-batch each). A
// push onto a full ring drops its oldest entry, as a hardware FIFO would. Graphcore's FIFOs
// (step-based schedules) also have an output tensor: a push onto a full ring moves the oldest
// entry there, where the stage's next read finds it ("depth d keeps d buffers plus an output
// tensor, the output being the input from d executions earlier"; depth 0 is a plain copy).
// The memory model charges the d buffers, not the output tensor. Reads must come in the order
// of the pushes; a read of an entry that is not there throws StashUnderflow.
class StashFifo {
 public:
  // `name` says whose FIFO it is in errors ("stage 0", "stage 1 sub-stage 0").
  StashFifo(std::string name, std::int64_t capacity, bool output_register);

  void push(models::Stash stash);
  // Takes the entry of micro-batch `microbatch` of weight update `repeat`.
  models::Stash pop(std::int64_t repeat, std::int64_t microbatch);

  std::int64_t capacity() const { return static_cast<std::int64_t>(ring_.size()); }
  bool empty() const { return count_ == 0 && !output_; }
  // Bytes of one entry as the memory model counts them (the last pushed).
  std::int64_t entry_bytes() const { return entry_bytes_; }
  // The most bytes the ring's buffers held at once (the output tensor excluded).
  std::int64_t peak_bytes() const { return peak_bytes_; }
  // The most bytes of entries pushed and not yet popped: the buffers and the output tensor (or
  // a depth-0 FIFO's plain copy), what the memory model holds for the stage.
  std::int64_t peak_held_bytes() const { return peak_held_bytes_; }

 private:
  std::string name_;
  std::vector<std::optional<models::Stash>> ring_;
  std::size_t oldest_ = 0;
  std::size_t count_ = 0;
  bool has_output_register_;
  std::optional<models::Stash> output_;
  std::int64_t bytes_ = 0;
  std::int64_t peak_bytes_ = 0;
  std::int64_t peak_held_bytes_ = 0;
  std::int64_t entry_bytes_ = 0;

  void note_held();
};

// What the pipeline and the reference train with: the spec's seed, optimizer and accumulation.
models::TrainingOptions training_options(const RunSpec& spec);

// The stream samples of micro-batch `microbatch` of weight update `step` (see the top).
void micro_batch(const RunSpec& spec, models::DataSource& data, std::int64_t step,
                 std::int64_t microbatch, models::Tensor& inputs, std::vector<int>& labels);

// What a NumericPipeline does besides running the kernels, for tests and `ipusim train`.
struct NumericOptions {
  // Fault injection for tests: this stage's FIFOs get one entry fewer than the schedule says.
  int short_fifo_stage = -1;
  // Keep the reduced gradients of the first weight update, as the optimizer applies them.
  bool keep_first_gradients = false;
};

// Runs the kernels inside the replay (see the top of this file). Replay it once per weight
// update; parameters, data position and step count carry over from one replay to the next.
class NumericPipeline final : public ReplayObserver {
 public:
  // `spec`, `parameters` and `data` must outlive the pipeline. Needs numeric kernels for every
  // layer and a trainable model.
  NumericPipeline(const RunSpec& spec, models::ParameterStore& parameters, models::DataSource& data,
                  NumericOptions options = {});
  ~NumericPipeline() override;

  void on_task(const TaskSpan& span) override;
  void on_weight_update(const WeightUpdateSpan& span) override;
  void on_end(core::Cycles end) override;

  // Weight updates (replays) completed.
  std::int64_t steps() const { return step_; }
  // The loss of every micro-batch, by weight update then micro-batch.
  const std::vector<std::vector<float>>& losses() const { return losses_; }
  const StashFifo& fifo(int stage, int substage) const;
  // By layer: the gradients the first weight update applied to parameters(layer), a tied word
  // matrix's summed over its users (with keep_first_gradients).
  const std::map<int, std::vector<models::Tensor>>& first_gradients() const {
    return first_gradients_;
  }

 private:
  struct SubStage;
  struct InFlight;

  InFlight& in_flight(std::int64_t microbatch);
  void forward(const schedules::Task& task);
  void record_loss(std::int64_t microbatch, float loss);
  void recompute(const schedules::Task& task);
  void backward(const schedules::Task& task);
  void merge_gradients(int stage, InFlight& flight);
  void finish_if_done(std::int64_t microbatch);

  const RunSpec& spec_;
  models::ParameterStore& parameters_;
  models::DataSource& data_;
  NumericOptions options_;
  std::vector<std::vector<std::unique_ptr<SubStage>>> stages_;  // [stage][substage]
  std::vector<std::vector<int>> ipu_layers_;                    // layers each IPU updates
  std::map<std::int64_t, InFlight> in_flight_;                  // by micro-batch
  std::int64_t step_ = 0;
  std::vector<std::vector<float>> losses_;
  std::map<int, std::vector<models::Tensor>> first_gradients_;
};

// Runs weight updates `first_step` .. `first_step + steps - 1` of the whole model on one device
// (one stage, no pipeline) over `parameters`; returns the losses as NumericPipeline does.
std::vector<std::vector<float>> run_reference(const RunSpec& spec,
                                              models::ParameterStore& parameters,
                                              models::DataSource& data, std::int64_t first_step,
                                              std::int64_t steps);

// The largest absolute difference between two stores' parameters (and batch_norm running
// statistics), and whether every bit agrees.
struct ParameterDifference {
  double max_abs = 0;
  bool bit_identical = true;
};
ParameterDifference compare_parameters(const models::Model& model, const models::ParameterStore& a,
                                       const models::ParameterStore& b);

}  // namespace ipusim::sim
