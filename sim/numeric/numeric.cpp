#include "sim/numeric/numeric.hpp"

#include <algorithm>
#include <cmath>

namespace ipusim::sim {
namespace {

using models::Stash;
using models::StashMode;
using models::TensorMap;
using schedules::Op;
using schedules::RecomputationMode;
using schedules::Task;

// The stash a stage keeps, as the cost model charges it: stage inputs for
// recompute_then_backpropagate, checkpoints for the interleaved recomputation.
StashMode stash_mode(const schedules::Schedule& schedule, int stage) {
  if (!schedule.recomputes(stage))
    return StashMode::kActivations;
  return schedule.recomputation() == RecomputationMode::kRecomputeThenBackpropagate
             ? StashMode::kStageInputs
             : StashMode::kCheckpoints;
}

std::string entry_name(std::int64_t repeat, std::int64_t microbatch) {
  return "micro-batch " + std::to_string(microbatch + 1) + " of weight update " +
         std::to_string(repeat + 1);
}

std::vector<int> all_layers(const models::Model& model) {
  std::vector<int> layers(model.layers.size());
  for (std::size_t i = 0; i < layers.size(); ++i)
    layers[i] = static_cast<int>(i);
  return layers;
}

}  // namespace

StashFifo::StashFifo(std::string name, std::int64_t capacity, bool output_register)
    : name_(std::move(name)),
      ring_(static_cast<std::size_t>(capacity)),
      has_output_register_(output_register) {
  IPUSIM_CHECK(capacity >= 0);
}

void StashFifo::push(Stash stash) {
  entry_bytes_ = stash.bytes();
  if (ring_.empty()) {
    if (has_output_register_)
      output_ = std::move(stash);
    note_held();
    return;
  }
  if (count_ == ring_.size()) {
    std::optional<Stash>& oldest = ring_[oldest_];
    bytes_ -= oldest->bytes();
    if (has_output_register_)
      output_ = std::move(oldest);
    oldest.reset();
    oldest_ = (oldest_ + 1) % ring_.size();
    --count_;
  }
  bytes_ += entry_bytes_;
  ring_[(oldest_ + count_) % ring_.size()] = std::move(stash);
  ++count_;
  peak_bytes_ = std::max(peak_bytes_, bytes_);
  note_held();
}

void StashFifo::note_held() {
  peak_held_bytes_ = std::max(peak_held_bytes_, bytes_ + (output_ ? output_->bytes() : 0));
}

Stash StashFifo::pop(std::int64_t repeat, std::int64_t microbatch) {
  const auto holds = [&](const std::optional<Stash>& entry) {
    return entry && entry->repeat == repeat && entry->microbatch == microbatch;
  };
  if (holds(output_)) {
    Stash stash = std::move(*output_);
    output_.reset();
    return stash;
  }
  // With no push left to shift it out (the ramp-down), the next entry is still in the ring.
  if (count_ > 0 && holds(ring_[oldest_])) {
    Stash stash = std::move(*ring_[oldest_]);
    ring_[oldest_].reset();
    bytes_ -= stash.bytes();
    oldest_ = (oldest_ + 1) % ring_.size();
    --count_;
    return stash;
  }
  throw StashUnderflow("stash underflow: the FIFO of " + name_ + " (capacity " +
                       std::to_string(ring_.size()) + ") holds no entry for " +
                       entry_name(repeat, microbatch));
}

models::TrainingOptions training_options(const RunSpec& spec) {
  const PipelineSpec& p = spec.pipeline;
  return {.seed = p.seed,
          .optimizer = p.optimizer,
          .accumulator_dtype = p.gradient_accumulation_dtype,
          .reduction = p.gradient_accumulation_mean ? models::GradientReduction::kMean
                                                    : models::GradientReduction::kSum};
}

void micro_batch(const RunSpec& spec, models::DataSource& data, std::int64_t step,
                 std::int64_t microbatch, models::Tensor& inputs, std::vector<int>& labels) {
  const PipelineSpec& p = spec.pipeline;
  const std::int64_t index = step * p.gradient_accumulation_count + microbatch;
  data.batch(index * p.micro_batch_size, p.micro_batch_size, inputs, labels);
}

// One sub-stage: its executor, its FIFO and the stash its recomputation rebuilt for the
// backward that follows (live for one micro-batch only).
struct NumericPipeline::SubStage {
  std::unique_ptr<models::StageExecutor> executor;
  std::unique_ptr<StashFifo> fifo;
  std::optional<Stash> recomputed;
};

// A micro-batch between its first forward and its last backward: the tensors that cross stage
// boundaries, and how many sub-stage tasks are still to run.
struct NumericPipeline::InFlight {
  std::vector<int> labels;
  TensorMap activations;  // the model input and stage outputs, until every forward has run
  TensorMap gradients;    // gradients of stage outputs, until their stage's backward
  // Per stage: input gradients of the sub-stages whose backward has run, by sub-stage.
  std::map<int, std::map<int, TensorMap>> pending;
  int forwards_left = 0;
  int backwards_left = 0;
};

NumericPipeline::NumericPipeline(const RunSpec& spec, models::ParameterStore& parameters,
                                 models::DataSource& data, NumericOptions options)
    : spec_(spec), parameters_(parameters), data_(data), options_(options) {
  IPUSIM_CHECK(spec.model.trainable);
  const schedules::Schedule& schedule = *spec.schedule;
  const std::vector<std::int64_t> depth = schedule.stash_depth();
  ipu_layers_.resize(static_cast<std::size_t>(spec.pipeline.ipus_per_replica()));
  const auto& stages = spec.pipeline.stages;
  for (int s = 0; s < static_cast<int>(stages.size()); ++s) {
    std::int64_t capacity = depth[static_cast<std::size_t>(s)];
    if (s == options_.short_fifo_stage) {
      IPUSIM_CHECK(capacity > 0);
      --capacity;
    }
    auto& subs = stages_.emplace_back();
    const auto& layers = stages[s].substage_layers;
    for (std::size_t j = 0; j < layers.size(); ++j) {
      auto sub = std::make_unique<SubStage>();
      const models::CheckpointOptions checkpoints{spec.pipeline.recompute_checkpoint_every_layer,
                                                  schedule.final_forward_stage(s)};
      sub->executor = std::make_unique<models::StageExecutor>(
          spec.model, layers[j], spec.pipeline.micro_batch_size, parameters,
          stash_mode(schedule, s), checkpoints);
      const std::string name = "stage " + std::to_string(s) +
                               (layers.size() > 1 ? " sub-stage " + std::to_string(j) : "");
      sub->fifo = std::make_unique<StashFifo>(name, capacity, schedule.step_based());
      subs.push_back(std::move(sub));
      auto& own = ipu_layers_.at(static_cast<std::size_t>(stages[s].ipus[j]));
      own.insert(own.end(), layers[j].begin(), layers[j].end());
    }
  }
}

NumericPipeline::~NumericPipeline() = default;

const StashFifo& NumericPipeline::fifo(int stage, int substage) const {
  return *stages_.at(static_cast<std::size_t>(stage)).at(static_cast<std::size_t>(substage))->fifo;
}

void NumericPipeline::on_task(const TaskSpan& span) {
  switch (span.task.op) {
    case Op::kForward:
      forward(span.task);
      break;
    case Op::kRecompute:
      recompute(span.task);
      break;
    case Op::kBackward:
      backward(span.task);
      break;
    default:  // W (see the top of the header), feeds: nothing to compute
      break;
  }
}

NumericPipeline::InFlight& NumericPipeline::in_flight(std::int64_t microbatch) {
  const auto found = in_flight_.find(microbatch);
  if (found != in_flight_.end())
    return found->second;
  InFlight& flight = in_flight_[microbatch];
  models::Tensor inputs;
  micro_batch(spec_, data_, step_, microbatch, inputs, flight.labels);
  flight.activations.emplace(models::kModelInput, std::move(inputs));
  for (const auto& subs : stages_)
    flight.forwards_left += static_cast<int>(subs.size());
  flight.backwards_left = spec_.pipeline.training ? flight.forwards_left : 0;
  return flight;
}

void NumericPipeline::forward(const Task& task) {
  SubStage& sub = *stages_[task.stage][task.substage];
  InFlight& flight = in_flight(task.microbatch);
  TensorMap inputs;
  for (const int producer : sub.executor->input_producers())
    inputs.emplace(producer, flight.activations.at(producer));
  models::StageForward result =
      sub.executor->forward(inputs, {task.microbatch, step_, flight.labels});
  const auto loss = result.outputs.find(static_cast<int>(spec_.model.layers.size()) - 1);
  if (loss != result.outputs.end())
    record_loss(task.microbatch, loss->second[0]);
  flight.activations.merge(result.outputs);
  if (spec_.pipeline.training)
    sub.fifo->push(std::move(result.stash));
  if (--flight.forwards_left == 0)
    flight.activations.clear();
  finish_if_done(task.microbatch);
}

void NumericPipeline::record_loss(std::int64_t microbatch, float loss) {
  const auto step = static_cast<std::size_t>(step_);
  const auto m = static_cast<std::size_t>(microbatch);
  losses_.resize(std::max(losses_.size(), step + 1));
  losses_[step].resize(std::max(losses_[step].size(), m + 1));
  losses_[step][m] = loss;
}

void NumericPipeline::recompute(const Task& task) {
  SubStage& sub = *stages_[task.stage][task.substage];
  IPUSIM_CHECK(!sub.recomputed);
  sub.recomputed = sub.executor->recompute(sub.fifo->pop(step_, task.microbatch));
}

void NumericPipeline::backward(const Task& task) {
  SubStage& sub = *stages_[task.stage][task.substage];
  InFlight& flight = in_flight_.at(task.microbatch);
  Stash stash;
  if (spec_.schedule->recomputes(task.stage)) {
    IPUSIM_CHECK(sub.recomputed && sub.recomputed->microbatch == task.microbatch);
    stash = std::move(*sub.recomputed);
    sub.recomputed.reset();
  } else {
    stash = sub.fifo->pop(step_, task.microbatch);
  }
  TensorMap output_gradients;
  for (const int producer : sub.executor->output_producers()) {
    const auto found = flight.gradients.find(producer);
    if (found == flight.gradients.end())
      continue;
    output_gradients.insert(flight.gradients.extract(found));
  }
  flight.pending[task.stage][task.substage] = sub.executor->backward(output_gradients, stash);
  if (flight.pending[task.stage].size() == stages_[task.stage].size())
    merge_gradients(task.stage, flight);
  --flight.backwards_left;
  finish_if_done(task.microbatch);
}

// Sums into the stage outputs' gradients in decreasing stage order (the backwards arrive that
// way) and, within a stage, in decreasing sub-stage order, as the reference's reverse
// topological order does.
void NumericPipeline::merge_gradients(int stage, InFlight& flight) {
  auto& by_substage = flight.pending[stage];
  for (auto sub = by_substage.rbegin(); sub != by_substage.rend(); ++sub) {
    for (auto& [producer, gradient] : sub->second)
      models::add_gradient(flight.gradients, producer, std::move(gradient), spec_.model.dtype);
  }
  flight.pending.erase(stage);
}

void NumericPipeline::finish_if_done(std::int64_t microbatch) {
  const auto found = in_flight_.find(microbatch);
  if (found->second.forwards_left == 0 && found->second.backwards_left == 0)
    in_flight_.erase(found);
}

void NumericPipeline::on_weight_update(const WeightUpdateSpan& span) {
  const std::vector<int>& layers = ipu_layers_.at(static_cast<std::size_t>(span.ipu));
  if (options_.keep_first_gradients && step_ == 0) {
    for (const int layer : layers)
      first_gradients_[layer] = parameters_.reduced_gradients(layer);
  }
  parameters_.apply_update(layers);
}

void NumericPipeline::on_end(core::Cycles /*end*/) {
  IPUSIM_CHECK(in_flight_.empty());
  for (const auto& subs : stages_) {
    for (const auto& sub : subs)
      IPUSIM_CHECK(sub->fifo->empty() && !sub->recomputed);
  }
  ++step_;
}

std::vector<std::vector<float>> run_reference(const RunSpec& spec,
                                              models::ParameterStore& parameters,
                                              models::DataSource& data, std::int64_t first_step,
                                              std::int64_t steps) {
  const models::Model& model = spec.model;
  models::StageExecutor whole(model, all_layers(model), spec.pipeline.micro_batch_size, parameters);
  const int last = static_cast<int>(model.layers.size()) - 1;
  std::vector<std::vector<float>> losses;
  models::Tensor inputs;
  std::vector<int> labels;
  for (std::int64_t step = first_step; step < first_step + steps; ++step) {
    auto& step_losses = losses.emplace_back();
    for (std::int64_t m = 0; m < spec.pipeline.gradient_accumulation_count; ++m) {
      micro_batch(spec, data, step, m, inputs, labels);
      models::StageForward forward =
          whole.forward({{models::kModelInput, inputs}}, {m, step, labels});
      step_losses.push_back(forward.outputs.at(last)[0]);
      if (spec.pipeline.training)
        whole.backward({}, forward.stash);
    }
    if (spec.pipeline.training)
      parameters.apply_update();
  }
  return losses;
}

ParameterDifference compare_parameters(const models::Model& model, const models::ParameterStore& a,
                                       const models::ParameterStore& b) {
  ParameterDifference difference;
  const auto compare = [&](std::span<const models::Tensor> pa, std::span<const models::Tensor> pb) {
    IPUSIM_CHECK(pa.size() == pb.size());
    for (std::size_t i = 0; i < pa.size(); ++i) {
      difference.bit_identical = difference.bit_identical && models::bit_identical(pa[i], pb[i]);
      for (std::int64_t e = 0; e < pa[i].elements(); ++e) {
        difference.max_abs =
            std::max(difference.max_abs, std::abs(double(pa[i][e]) - double(pb[i][e])));
      }
    }
  };
  for (int layer = 0; layer < static_cast<int>(model.layers.size()); ++layer) {
    compare(a.parameters(layer), b.parameters(layer));
    compare(a.running_statistics(layer), b.running_statistics(layer));
  }
  return difference;
}

}  // namespace ipusim::sim
