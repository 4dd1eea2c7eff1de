#include "sim/spec/spec_checks.hpp"

#include <algorithm>
#include <string>

namespace ipusim::sim {
namespace {

using core::ConfigNode;

// Why offload_activations would have nothing to act on: it moves Graphcore's stash FIFOs to
// streaming memory, and some runs keep none; empty when it acts.
std::string offload_without_fifos(const RunSpec& spec) {
  const auto& schedule = *spec.schedule;
  if (!schedule.step_based()) {
    const std::string rest =
        " schedule has none (its stash is held in flight): use grouped or interleaved";
    return "offload_activations moves Graphcore's stash FIFOs to streaming memory, and the " +
           schedule.name() + rest;
  }
  const std::string nothing = "offload_activations has nothing to move: ";
  if (!spec.pipeline.training)
    return nothing + "an inference pipeline keeps no stash";
  const auto depth = schedule.stash_depth();
  if (std::any_of(depth.begin(), depth.end(), [](std::int64_t d) { return d > 0; }))
    return "";
  if (depth.size() == 1)
    return nothing + "a single stage keeps no stash FIFO";
  return nothing + "the " + schedule.name() + " schedule keeps no stash FIFOs";
}

// An option that is accepted must act.
void check_offload_activations(const RunSpec& spec, const ConfigNode& root) {
  if (!spec.pipeline.offload_activations)
    return;
  const std::string why = offload_without_fifos(spec);
  if (!why.empty())
    root.at("pipeline").at("offload_activations").fail(why);
}

// Replicas spanning several IPU-Link domains must fill them alike: the collectives are
// hierarchical over whole domains.
void check_replica_layout(const RunSpec& spec, const ConfigNode& root) {
  std::string error;
  replica_layout(spec.pipeline.replication_factor, spec.pipeline.ipus_per_replica(),
                 spec.hardware.ipus_per_ild, &error);
  if (!error.empty())
    root.at("pipeline").at("replication_factor").fail(error);
}

// Each poprun instance drives whole replicas on one host, and a host runs whole instances.
void check_instances(const RunSpec& spec, const ConfigNode& root) {
  const auto& p = spec.pipeline;
  const int per_instance = instance_replicas(spec.hardware, p);
  if (p.replicas_per_instance == 0)
    return;
  const auto fail = [&root](const std::string& why) {
    root.at("pipeline").at("replicas_per_instance").fail(why);
  };
  const std::string each = std::to_string(per_instance) + " replicas an instance";
  if (p.replication_factor % per_instance != 0) {
    fail(each + " cannot share " + std::to_string(p.replication_factor) +
         " replicas alike: expected a divisor of replication_factor");
  }
  const int per_host = replicas_per_host(spec.hardware, p);
  if (per_host % per_instance != 0) {
    fail(each + " do not fill hosts of " + std::to_string(per_host) +
         " replicas (hardware.ipus_per_host) alike: an instance's replicas sit on one host, and "
         "each host runs the same whole number of instances");
  }
}

// A stash dtype other than the compute dtype acts on the stashes that recomputation reads back
// (stage inputs and checkpoints, PopART BERT's activation_checkpoint_dtype); a run with none
// would ignore it.
void check_stash_dtype(const RunSpec& spec, const ConfigNode& root) {
  if (spec.pipeline.stash_dtype == spec.pipeline.dtype)
    return;
  const auto kinds = spec.schedule->stash_kind();
  if (std::any_of(kinds.begin(), kinds.end(), [](schedules::StashKind kind) {
        return kind == schedules::StashKind::kStageInputs ||
               kind == schedules::StashKind::kCheckpoints;
      }))
    return;
  const std::string what =
      "stash_dtype sets the type of the stage inputs and checkpoints a recomputing pipeline "
      "stashes, and ";
  const auto node = root.at("pipeline").at("stash_dtype");
  if (!spec.pipeline.training)
    node.fail(what + "an inference pipeline stashes nothing");
  node.fail(what + "this run stashes none (recomputation_mode " +
            schedules::to_string(spec.pipeline.recomputation) + " under the " +
            spec.schedule->name() +
            " schedule): use recompute_then_backpropagate, "
            "recompute_and_backpropagate_interleaved or auto");
}

// Why recompute_checkpoint_every_layer would not act: no stage of this run recomputes from
// checkpoints; empty when one does.
std::string checkpoints_unused(const RunSpec& spec) {
  const auto kinds = spec.schedule->stash_kind();
  if (std::find(kinds.begin(), kinds.end(), schedules::StashKind::kCheckpoints) != kinds.end())
    return "";
  const std::string what =
      "recompute_checkpoint_every_layer stashes each layer's output for the backward to "
      "recompute from, and ";
  if (!spec.pipeline.training)
    return what + "an inference pipeline recomputes nothing";
  const std::string schedule = spec.schedule->name();
  return what + "this run recomputes from no checkpoints (recomputation_mode " +
         schedules::to_string(spec.pipeline.recomputation) + " under the " + schedule +
         " schedule): set recomputation_mode to recompute_and_backpropagate_interleaved (or "
         "auto, which picks it where the schedule has it); recompute_then_backpropagate "
         "refuses it too, as it rebuilds each stage whole from its inputs";
}

// An option that is accepted must act.
void check_checkpoint_every_layer(const RunSpec& spec, const ConfigNode& root) {
  if (!spec.pipeline.recompute_checkpoint_every_layer)
    return;
  const std::string why = checkpoints_unused(spec);
  if (!why.empty())
    root.at("pipeline").at("recompute_checkpoint_every_layer").fail(why);
}

// 8-bit IO carries pixels: a model with an embedding reads token ids from its input.
void check_eight_bit_io(const RunSpec& spec, const ConfigNode& root) {
  if (!spec.data.eight_bit_io)
    return;
  for (const models::Layer& layer : spec.model.layers) {
    if (layer.type == models::LayerType::kEmbedding)
      root.at("data")
          .at("eight_bit_io")
          .fail("eight_bit_io sends images to the IPU as 8-bit integers, but layer '" + layer.id +
                "' (embedding) reads token ids from the model input");
  }
}

// poplin's options act on planned plans only.
void refuse_unless_planned(const RunSpec& spec, const ConfigNode& node, const std::string& key) {
  if (spec.hardware.operations.pricing != Pricing::kPlanned)
    node.fail(key +
              " shapes the plans of planned pricing, and this run prices by the fitted model: "
              "set hardware.operations.pricing to \"planned\"");
}

}  // namespace

// A list names each IPU of a replica.
void check_memory_proportion(const RunSpec& spec, const ConfigNode& root) {
  const auto& proportions = spec.pipeline.available_memory_proportion;
  if (proportions.empty())
    return;
  const auto node = root.at("pipeline").at("available_memory_proportion");
  refuse_unless_planned(spec, node, "available_memory_proportion");
  const int ipus = spec.pipeline.ipus_per_replica();
  if (proportions.size() > 1 && int(proportions.size()) != ipus)
    node.fail("expected one value, or one per IPU of a replica (" + std::to_string(ipus) +
              "), found " + std::to_string(proportions.size()));
}

// As poplin: half partials for half inputs only, and only where plans are made.
void check_partials(const RunSpec& spec, const ConfigNode& root) {
  if (!spec.pipeline.partials_dtype)
    return;
  const auto node = root.at("pipeline").at("partials_dtype");
  refuse_unless_planned(spec, node, "partials_dtype");
  if (*spec.pipeline.partials_dtype == models::DType::kFp16 &&
      spec.pipeline.dtype != models::DType::kFp16)
    node.fail(
        "fp16 partials need fp16 inputs (poplin accumulates fp32 inputs in fp32), and the "
        "pipeline's dtype is fp32");
}

void check_across_sections(const RunSpec& spec, const ConfigNode& root) {
  check_memory_proportion(spec, root);
  check_partials(spec, root);
  check_offload_activations(spec, root);
  check_replica_layout(spec, root);
  check_instances(spec, root);
  check_stash_dtype(spec, root);
  check_checkpoint_every_layer(spec, root);
  check_eight_bit_io(spec, root);
}

}  // namespace ipusim::sim
