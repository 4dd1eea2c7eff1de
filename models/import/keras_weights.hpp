#pragma once
// A Keras weights file (.npz, as numpy.savez of each weight by its Keras name) matched to an
// imported model: each layer's parameters in ipusim's order and shapes, the batch norms'
// moving statistics, and the arrays no layer takes.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "models/import/keras_import.hpp"
#include "models/kernels/tensor.hpp"

namespace ipusim::models {

using LayerTensors = std::vector<std::pair<std::string, std::vector<Tensor>>>;  // by layer id

struct KerasWeightsFile {
  LayerTensors weights;
  LayerTensors running;              // batch norms with both moving statistics in the file
  std::vector<std::string> ignored;  // arrays no layer takes
};

// Reads `npz` (at most 16 bytes per parameter of `model` plus a megabyte, and never more than
// `max_bytes`) and takes each imported layer's arrays, named `<layer>/<weight>` (Keras 3's
// w.path) or `<layer>/<weight>:0` (tf.keras' w.name), in the shapes ipusim's layers keep: a
// MultiHeadAttention's head axis is folded into them. Throws core::ConfigError naming `npz`
// and every array that is missing.
KerasWeightsFile read_keras_weights(const KerasImport& imported, const Model& model,
                                    const std::string& npz, std::int64_t max_bytes);

// 'a', 'b', 'c': every name, not a choice among them.
std::string listed(const std::vector<std::string>& names);

}  // namespace ipusim::models
