#pragma once
// The data flow between a model's layers: an edge runs from a layer to each layer that takes its
// output. Layers are named by their index in the config's list. Construction rejects duplicate
// ids, inputs that name no layer, cycles, and layers whose output nothing uses (every layer but
// the last must feed another layer, so the last layer is the model's one output). A built graph
// is therefore acyclic with the last layer as its only sink. Immutable; copies share the data.

#include <memory>
#include <vector>

#include "models/layers/layer.hpp"

namespace ipusim::models {

class LayerGraph {
 public:
  LayerGraph();  // no layers
  // Throws core::ConfigError naming the file, the JSON pointer and the layers involved.
  explicit LayerGraph(const std::vector<Layer>& layers);

  int size() const;
  // Each layer after all its inputs. Among layers ready at the same time the earliest in the
  // config comes first, so a config listed in data-flow order keeps its order.
  const std::vector<int>& topological_order() const;
  // The producers in the order the layer lists them (a layer listed twice appears twice);
  // empty for a layer that takes the model input.
  const std::vector<int>& inputs_of(int layer) const;
  // Each layer that takes this layer's output, once, in config order.
  const std::vector<int>& consumers_of(int layer) const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace ipusim::models
