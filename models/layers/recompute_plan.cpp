#include "models/layers/recompute_plan.hpp"

#include <algorithm>
#include <set>

namespace ipusim::models {
namespace {

// The sub-stage's layers in the order the executor runs them.
std::vector<int> execution_order(const Model& model, const std::vector<int>& layers) {
  const std::set<int> members(layers.begin(), layers.end());
  std::vector<int> order;
  for (const int layer : model.graph.topological_order()) {
    if (members.count(layer) != 0)
      order.push_back(layer);
  }
  return order;
}

std::vector<int> checkpoints_of(const Model& model, const std::vector<int>& order,
                                bool every_layer) {
  std::vector<int> out;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const Layer& layer = model.layers[static_cast<std::size_t>(order[i])];
    if (layer.type == LayerType::kInput)
      continue;
    if (layer.checkpoint || (every_layer && i + 1 < order.size()))
      out.push_back(order[i]);
  }
  return out;
}

// The segments in execution order: each ends at a checkpoint or at the last layer.
std::vector<std::vector<int>> segments_of(const std::vector<int>& order,
                                          const std::set<int>& checkpoints) {
  std::vector<std::vector<int>> segments(1);
  for (const int layer : order) {
    segments.back().push_back(layer);
    if (checkpoints.count(layer) != 0)
      segments.emplace_back();
  }
  if (segments.back().empty())
    segments.pop_back();
  return segments;
}

// A segment's layers and the non-checkpoint layers of this sub-stage before it whose outputs
// they read, transitively: what its recomputation must run, in execution order.
std::vector<int> recomputation_of(const Model& model, const std::vector<int>& segment,
                                  const std::vector<int>& order, const std::set<int>& checkpoints) {
  const std::set<int> members(order.begin(), order.end());
  std::set<int> runs(segment.begin(), segment.end());
  std::vector<int> pending(segment.begin(), segment.end());
  while (!pending.empty()) {
    const int layer = pending.back();
    pending.pop_back();
    for (const int producer : model.graph.inputs_of(layer)) {
      if (members.count(producer) != 0 && checkpoints.count(producer) == 0 &&
          runs.insert(producer).second)
        pending.push_back(producer);
    }
  }
  std::vector<int> out;
  for (const int layer : order) {
    if (runs.count(layer) != 0)
      out.push_back(layer);
  }
  return out;
}

}  // namespace

int RecomputePlan::runs(int layer) const {
  int count = 0;
  for (const auto& layers : recomputations)
    count += static_cast<int>(std::count(layers.begin(), layers.end(), layer));
  return count;
}

bool RecomputePlan::is_checkpoint(int layer) const {
  return std::find(checkpoints.begin(), checkpoints.end(), layer) != checkpoints.end();
}

RecomputePlan recompute_plan(const Model& model, const std::vector<int>& layers,
                             const CheckpointOptions& options) {
  const std::vector<int> order = execution_order(model, layers);
  RecomputePlan plan;
  plan.checkpoints = checkpoints_of(model, order, options.every_layer);
  const std::set<int> checkpoints(plan.checkpoints.begin(), plan.checkpoints.end());
  std::vector<std::vector<int>> segments = segments_of(order, checkpoints);
  // The final forward stage's last segment, unless it ends at a checkpoint, is kept.
  if (options.keep_tail && !segments.empty() && checkpoints.count(segments.back().back()) == 0) {
    plan.kept = std::move(segments.back());
    segments.pop_back();
  }
  for (auto segment = segments.rbegin(); segment != segments.rend(); ++segment)
    plan.recomputations.push_back(recomputation_of(model, *segment, order, checkpoints));
  return plan;
}

}  // namespace ipusim::models
