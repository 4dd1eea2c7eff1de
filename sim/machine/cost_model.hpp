#pragma once
// Turns a validated run into the numbers the replay needs per sub-stage (one IPU's part of a
// computational stage) and per micro-batch: cycles of each task kind, bytes copied between
// IPUs, bytes stashed under the recomputation mode, and the static memory of each IPU.
//
// Compute time of a layer: the sum of its operations' cycles (models/layers/operations.hpp lowers
// it, sim/machine/op_cost.hpp prices each pass), unless the layer carries profiled `cycles`. Stage
// times are sums of layer times, so the operations of a stage sum to its cycles exactly.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "schedules/schedule.hpp"
#include "sim/machine/host_input.hpp"
#include "sim/machine/memory_category.hpp"
#include "sim/machine/op_cost.hpp"
#include "sim/spec/spec.hpp"

namespace ipusim::sim {

// One operation of a sub-stage per micro-batch, as the Operations Summary lists it. A layer with
// profiled cycles is one row named "profiled" with no class.
struct OperationCost {
  std::string layer;
  std::string name;
  std::optional<models::OpClass> op_class;
  OpPassCost forward;
  OpPassCost backward;
  std::int64_t recompute_cycles = 0;        // the forward again, when the stage recomputes
  std::int64_t weight_gradient_cycles = 0;  // the part of the backward a W task runs
  double forward_flops = 0;
  double backward_flops = 0;
  std::int64_t code_bytes = 0;  // code and vertex state of its compute sets
  std::string plan;             // under planned pricing: what was planned (planned_cost.hpp)
};

// What one sub-stage costs per micro-batch on the IPU it runs on: cycles and FLOPs of each
// pass, and the bytes it stashes and keeps live.
struct SubstageCost {
  int ipu = 0;
  std::int64_t forward_cycles = 0;
  std::int64_t backward_cycles = 0;     // input and weight gradients together
  std::int64_t weight_grad_cycles = 0;  // the W part, for schedules that split the backward
  std::int64_t recompute_cycles = 0;
  double forward_flops = 0;  // per micro-batch
  double backward_flops = 0;
  std::int64_t stash_bytes = 0;  // one FIFO entry (one micro-batch) under the mode
  // What a forward task holds beside the stash entries (its own micro-batch's among them): the
  // temporaries of its largest operation and the layers' outputs beyond its entry.
  std::int64_t live_bytes = 0;
  std::int64_t temporary_bytes = 0;  // those temporaries (models/layers/operations.hpp)
  // ... while its recomputation or backward runs, with the state it rebuilds from the entry:
  // the whole sub-stage's under kStageInputs, the largest segment's under kCheckpoints.
  std::int64_t backward_live_bytes = 0;
  std::int64_t params = 0;
  std::vector<OperationCost> operations;  // sums to the cycles above
};

// One category of memory on one IPU, at the granularity the out-of-memory message names.
struct MemoryItem {
  MemoryCategory category = MemoryCategory::kWeights;
  std::string name;  // e.g. "weights of dense256"
  std::int64_t bytes = 0;
};

// The per-task costs of one run, computed once before the replay: indexed [stage][substage]
// for the stages, by logical IPU for the per-IPU lists.
struct CostModel {
  std::vector<std::vector<SubstageCost>> stages;  // [stage][substage]
  // Bytes of one micro-batch's copy from `ipu` to `peer` for stage `stage`'s boundary.
  std::map<std::tuple<int, int, int, bool>, std::int64_t>
      copy_bytes;                                  // (stage, ipu, peer, gradient)
  std::int64_t infeed_bytes = 0;                   // one micro-batch of inputs and labels
  std::int64_t outfeed_bytes = 0;                  // one micro-batch's loss
  HostInput host_input;                            // one host's share of a step's input
  std::vector<std::int64_t> weight_update_cycles;  // per IPU, on chip
  std::vector<std::int64_t> offload_bytes;         // per IPU: optimizer state streamed in and out
  std::vector<std::int64_t> gradient_bytes;        // per IPU: accumulated gradients to all-reduce
  std::vector<std::int64_t> weight_bytes;  // per IPU: weights all-gathered when state is sharded
  // Per IPU: a tied word matrix's gradient sent to its owner's IPU and the matrix sent back.
  std::vector<std::int64_t> tied_exchange_bytes;
  std::vector<std::vector<MemoryItem>> static_memory;  // per IPU, on chip
  // Per IPU, off chip: the offloaded optimizer state (the replay adds offloaded stash FIFOs).
  std::vector<std::vector<MemoryItem>> streaming_memory;

  std::int64_t copy(int stage, int ipu, int peer, bool gradient) const;
  const SubstageCost& substage(int stage, int substage) const { return stages[stage][substage]; }
};

// For the spec and its schedule (spec.schedule).
CostModel build_cost_model(const RunSpec& spec);

// A layer's operations, aligned with spec.model.info[layer].operations (one "profiled" row when
// the config gives its cycles), its forward recomputed `recomputations` times, on logical IPU
// `ipu`. An operation Poplar plans (planned pricing) says so in its `plan`.
std::vector<OperationCost> layer_operations(const RunSpec& spec, int layer, int recomputations,
                                            int ipu);

// What `layers` (of spec.model) would cost as one sub-stage on `ipu` stashing `stash`, whatever
// stage the spec puts them in: the planner prices candidate splits with it without building a
// spec for each. The final forward stage (a stash depth of 0) keeps the layers after its last
// checkpoint instead of recomputing them (models/layers/recompute_plan.hpp).
SubstageCost substage_cost(const RunSpec& spec, const std::vector<int>& layers, int ipu,
                           schedules::StashKind stash, bool final_forward_stage = false);

}  // namespace ipusim::sim
