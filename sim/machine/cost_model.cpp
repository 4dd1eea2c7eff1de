#include "sim/machine/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "models/optimizer.hpp"
#include "sim/core/checked.hpp"
#include "sim/core/time.hpp"

namespace ipusim::sim {
namespace {

using models::Model;
using schedules::StashKind;

// Optimizer arithmetic per parameter in the weight update (reads, FMAs, a square root for
// Adam); the update is memory-bound on any realistic IPU, so these only matter for tiny models.
double update_flops_per_param(models::OptimizerConfig::Kind kind) {
  switch (kind) {
    case models::OptimizerConfig::Kind::kSgd:
      return 2;
    case models::OptimizerConfig::Kind::kMomentum:
      return 4;
    case models::OptimizerConfig::Kind::kAdam:
      return 12;
  }
  return 2;
}

// The bytes of one sample of the tensor produced by `layer` (-1: the model input).
std::int64_t tensor_bytes(const RunSpec& spec, int layer) {
  if (layer >= 0)
    return spec.model.info[layer].activation_bytes;
  std::int64_t elements = 1;
  for (auto dim : spec.model.input_shape)
    elements *= dim;
  return elements * models::dtype_bytes(spec.model.dtype);
}

// The producers (layer index, or -1 for the model input) of a layer's inputs.
std::vector<int> producers(const Model& model, int layer) {
  const auto& inputs = model.graph.inputs_of(layer);
  if (inputs.empty())
    return {-1};
  return inputs;
}

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

// Bytes per sample that enter a sub-stage from outside it (the model input or other stages).
std::int64_t external_input_bytes(const RunSpec& spec, const std::vector<int>& layers) {
  std::set<int> inside(layers.begin(), layers.end());
  std::set<int> seen;
  std::int64_t bytes = 0;
  for (int layer : layers) {
    for (int producer : producers(spec.model, layer)) {
      if (inside.count(producer) || !seen.insert(producer).second)
        continue;
      bytes += tensor_bytes(spec, producer);
    }
  }
  return bytes;
}

std::int64_t stash_bytes_per_sample(const RunSpec& spec, const std::vector<int>& layers,
                                    StashKind kind) {
  std::int64_t saved = 0;
  std::int64_t stateful = 0;
  std::int64_t checkpoints = 0;
  for (int layer : layers) {
    const auto& info = spec.model.info[layer];
    saved += info.saved_bytes;
    stateful += info.stateful_bytes;
    if (spec.model.layers[layer].checkpoint)
      checkpoints += info.saved_bytes;
  }
  switch (kind) {
    case StashKind::kNone:
      return 0;
    case StashKind::kActivations:
      return saved;
    case StashKind::kStageInputs:
      return external_input_bytes(spec, layers) + stateful;
    case StashKind::kCheckpoints:
      return external_input_bytes(spec, layers) + checkpoints + stateful;
  }
  return saved;
}

std::int64_t layer_cycles(const RunSpec& spec, int layer, bool backward) {
  const auto& l = spec.model.layers[layer];
  if (l.cycles)
    return backward ? l.cycles->backward : l.cycles->forward;
  const auto& info = spec.model.info[layer];
  const double batch = double(spec.pipeline.micro_batch_size);
  const double flops = (backward ? info.backward_flops : info.forward_flops) * batch;
  const double bytes =
      double(backward ? info.bytes_moved_backward : info.bytes_moved_forward) * batch +
      double(info.weight_bytes);
  return compute_cycles(spec.hardware, spec.pipeline.dtype, flops, bytes);
}

SubstageCost substage_cost(const RunSpec& spec, const std::vector<int>& layers, int ipu,
                           StashKind stash) {
  SubstageCost cost;
  cost.ipu = ipu;
  const double batch = double(spec.pipeline.micro_batch_size);
  for (int layer : layers) {
    const auto& info = spec.model.info[layer];
    cost.forward_cycles += layer_cycles(spec, layer, false);
    const std::int64_t backward = layer_cycles(spec, layer, true);
    cost.backward_cycles += backward;
    // Half of a weighted layer's backward is its weight gradient (the same products as the
    // input gradient); layers without weights have no W part.
    if (info.params > 0)
      cost.weight_grad_cycles += backward / 2;
    cost.forward_flops += info.forward_flops * batch;
    cost.backward_flops += info.backward_flops * batch;
    cost.live_bytes += info.activation_bytes * spec.pipeline.micro_batch_size;
    cost.params += info.params;
  }
  cost.recompute_cycles = cost.forward_cycles;
  cost.stash_bytes = stash_bytes_per_sample(spec, layers, stash) * spec.pipeline.micro_batch_size;
  return cost;
}

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

// Weights, accumulators and optimizer state of every layer, on its IPU (the optimizer state in
// streaming memory when offloaded); returns the parameters per IPU.
std::vector<std::int64_t> add_layer_memory(const RunSpec& spec, CostModel& model) {
  const auto& p = spec.pipeline;
  const auto state_elements = models::state_elements_per_parameter(p.optimizer.kind);
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
          if (state_elements > 0) {
            auto& where = p.offload_weight_update_variables ? model.streaming_memory[ipu] : items;
            where.push_back({MemoryCategory::kOptimizerState, "optimizer state of " + id,
                             n * state_elements * 4});
          }
        }
        params[ipu] += n;
      }
    }
  }
  return params;
}

