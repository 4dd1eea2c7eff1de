#include "sim/spec/stages.hpp"

#include <algorithm>

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/core/suggest.hpp"

namespace ipusim::sim {
namespace {

using core::ConfigNode;

std::vector<std::string> layer_ids(const models::Model& model) {
  std::vector<std::string> ids;
  for (const auto& layer : model.layers)
    ids.push_back(layer.id);
  return ids;
}

int find_layer(const models::Model& model, const ConfigNode& node) {
  const std::string id = node.as_string();
  const int index = model.index_of(id);
  if (index < 0) {
    node.fail("no layer has the id '" + id + "'" + core::did_you_mean(id, layer_ids(model)));
  }
  return index;
}

// The TF1 tutorial's rule: each split names the first layer of the next stage.
std::vector<StageSpec> stages_from_splits(const models::Model& model, const ConfigNode& splits) {
  std::vector<int> starts;
  for (const auto& split : splits.items()) {
    const int index = find_layer(model, split);
    if (index == 0)
      split.fail("splitting at the first layer '" + model.layers[0].id +
                 "' would leave stage 0 empty");
    if (!starts.empty() && index <= starts.back()) {
      split.fail("splits must follow the layer order: '" + model.layers[index].id +
                 "' does not come after '" + model.layers[starts.back()].id +
                 "', so a stage would be empty");
    }
    starts.push_back(index);
  }
  std::vector<StageSpec> stages(starts.size() + 1);
  std::size_t stage = 0;
  for (int i = 0; i < int(model.layers.size()); ++i) {
    if (stage < starts.size() && i == starts[stage])
      ++stage;
    if (stages[stage].substage_layers.empty())
      stages[stage].substage_layers.emplace_back();
    stages[stage].substage_layers[0].push_back(i);
  }
  return stages;
}

std::vector<int> read_layer_list(const models::Model& model, const ConfigNode& list,
                                 std::vector<std::string>& placed) {
  if (list.size() == 0)
    list.fail("a stage needs at least one layer");
  std::vector<int> layers;
  for (const auto& item : list.items()) {
    const int index = find_layer(model, item);
    if (!placed[index].empty()) {
      item.fail("layer '" + model.layers[index].id + "' is already in stage " + placed[index]);
    }
    placed[index] = list.pointer();
    layers.push_back(index);
  }
  std::sort(layers.begin(), layers.end());
  return layers;
}

std::vector<StageSpec> explicit_stages(const models::Model& model, const ConfigNode& node) {
  if (node.size() == 0)
    node.fail("expected at least one stage");
  std::vector<std::string> placed(model.layers.size());
  std::vector<StageSpec> stages;
  for (const auto& entry : node.items()) {
    StageSpec stage;
    const bool concurrent = entry.size() > 0 && entry.at(std::size_t{0}).is_array();
    if (concurrent) {
      for (const auto& sub : entry.items())
        stage.substage_layers.push_back(read_layer_list(model, sub, placed));
    } else {
      stage.substage_layers.push_back(read_layer_list(model, entry, placed));
    }
    stages.push_back(std::move(stage));
  }
  for (std::size_t i = 0; i < placed.size(); ++i) {
    if (placed[i].empty())
      node.fail("layer '" + model.layers[i].id + "' is in no stage");
  }
  return stages;
}

std::vector<int> stage_of_layers(const models::Model& model, const std::vector<StageSpec>& stages,
                                 std::vector<int>* substage_of) {
  std::vector<int> stage_of(model.layers.size(), -1);
  substage_of->assign(model.layers.size(), 0);
  for (int s = 0; s < int(stages.size()); ++s) {
    for (int sub = 0; sub < int(stages[s].substage_layers.size()); ++sub) {
      for (int layer : stages[s].substage_layers[sub]) {
        stage_of[layer] = s;
        (*substage_of)[layer] = sub;
      }
    }
  }
  return stage_of;
}

// A layer may not run before its inputs: never in an earlier stage, and never in a sibling
// sub-stage of a concurrent stage (those run at the same time).
void check_stage_order(const models::Model& model, const std::vector<StageSpec>& stages,
                       const ConfigNode& where) {
  std::vector<int> substage_of;
  const auto stage_of = stage_of_layers(model, stages, &substage_of);
  for (int layer = 0; layer < int(model.layers.size()); ++layer) {
    for (int input : model.graph.inputs_of(layer)) {
      const auto& a = model.layers[input];
      const auto& b = model.layers[layer];
      if (stage_of[input] > stage_of[layer]) {
        where.fail("layer '" + b.id + "' is in stage " + std::to_string(stage_of[layer]) +
                   " but its input '" + a.id + "' is in the later stage " +
                   std::to_string(stage_of[input]));
      }
      if (stage_of[input] == stage_of[layer] && substage_of[input] != substage_of[layer]) {
        where.fail("layer '" + b.id + "' and its input '" + a.id +
                   "' are in different sub-stages of the concurrent stage " +
                   std::to_string(stage_of[layer]) + ", which run at the same time");
      }
    }
  }
}

void read_device_mapping(const ConfigNode* node, std::vector<StageSpec>& stages) {
  if (!node) {
    int next = 0;
    for (auto& stage : stages) {
      for (std::size_t sub = 0; sub < stage.substage_layers.size(); ++sub)
        stage.ipus.push_back(next++);
    }
    return;
  }
  if (node->size() != stages.size()) {
    node->fail("expected one entry per stage (" + std::to_string(stages.size()) + "), found " +
               std::to_string(node->size()));
  }
  for (std::size_t s = 0; s < stages.size(); ++s) {
    const auto entry = node->at(s);
    const std::size_t subs = stages[s].substage_layers.size();
    if (entry.is_array()) {
      if (entry.size() != subs) {
        entry.fail("stage " + std::to_string(s) + " has " + std::to_string(subs) +
                   " sub-stage(s), so its entry needs " + std::to_string(subs) + " IPU(s)");
      }
      for (const auto& ipu : entry.items())
        stages[s].ipus.push_back(int(ipu.as_int(0, 1023)));
    } else {
      if (subs != 1) {
        entry.fail("stage " + std::to_string(s) + " is concurrent with " + std::to_string(subs) +
                   " sub-stages: give a list of " + std::to_string(subs) + " IPUs");
      }
      stages[s].ipus.push_back(int(entry.as_int(0, 1023)));
    }
  }
}

}  // namespace

std::vector<StageSpec> read_stages(const models::Model& model, const ConfigNode& pipeline) {
  const auto splits = pipeline.find("splits");
  const auto stages = pipeline.find("stages");
  if (splits && stages) {
    stages->fail("give either 'splits' or 'stages', not both");
  }
  std::vector<StageSpec> out;
  if (splits) {
    out = stages_from_splits(model, *splits);
  } else if (stages) {
    out = explicit_stages(model, *stages);
  } else {
    out.resize(1);
    out[0].substage_layers.emplace_back();
    for (int i = 0; i < int(model.layers.size()); ++i)
      out[0].substage_layers[0].push_back(i);
  }
  check_stage_order(model, out, splits ? *splits : stages ? *stages : pipeline);
  const auto mapping = pipeline.find("device_mapping");
  read_device_mapping(mapping ? &*mapping : nullptr, out);
  return out;
}

}  // namespace ipusim::sim
