#pragma once
// Keras models as ipusim configs: reads what Keras' model.to_json() writes (Sequential and
// Functional; the tf.keras 2 layout and Keras 3's) and builds the config's "model" section, one
// ipusim layer per Keras layer in the file's order. A softmax ending the model (a Dense's
// activation or an Activation layer) becomes the softmax_cross_entropy loss, as Keras users
// train such a model with categorical cross-entropy.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ipusim::models {

struct Model;

// The Keras weights of one ipusim layer, in ipusim's parameter order, by their names within
// the Keras layer ("kernel", "query/bias"); `merge_heads` when an array is read in ipusim's
// shape of as many elements: Keras keeps a head axis that ipusim's [hidden, hidden] and
// [hidden] fold (MultiHeadAttention), or a depthwise kernel's [kh, kw, C, 1] is [kh, kw, 1, C].
struct KerasWeights {
  std::string layer;
  std::vector<std::string> names;
  bool merge_heads = false;
  std::vector<std::string> running;  // a batch norm's moving_mean and moving_variance
};

// An imported model: the "model" section, the MultiHeadAttention layers with their
// num_heads x key_dim, which ipusim's attention needs equal to the input width, and the
// weights each layer takes from a Keras weights file.
struct KerasImport {
  nlohmann::json model;
  std::string keras_class;  // "Sequential" or "Functional"
  std::string keras_version;
  std::vector<std::pair<std::string, std::int64_t>> attention_widths;
  std::vector<KerasWeights> weights;
  std::vector<std::string> notes;  // what the import added or changed, for the user
};

// Throws core::ConfigError naming `path` and the JSON pointer of the Keras layer: for a file
// that is not a Keras model, and for every layer ipusim cannot represent, all listed in one
// message with their names.
KerasImport import_keras(const nlohmann::json& keras, const std::string& path);

// Checks on the parsed model what only its inferred shapes tell (each attention's width), and
// returns what Keras counts as non-trainable: the batch-norm moving mean and variance.
std::int64_t check_keras_model(const KerasImport& imported, const Model& model,
                               const std::string& path);

}  // namespace ipusim::models