// The weight update of `params` parameters on one IPU: its cycles, the optimizer state it
// streams when offloaded, and the gradients replicas all-reduce.
void add_weight_update(const RunSpec& spec, int ipu, std::int64_t params, CostModel& model) {
  const auto& p = spec.pipeline;
  const auto state_elements = models::state_elements_per_parameter(p.optimizer.kind);
  const double n = double(params);
  const double bytes =
      n * (2.0 * models::dtype_bytes(p.dtype) + models::dtype_bytes(p.gradient_accumulation_dtype) +
           8.0 * state_elements);
  model.weight_update_cycles[ipu] = compute_cycles(
      spec.hardware, models::DType::kFp32, n * update_flops_per_param(p.optimizer.kind), bytes);
  if (p.offload_weight_update_variables)
    model.offload_bytes[ipu] =
        core::checked_mul(params, state_elements * 4 * 2, "optimizer state byte count");
  model.gradient_bytes[ipu] = core::checked_mul(
      params, models::dtype_bytes(p.gradient_accumulation_dtype), "gradient byte count");
}

void add_ipu_memory(const RunSpec& spec, CostModel& model) {
  const int ipus = spec.pipeline.ipus_per_replica();
  model.static_memory.assign(ipus, {});
  model.streaming_memory.assign(ipus, {});
  model.weight_update_cycles.assign(ipus, 0);
  model.offload_bytes.assign(ipus, 0);
  model.gradient_bytes.assign(ipus, 0);
  for (int ipu = 0; ipu < ipus; ++ipu) {
    if (spec.hardware.always_live_bytes > 0) {
      model.static_memory[ipu].push_back(
          {MemoryCategory::kAlwaysLive, "code and control", spec.hardware.always_live_bytes});
    }
  }
  const auto params = add_layer_memory(spec, model);
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

}  // namespace

std::int64_t compute_cycles(const HardwareSpec& hardware, models::DType dtype, double flops,
                            double bytes) {
  const double flop_seconds = flops / (hardware.peak_flops(dtype) * hardware.efficiency);
  const double byte_seconds = hardware.memory_bandwidth > 0 ? bytes / hardware.memory_bandwidth : 0;
  return core::cycles_from_seconds(std::max(flop_seconds, byte_seconds), hardware.clock_hz);
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
      subs.push_back(substage_cost(spec, stage.substage_layers[j], stage.ipus[j], stash[s]));
    }
    model.stages.push_back(std::move(subs));
  }
  add_copy_bytes(spec, place(spec), model);
  model.infeed_bytes =
      (tensor_bytes(spec, -1) + (spec.pipeline.training ? 4 : 0)) * spec.pipeline.micro_batch_size;
  model.outfeed_bytes = 4;
  add_ipu_memory(spec, model);
  return model;
}

}  // namespace ipusim::sim
