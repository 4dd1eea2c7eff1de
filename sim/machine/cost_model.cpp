#include "sim/machine/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "models/kernels/optimizer.hpp"
#include "models/layers/recompute_plan.hpp"
#include "sim/core/checked.hpp"
#include "sim/core/time.hpp"
#include "sim/machine/collectives.hpp"
#include "sim/machine/optimizer_cost.hpp"
#include "sim/machine/planned_cost.hpp"
#include "sim/machine/stash_cost.hpp"

namespace ipusim::sim {
namespace {

using models::Model;
using schedules::StashKind;

struct Placement {
  std::vector<int> stage;     // per layer
  std::vector<int> substage;  // per layer
};

Placement place(const RunSpec& spec) {
  Placement p{std::vector<int>(spec.model.layers.size()),
              std::vector<int>(spec.model.layers.size())};
  for (int s = 0; s < int(spec.pipeline.stages.size()); ++s) {
    const auto& subs = spec.pipeline.stages[s].substage_layers;
    for (int j = 0; j < int(subs.size()); ++j) {
      for (int layer : subs[j]) {
        p.stage[layer] = s;
        p.substage[layer] = j;
      }
    }
  }
  return p;
}

// Under eight_bit_io the stage that reads the model input first converts its 8-bit pixels to
// the compute dtype and normalises them: one vector pass over its elements, in the forward (and
// again in a recomputation, which reads the stashed 8-bit input).
std::optional<models::Operation> normalise_input_operation(const RunSpec& spec,
                                                           const std::vector<int>& layers) {
  if (!spec.data.eight_bit_io || external_inputs(spec, layers).model_input == 0)
    return std::nullopt;
  const double elements = double(model_input_elements(spec));
  models::Operation normalise{"normalise_input", models::OpClass::kElementwise, {}, {}};
  normalise.forward = {elements, elements, 0, 1, elements};
  return normalise;
}

// The cost of `op` per micro-batch, its forward run `recomputations` times more in the backward.
// A recomputing stage runs a clone of the forward, with its own code (TF's recomputation stage
// is a separate computation). It runs on logical IPU `ipu`. Without `input_gradient` (a layer
// reading only the data) a planned product's backward is its weight gradient alone.
OperationCost price(const RunSpec& spec, const std::string& layer, const models::Operation& op,
                    int recomputations, int ipu, bool input_gradient = true) {
  const auto& hw = spec.hardware;
  const auto dtype = spec.pipeline.dtype;
  const auto batch = spec.pipeline.micro_batch_size;
  OperationCost cost;
  cost.layer = layer;
  cost.name = op.name;
  cost.op_class = op.op_class;
  const PlanSettings settings{spec.pipeline.memory_proportion(ipu),
                              spec.pipeline.partials_dtype.value_or(models::DType::kFp32),
                              input_gradient};
  const auto planned = planned_cost(hw, dtype, op, batch, settings);
  cost.forward = planned ? planned->forward : cost_pass(hw, dtype, op.op_class, op.forward, batch);
  cost.backward =
      planned ? planned->backward : cost_pass(hw, dtype, op.op_class, op.backward, batch);
  cost.forward_flops = op.forward.flops * double(batch);
  // Without its input gradient a product's backward does the forward's multiply-adds once.
  const bool weight_gradient_only = planned && !input_gradient && op.product;
  cost.backward_flops =
      (weight_gradient_only ? op.forward.flops : op.backward.flops) * double(batch);
  const std::int64_t forward_code = code_bytes(hw.code, op.forward, cost.forward);
  cost.code_bytes = forward_code;
  if (spec.pipeline.training)
    cost.code_bytes += code_bytes(hw.code, op.backward, cost.backward);
  if (recomputations > 0) {
    cost.recompute_cycles = recomputations * cost.forward.cycles;
    cost.code_bytes += forward_code;
  }
  // Half of a product's backward is its weight gradient (the second of its two compute sets,
  // of the same size as the first).
  if (planned)
    cost.plan = planned->plan;
  cost.weight_gradient_cycles = planned                           ? planned->weight_gradient_cycles
                                : op.backward.weight_elements > 0 ? cost.backward.cycles / 2
                                                                  : 0;
  return cost;
}

}  // namespace

// A layer's operations, or one "profiled" row when the config gives its cycles; its forward
// recomputed `recomputations` times; on logical IPU `ipu`.
std::vector<OperationCost> layer_operations(const RunSpec& spec, int layer, int recomputations,
                                            int ipu) {
  const auto& l = spec.model.layers[layer];
  if (l.cycles) {
    OperationCost profiled;
    profiled.layer = l.id;
    profiled.name = "profiled";
    profiled.forward.cycles = l.cycles->forward;
    profiled.backward.cycles = l.cycles->backward;
    profiled.recompute_cycles = recomputations * l.cycles->forward;
    // A profiled weighted layer splits its backward as a product does.
    profiled.weight_gradient_cycles =
        spec.model.info[layer].params > 0 ? l.cycles->backward / 2 : 0;
    return {profiled};
  }
  std::vector<OperationCost> costs;
  // Of a layer reading only the data, its first operation, a weighted product of that input,
  // needs no input gradient; the operations after it do.
  const auto& info = spec.model.info[layer];
  for (std::size_t i = 0; i < info.operations.size(); ++i) {
    const auto& op = info.operations[i];
    const bool data_product = info.reads_only_data && i == 0 && op.product && op.product->weights;
    costs.push_back(price(spec, l.id, op, recomputations, ipu, !data_product));
  }
  return costs;
}

namespace {

// Tensors produced at or before stage k (or the model input) and consumed after it cross the
// boundary k -> k+1; labels travel with them to the loss.
void add_copy_bytes(const RunSpec& spec, const Placement& where, CostModel& model) {
  const auto& stages = spec.pipeline.stages;
  const std::int64_t mb = spec.pipeline.micro_batch_size;
  for (int k = 0; k + 1 < int(stages.size()); ++k) {
    std::set<int> crossing;
    for (int layer = 0; layer < int(spec.model.layers.size()); ++layer) {
      if (where.stage[layer] <= k)
        continue;
      for (int producer : producers(spec.model, layer)) {
        if (producer < 0 || where.stage[producer] <= k)
          crossing.insert(producer);
      }
    }
    std::int64_t bytes = spec.pipeline.training ? 4 : 0;  // an int32 label per sample
    for (int producer : crossing)
      bytes += producer < 0 ? tensor_bytes(spec, -1) : tensor_bytes(spec, producer);
    for (int src : stages[k].ipus) {
      for (int dst : stages[k + 1].ipus) {
        if (src == dst)
          continue;
        model.copy_bytes[{k, src, dst, false}] = bytes * mb;
        model.copy_bytes[{k + 1, dst, src, true}] = (bytes - (spec.pipeline.training ? 4 : 0)) * mb;
      }
    }
  }
}

// The IPU each layer runs on.
std::vector<int> ipu_of_layers(const RunSpec& spec) {
  std::vector<int> ipu(spec.model.layers.size(), 0);
  for (const auto& stage : spec.pipeline.stages) {
    for (std::size_t j = 0; j < stage.substage_layers.size(); ++j) {
      for (int layer : stage.substage_layers[j])
        ipu[std::size_t(layer)] = stage.ipus[j];
    }
  }
  return ipu;
}

// A layer tied to an embedding on another IPU holds a copy of the word matrix and accumulates
// its own gradient of it; at the weight update it sends that gradient to the embedding's IPU,
// which updates the matrix once and sends it back, as Megatron-LM ties a GPT's first and last
// stages. Both IPUs pay the two transfers.
void add_tied_copies(const RunSpec& spec, CostModel& model) {
  const auto& p = spec.pipeline;
  const auto ipu = ipu_of_layers(spec);
  for (std::size_t layer = 0; layer < spec.model.layers.size(); ++layer) {
    const auto& user = spec.model.layers[layer];
    if (user.tied_to.empty())
      continue;
    const auto owner = std::size_t(spec.model.index_of(user.tied_to));
    if (ipu[layer] == ipu[owner])
      continue;
    const auto& word = spec.model.layers[owner].params;
    const std::int64_t n = core::checked_mul(word.vocab_size, word.hidden, "word matrix size");
    auto& items = model.static_memory[ipu[layer]];
    items.push_back({MemoryCategory::kWeights,
                     "copy of " + user.tied_to + "'s word matrix for " + user.id,
                     n * models::dtype_bytes(p.dtype)});
    if (!p.training)
      continue;
    const std::int64_t gradient = n * models::dtype_bytes(p.gradient_accumulation_dtype);
    items.push_back({MemoryCategory::kGradientAccumulators,
                     "gradient accumulators of " + user.id + "'s copy of the word matrix",
                     gradient});
    for (const int end : {ipu[layer], ipu[owner]})
      model.tied_exchange_bytes[std::size_t(end)] += gradient + n * models::dtype_bytes(p.dtype);
  }
}

// One replica's share of `total` when `group` replicas shard it, rounded up.
std::int64_t shard_of(std::int64_t total, int group) {
  return (total + group - 1) / group;
}

// Weights, accumulators and optimizer state of every layer, on its IPU (the optimizer state in
// streaming memory when offloaded, 1/group of it when the replicas shard it); returns the
// parameters per IPU.
std::vector<std::int64_t> add_layer_memory(const RunSpec& spec, CostModel& model) {
  const auto& p = spec.pipeline;
  const auto state_bytes = models::state_bytes_per_parameter(p.optimizer, p.dtype);
  const int group = sharding_group(spec);
  std::vector<std::int64_t> params(std::size_t(p.ipus_per_replica()), 0);
  for (const auto& stage : p.stages) {
    for (std::size_t j = 0; j < stage.substage_layers.size(); ++j) {
      const int ipu = stage.ipus[j];
      for (int layer : stage.substage_layers[j]) {
        const std::int64_t n = spec.model.info[layer].params;
        if (n == 0)
          continue;
        const auto& id = spec.model.layers[layer].id;
        auto& items = model.static_memory[ipu];
        items.push_back(
            {MemoryCategory::kWeights, "weights of " + id, n * models::dtype_bytes(p.dtype)});
        if (p.training) {
          items.push_back({MemoryCategory::kGradientAccumulators, "gradient accumulators of " + id,
                           n * models::dtype_bytes(p.gradient_accumulation_dtype)});
          if (state_bytes > 0) {
            auto& where = p.offload_weight_update_variables ? model.streaming_memory[ipu] : items;
            where.push_back({MemoryCategory::kOptimizerState, "optimizer state of " + id,
                             shard_of(n * state_bytes, group)});
          }
        }
        params[ipu] += n;
      }
    }
  }
  return params;
}

// The weight update of `params` parameters on one IPU: its cycles, the optimizer state it
// streams when offloaded, the gradients replicas reduce and the weights they gather. With
// sharded state each replica updates and streams only its shard of the parameters.
void add_weight_update(const RunSpec& spec, int ipu, std::int64_t params, CostModel& model) {
  const auto& p = spec.pipeline;
  const std::int64_t shard = shard_of(params, sharding_group(spec));
  if (shard > 0) {
    for (const auto& update : weight_update_operations(p.optimizer.kind, double(shard)))
      model.weight_update_cycles[ipu] +=
          cost_pass(spec.hardware, models::DType::kFp32, update.op_class, update.forward, 1).cycles;
  }
  if (p.offload_weight_update_variables)
    model.offload_bytes[ipu] =
        core::checked_mul(shard, models::state_bytes_per_parameter(p.optimizer, p.dtype) * 2,
                          "optimizer state byte count");
  model.gradient_bytes[ipu] = core::checked_mul(
      params, models::dtype_bytes(p.gradient_accumulation_dtype), "gradient byte count");
  model.weight_bytes[ipu] =
      core::checked_mul(params, models::dtype_bytes(p.dtype), "weight byte count");
}

// The control program of each IPU, then the code and vertex state of each layer's operations
// on the IPU that runs them.
void add_code_memory(const RunSpec& spec, CostModel& model) {
  const auto& code = spec.hardware.code;
  for (auto& items : model.static_memory) {
    if (code.control_bytes > 0)
      items.push_back({MemoryCategory::kAlwaysLive, "control program", code.control_bytes});
  }
  for (const auto& stage : model.stages) {
    for (const auto& sub : stage) {
      std::map<std::string, std::int64_t> by_layer;
      for (const auto& op : sub.operations)
        by_layer[op.layer] += op.code_bytes;
      for (const auto& [layer, bytes] : by_layer) {
        if (bytes > 0)
          model.static_memory[sub.ipu].push_back(
              {MemoryCategory::kAlwaysLive, "code and vertex state of " + layer, bytes});
      }
    }
  }
}

void add_ipu_memory(const RunSpec& spec, CostModel& model) {
  const int ipus = spec.pipeline.ipus_per_replica();
  model.static_memory.assign(ipus, {});
  model.streaming_memory.assign(ipus, {});
  model.weight_update_cycles.assign(ipus, 0);
  model.offload_bytes.assign(ipus, 0);
  model.gradient_bytes.assign(ipus, 0);
  model.weight_bytes.assign(ipus, 0);
  model.tied_exchange_bytes.assign(ipus, 0);
  add_code_memory(spec, model);
  const auto params = add_layer_memory(spec, model);
  add_tied_copies(spec, model);
  for (int ipu = 0; ipu < ipus; ++ipu) {
    std::int64_t copy_buffer = 0;
    for (const auto& [key, bytes] : model.copy_bytes) {
      if (std::get<1>(key) == ipu || std::get<2>(key) == ipu)
        copy_buffer += bytes;
    }
    if (copy_buffer > 0)
      model.static_memory[ipu].push_back(
          {MemoryCategory::kCopyBuffers, "inter-IPU copy buffers", copy_buffer});
    if (spec.pipeline.training)
      add_weight_update(spec, ipu, params[ipu], model);
  }
}

// A recomputing stage's R task runs its operations' recomputations; other stages' R tasks (the
// sequential schedule's) run the whole forward again.
std::int64_t recomputed_cycles(const SubstageCost& cost, StashKind kind) {
  if (!recomputes(kind))
    return cost.forward_cycles;
  std::int64_t cycles = 0;
  for (const auto& op : cost.operations)
    cycles += op.recompute_cycles;
  return cycles;
}

// Operations run one at a time, so a task holds one operation's temporaries at a time.
std::int64_t largest_temporaries(const RunSpec& spec, const models::LayerInfo& info) {
  std::int64_t largest = 0;
  for (const auto& op : info.operations) {
    const double elements = op.temporary_elements * double(spec.pipeline.micro_batch_size) +
                            op.temporary_weight_elements;
    largest = std::max(
        largest, std::int64_t(std::ceil(elements)) * models::dtype_bytes(spec.pipeline.dtype));
  }
  return largest;
}

// What the running task holds beside the micro-batches' stash entries, which the memory model
// charges on their own (the running micro-batch's among them): its operation's temporaries and
// what its micro-batch holds beyond its entry. That is the layers' outputs, the running
// activations, in the forward; in the backward also the state rebuilt from the entry. A
// layer's saved input is the output of the layer before it, so outputs, entry and rebuilt state
// overlap: the larger of the outputs and the held state stands for their union, not the sum.
void set_running_bytes(SubstageCost& cost, std::int64_t rebuilt) {
  const std::int64_t outputs = cost.live_bytes;
  const std::int64_t entry = cost.stash_bytes;
  cost.live_bytes = cost.temporary_bytes + std::max<std::int64_t>(outputs - entry, 0);
  cost.backward_live_bytes = cost.temporary_bytes + std::max(outputs, entry + rebuilt) - entry;
}

}  // namespace

SubstageCost substage_cost(const RunSpec& spec, const std::vector<int>& layers, int ipu,
                           StashKind stash, bool final_forward_stage) {
  const models::RecomputePlan plan = recompute_plan(spec, layers, stash, final_forward_stage);
  SubstageCost cost;
  cost.ipu = ipu;
  const double batch = double(spec.pipeline.micro_batch_size);
  for (int layer : layers) {
    const auto& info = spec.model.info[layer];
    const int runs = stash == StashKind::kStageInputs ? 1 : plan.runs(layer);
    for (auto& op : layer_operations(spec, layer, runs, ipu)) {
      cost.forward_cycles += op.forward.cycles;
      cost.backward_cycles += op.backward.cycles;
      cost.weight_grad_cycles += op.weight_gradient_cycles;
      cost.operations.push_back(std::move(op));
    }
    cost.forward_flops += info.forward_flops * batch;
    cost.backward_flops += info.backward_flops * batch;
    cost.live_bytes += info.live_bytes * spec.pipeline.micro_batch_size;
    cost.temporary_bytes = std::max(cost.temporary_bytes, largest_temporaries(spec, info));
    cost.params += info.params;
  }

  // The stash is read back, and the model input normalised again, when anything is recomputed.
  const int reads = stash == StashKind::kStageInputs || !plan.recomputations.empty() ? 1 : 0;
  if (const auto cast = stash_cast_operation(spec, layers, stash, plan)) {
    auto op = price(spec, "stash_fifo", *cast, reads, ipu);
    cost.forward_cycles += op.forward.cycles;
    cost.operations.push_back(std::move(op));
  }
  if (const auto normalise = normalise_input_operation(spec, layers)) {
    auto op = price(spec, "input", *normalise, reads, ipu);
    cost.forward_cycles += op.forward.cycles;
    cost.operations.push_back(std::move(op));
  }
  cost.recompute_cycles = recomputed_cycles(cost, stash);
  cost.stash_bytes = stash_bytes(spec, layers, stash, plan);
  set_running_bytes(cost, backward_state_bytes(spec, layers, stash, plan));
  return cost;
}

std::int64_t CostModel::copy(int stage, int ipu, int peer, bool gradient) const {
  const auto found = copy_bytes.find({stage, ipu, peer, gradient});
  return found == copy_bytes.end() ? 0 : found->second;
}

CostModel build_cost_model(const RunSpec& spec) {
  const schedules::Schedule& schedule = *spec.schedule;
  CostModel model;
  const auto stash = schedule.stash_kind();
  for (int s = 0; s < int(spec.pipeline.stages.size()); ++s) {
    const auto& stage = spec.pipeline.stages[s];
    std::vector<SubstageCost> subs;
    for (std::size_t j = 0; j < stage.substage_layers.size(); ++j) {
      subs.push_back(substage_cost(spec, stage.substage_layers[j], stage.ipus[j], stash[s],
                                   schedule.final_forward_stage(s)));
    }
    model.stages.push_back(std::move(subs));
  }
  add_copy_bytes(spec, place(spec), model);
  const std::int64_t sample_bytes = tensor_bytes(spec, -1) + (spec.pipeline.training ? 4 : 0);
  model.infeed_bytes = sample_bytes * spec.pipeline.micro_batch_size;
  model.host_input = host_input(spec, sample_bytes);
  model.outfeed_bytes = 4;
  add_ipu_memory(spec, model);
  return model;
}

}  // namespace ipusim::sim
