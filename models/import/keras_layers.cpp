#include "models/import/keras_layers.hpp"

#include <set>

#include "models/layers/layer_parse.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models::keras {
namespace {

using nlohmann::json;

// The layer names of Keras 3's keras_history entries under `node`, in order.
void collect_history(const json& node, std::vector<std::string>& out) {
  if (node.is_object()) {
    if (node.value("class_name", "") == "__keras_tensor__") {
      const auto& history = node.at("config").at("keras_history");
      out.push_back(history.at(0).get<std::string>());
      return;
    }
    for (const auto& [key, value] : node.items())
      collect_history(value, out);
  } else if (node.is_array()) {
    for (const auto& value : node)
      collect_history(value, out);
  }
}

// The layers a Functional layer reads: Keras 2 writes [[[name, node, tensor, kwargs], ...]],
// Keras 3 {"args": [...], "kwargs": {...}} with keras_history entries. Repeats are dropped
// (self-attention reads one tensor as query, key and value).
std::vector<std::string> inbound_names(const json& layer) {
  std::vector<std::string> names;
  const auto nodes = layer.find("inbound_nodes");
  if (nodes == layer.end() || !nodes->is_array() || nodes->empty())
    return names;
  const json& first = nodes->front();
  if (first.is_array()) {
    for (const auto& entry : first)
      names.push_back(entry.at(0).get<std::string>());
  } else {
    collect_history(first, names);
  }
  std::vector<std::string> unique;
  std::set<std::string> seen;
  for (const auto& name : names)
    if (seen.insert(name).second)
      unique.push_back(name);
  return unique;
}

}  // namespace

// A JSON library error without its "[json.exception.out_of_range.403] " prefix.
std::string without_prefix(const json::exception& e) {
  const std::string what = e.what();
  const auto end = what.find("] ");
  return end == std::string::npos ? what : what.substr(end + 2);
}

std::vector<KerasLayer> read_layers(const json& keras, const std::string& path) {
  const auto fail = [&](const std::string& pointer, const std::string& why) {
    throw core::ConfigError(path, pointer, why);
  };
  if (!keras.is_object() || !keras.contains("class_name") || !keras.contains("config"))
    fail("",
         "expected a Keras model as model.to_json() writes it: an object with \"class_name\" "
         "and \"config\"");
  const auto& config = keras.at("config");
  if (!config.is_object() || !config.contains("layers") || !config.at("layers").is_array())
    fail("/config", "expected the model's \"layers\" list");
  std::vector<KerasLayer> out;
  const auto& layers = config.at("layers");
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const auto& layer = layers[i];
    const std::string pointer = "/config/layers/" + std::to_string(i);
    if (!layer.is_object() || !layer.contains("class_name") || !layer.contains("config"))
      fail(pointer, "expected a layer with \"class_name\" and \"config\"");
    try {
      KerasLayer l{layer.at("class_name").get<std::string>(), "", layer.at("config"),
                   inbound_names(layer), pointer};
      l.name = layer.value("name", l.config.value("name", "layer" + std::to_string(i)));
      if (const auto problem = layer_id_problem(l.name))
        fail(pointer + (layer.contains("name") ? "/name" : "/config/name"), *problem);
      out.push_back(std::move(l));
    } catch (const json::exception& e) {
      fail(pointer, "expected a layer as Keras writes it (" + without_prefix(e) + ")");
    }
  }
  return out;
}

// The per-sample shape of a batch shape [null, d1, d2, ...].
std::optional<json> sample_shape(const json& config) {
  for (const char* key : {"batch_input_shape", "batch_shape"}) {
    const auto found = config.find(key);
    if (found != config.end() && found->is_array() && found->size() > 1)
      return json(std::vector<json>(found->begin() + 1, found->end()));
  }
  return std::nullopt;
}

}  // namespace ipusim::models::keras
