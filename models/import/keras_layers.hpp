#pragma once
// Reading a Keras model as model.to_json() writes it (Sequential or Functional, tf.keras 2's
// layout or Keras 3's): its layers with their classes, configs and inputs, before any of them
// is converted to an ipusim layer.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ipusim::models::keras {

// One Keras layer as read: its class, config, the names of the layers it reads and where it is.
struct KerasLayer {
  std::string class_name;
  std::string name;
  nlohmann::json config;
  std::vector<std::string> inputs;  // Functional only; empty in a Sequential model
  std::string pointer;
};

// A JSON library error without its "[json.exception.out_of_range.403] " prefix.
std::string without_prefix(const nlohmann::json::exception& e);

// The model's layers in the file's order. Throws core::ConfigError naming `path` and the JSON
// pointer for what is not a Keras model or layer, and for a layer name that cannot be an id.
std::vector<KerasLayer> read_layers(const nlohmann::json& keras, const std::string& path);

// The per-sample shape of a batch shape [null, d1, d2, ...] under the config's
// batch_input_shape (tf.keras 2) or batch_shape (Keras 3).
std::optional<nlohmann::json> sample_shape(const nlohmann::json& config);

// What convert_family made of a layer: why it cannot be imported (or ""), its Keras weights in
// ipusim's order, whether they are reshaped to ipusim's shapes of as many elements, and whether
// the layer takes the config's activation.
struct KerasConversion {
  std::string problem;
  std::vector<std::string> weights;
  bool reshape_weights = false;
  bool activation = false;
};

// Conv1D, DepthwiseConv2D, Conv2DTranspose, Cropping2D and GroupNormalization (Keras 3's, or
// tf-addons' "Addons>GroupNormalization") as ipusim layers written into `layer`; nullopt for
// another class.
std::optional<KerasConversion> convert_family(const KerasLayer& k, nlohmann::json& layer);

}  // namespace ipusim::models::keras
