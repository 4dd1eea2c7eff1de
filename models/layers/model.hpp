#pragma once
// A model as the config's "model" section describes it, validated: layers in config order, the
// graph between them, and per-layer shapes and costs (info[i] belongs to layers[i]). A model
// with a softmax_cross_entropy layer is trainable: it has exactly one, and it is the last layer.
// Without one it is inference-only.

#include <cstdint>
#include <string>
#include <vector>

#include "models/layers/dtype.hpp"
#include "models/layers/layer.hpp"
#include "models/layers/layer_graph.hpp"
#include "models/layers/layer_info.hpp"
#include "sim/core/config_node.hpp"

namespace ipusim::models {

struct Model {
  std::string name;
  // A directory of <layer>.<parameter>.initial.npy files that numeric runs start from, as the
  // config gives it (relative to that config's folder); empty for the seeded initialisation.
  std::string initial_weights;
  Shape input_shape;  // per sample
  DType dtype = DType::kFp32;
  std::int64_t classes = 0;  // the loss's class count; 0 for an inference-only model without one
  std::vector<Layer> layers;
  std::vector<LayerInfo> info;
  LayerGraph graph;
  bool trainable = false;

  int index_of(const std::string& id) const;   // -1 when no layer has that id
  std::vector<std::string> layer_ids() const;  // in config order, for "did you mean"
  std::int64_t total_params() const;
  std::int64_t weight_tensors() const;  // the parameter tensors, a tied one counted once
};

// Whether the model input holds integer ids (token ids, types, masks): true when the model has
// an embedding. Such an input is never rounded to fp16, whose integers stop being exact at 2048.
bool input_holds_ids(const Model& model);

// Reads and checks the "model" section; throws core::ConfigError on the first problem.
Model parse_model(const core::ConfigNode& model);

// The same model computing in `dtype` (the pipeline's `dtype` may differ from the input's):
// sizes of activations, stashes and weights follow the compute type.
Model with_compute_dtype(Model model, DType dtype);

}  // namespace ipusim::models
