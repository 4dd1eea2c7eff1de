#include "models/import/keras_import.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "models/import/keras_layers.hpp"
#include "models/layers/layer_parse.hpp"
#include "models/layers/model.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {
namespace {

using keras::KerasLayer;
using keras::read_layers;
using keras::sample_shape;
using keras::without_prefix;
using nlohmann::json;

// What the import found that ipusim cannot represent, all reported at once.
struct Problems {
  std::vector<std::string> items;
  void add(const KerasLayer& layer, const std::string& why) {
    items.push_back("'" + layer.name + "' (" + layer.class_name + ") at " + layer.pointer + ": " +
                    why);
  }
};

// A Keras activation name as an ipusim one, or nullopt when ipusim has none.
std::optional<std::string> activation_of(const std::string& name) {
  if (name == "linear")
    return "none";
  if (name == "relu" || name == "gelu" || name == "tanh")
    return name;
  return std::nullopt;
}

json pair_of(const json& value) {
  return value.is_array() && value.size() == 2 && value[0] == value[1] ? value[0] : value;
}

// Builds ipusim layers from Keras ones; `ends_model` tells a softmax ending the model, which
// becomes the loss.
class Converter {
 public:
  Converter(KerasImport& out, const json& input_shape) : out_(out), input_shape_(input_shape) {}

  void convert(const KerasLayer& k, bool ends_model) {
    json layer = {{"id", k.name}};
    if (!shaping_layer(k, layer) && !weighted_layer(k, layer, ends_model))
      return;
    if (!k.inputs.empty() && (layers_.empty() || k.inputs != std::vector{last_id()}))
      layer["inputs"] = k.inputs;
    layers_.push_back(std::move(layer));
  }

  // The layers without weights, which always convert; false for any other class.
  bool shaping_layer(const KerasLayer& k, json& layer) const {
    const auto& c = k.config;
    const std::string& type = k.class_name;
    if (type == "InputLayer") {
      layer["type"] = "input";
    } else if (type == "MaxPooling2D") {
      layer["type"] = "maxpool2d";
      layer["pool"] = pair_of(c.at("pool_size"));
      if (c.contains("strides") && !c.at("strides").is_null())
        layer["stride"] = pair_of(c.at("strides"));
      layer["padding"] = c.value("padding", "valid");
    } else if (type == "Flatten") {
      layer["type"] = "flatten";
    } else if (type == "Reshape") {
      layer["type"] = "reshape";
      layer["shape"] = c.at("target_shape");
    } else if (type == "Dropout") {
      layer["type"] = "dropout";
      layer["rate"] = c.at("rate");
    } else if (type == "Add") {
      layer["type"] = "add";
    } else if (type == "Concatenate") {
      layer["type"] = "concat";
      const int axis = c.value("axis", -1);
      layer["axis"] = axis < 0 ? axis : axis - 1;  // Keras counts the batch axis
    } else {
      return false;
    }
    return true;
  }

  // The other layers; false (with a problem) when ipusim cannot represent the layer, and for an
  // activation that ends the model (it became the loss).
  bool weighted_layer(const KerasLayer& k, json& layer, bool ends_model) {
    const auto& c = k.config;
    const std::string& type = k.class_name;
    if (type == "Dense")
      return dense(k, layer, ends_model);
    if (type == "Conv2D")
      return conv2d(k, layer, ends_model);
    if (type == "Activation")
      return activation_layer(k, layer, ends_model);
    if (type == "MultiHeadAttention")
      return attention(k, layer);
    if (type == "Embedding")
      return embedding(k, layer);
    if (type == "GlobalAveragePooling2D")
      return global_average_pool(k, layer);
    if (auto family = keras::convert_family(k, layer))
      return take_family(k, *family, layer, ends_model);
    if (type == "LayerNormalization") {
      layer["type"] = "layer_norm";
      layer["epsilon"] = c.value("epsilon", 1e-3);
      take_weights(k, {"gamma", "beta"});
    } else if (type == "BatchNormalization") {
      layer["type"] = "batch_norm";
      layer["epsilon"] = c.value("epsilon", 1e-3);
      layer["momentum"] = c.value("momentum", 0.99);
      take_weights(k, {"gamma", "beta"});
      out_.weights.back().running = {"moving_mean", "moving_variance"};
    } else {
      problems.add(k, "no ipusim layer type for it");
      return false;
    }
    return true;
  }

  bool take_family(const KerasLayer& k, const keras::KerasConversion& family, json& layer,
                   bool ends_model) {
    if (!family.problem.empty()) {
      problems.add(k, family.problem);
      return false;
    }
    if (!family.weights.empty())
      take_weights(k, family.weights, family.reshape_weights);
    return !family.activation || set_activation(k, layer, ends_model);
  }

  bool dense(const KerasLayer& k, json& layer, bool ends_model) {
    layer["type"] = "dense";
    layer["units"] = k.config.at("units");
    if (!set_activation(k, layer, ends_model))
      return false;
    layer["bias"] = k.config.value("use_bias", true);
    take_weights(k, layer["bias"] ? std::vector<std::string>{"kernel", "bias"}
                                  : std::vector<std::string>{"kernel"});
    return true;
  }

  // ipusim pools [H, W, C] images to [C]: channels last, the pooled axes dropped.
  bool global_average_pool(const KerasLayer& k, json& layer) {
    const auto& c = k.config;
    if (c.value("data_format", "channels_last") != "channels_last" || c.value("keepdims", false)) {
      problems.add(k, "only channels_last pooling to [channels] (keepdims false) is supported");
      return false;
    }
    layer["type"] = "global_average_pool2d";
    return true;
  }

  bool attention(const KerasLayer& k, json& layer) {
    const auto& c = k.config;
    const std::int64_t heads = c.at("num_heads"), key_dim = c.at("key_dim");
    // Counts from 1 up and small enough that their product is exact.
    if (heads < 1 || key_dim < 1 || heads > (1 << 20) || key_dim > (1 << 20)) {
      problems.add(k, "num_heads " + std::to_string(heads) + " and key_dim " +
                          std::to_string(key_dim) + " (expected both from 1 up to 2^20)");
      return false;
    }
    layer["type"] = "attention";
    layer["heads"] = heads;
    layer["dropout"] = c.value("dropout", 0.0);
    out_.attention_widths.push_back({k.name, heads * key_dim});
    take_weights(k,
                 {"query/kernel", "query/bias", "key/kernel", "key/bias", "value/kernel",
                  "value/bias", "attention_output/kernel", "attention_output/bias"},
                 true);
    return true;
  }

  // The loss after a final softmax, or after logits: a last Dense without an activation over
  // two or more classes (a model compiled with from_logits=True), noted.
  void finish() {
    if (!softmax_end_ && !ends_in_logits())
      return;
    layers_.push_back({{"id", unused_id("loss")}, {"type", "softmax_cross_entropy"}});
  }

  bool ends_in_logits() {
    if (layers_.empty())
      return false;
    const json& last = layers_.back();
    if (last.at("type") != "dense" || last.value("activation", "none") != "none" ||
        last.at("units").get<std::int64_t>() < 2)
      return false;
    out_.notes.push_back("the model ends in logits (layer '" + last_id() +
                         "', Dense without an activation); the import appends a "
                         "softmax_cross_entropy loss, as a loss with from_logits=True applies it");
    return true;
  }

  const json& layers() const { return layers_; }

  Problems problems;

 private:
  void take_weights(const KerasLayer& k, std::vector<std::string> names, bool heads = false) {
    out_.weights.push_back({k.name, std::move(names), heads, {}});
  }

  // A plain lookup of token ids: ipusim's embedding without positions and layer norm. Its
  // sequence is the input_length Keras 2 records, or the model input's length.
  bool embedding(const KerasLayer& k, json& layer) {
    const auto& c = k.config;
    if (c.value("mask_zero", false)) {
      problems.add(k,
                   "mask_zero passes a padding mask to later layers, which ipusim's layers do "
                   "not take; give attention layers the mask as an input instead");
      return false;
    }
    json length = c.contains("input_length") && !c.at("input_length").is_null()
                      ? c.at("input_length")
                      : (input_shape_.size() == 1 ? input_shape_[0] : json());
    if (!length.is_number_integer()) {
      problems.add(k, "no sequence length: give the model an Input(shape=(sequence,))");
      return false;
    }
    layer.update({{"type", "embedding"},
                  {"vocab_size", c.at("input_dim")},
                  {"hidden", c.at("output_dim")},
                  {"sequence_length", length},
                  {"positions", false},
                  {"layer_norm", false}});
    take_weights(k, {"embeddings"});
    return true;
  }

  std::string last_id() const { return layers_.back().at("id").get<std::string>(); }

  std::string unused_id(const std::string& id) const {
    std::string out = id;
    for (int n = 1; std::any_of(layers_.begin(), layers_.end(),
                                [&](const json& l) { return l.at("id") == out; });
         ++n)
      out = id + "_" + std::to_string(n);
    return out;
  }

  // Sets a Dense or Conv2D layer's activation; false (and a problem) when ipusim has none.
  bool set_activation(const KerasLayer& k, json& layer, bool ends_model) {
    const std::string name = k.config.value("activation", "linear");
    if (name == "softmax" && ends_model) {
      softmax_end_ = true;
      layer["activation"] = "none";
      return true;
    }
    const auto activation = activation_of(name);
    if (!activation) {
      problems.add(k, "activation '" + name +
                          "' has no ipusim equivalent (relu, gelu, tanh, "
                          "or softmax ending the model)");
      return false;
    }
    layer["activation"] = *activation;
    return true;
  }

  bool conv2d(const KerasLayer& k, json& layer, bool ends_model) {
    const auto& c = k.config;
    if (c.value("data_format", "channels_last") != "channels_last") {
      problems.add(k, "only channels_last convolutions are supported");
      return false;
    }
    layer["type"] = "conv2d";
    layer["filters"] = c.at("filters");
    layer["kernel"] = pair_of(c.at("kernel_size"));
    layer["stride"] = pair_of(c.value("strides", json(1)));
    layer["padding"] = c.value("padding", "valid");
    layer["bias"] = c.value("use_bias", true);
    if (c.value("groups", 1) != 1)  // the kernel [kh, kw, C / groups, filters] is ipusim's
      layer["groups"] = c.at("groups");
    if (const json dilation = pair_of(c.value("dilation_rate", json(1))); dilation != json(1))
      layer["dilation"] = dilation;
    take_weights(k, layer["bias"] ? std::vector<std::string>{"kernel", "bias"}
                                  : std::vector<std::string>{"kernel"});
    return set_activation(k, layer, ends_model);
  }

  bool activation_layer(const KerasLayer& k, json& layer, bool ends_model) {
    const std::string name = k.config.value("activation", "linear");
    if (name == "softmax") {
      if (ends_model) {
        softmax_end_ = true;
        alias_last(k);
        return false;
      }
      layer["type"] = "softmax";
      return true;
    }
    if (name == "linear") {
      alias_last(k);
      return false;
    }
    if (!activation_of(name)) {
      problems.add(k, "activation '" + name + "' has no ipusim layer");
      return false;
    }
    layer["type"] = name;
    return true;
  }

  // A layer that computes nothing in ipusim: later layers read its input instead.
  void alias_last(const KerasLayer& k) {
    if (!k.inputs.empty())
      aliases_[k.name] = k.inputs.front();
  }

 public:
  // Rewrites the inputs of every layer that reads an aliased one. Aliases that read each other
  // in a cycle (a file edited by hand) are a core::ConfigError naming them.
  void resolve_aliases(const std::string& path) {
    const auto targets = alias_targets(path);
    for (auto& layer : layers_) {
      if (!layer.contains("inputs"))
        continue;
      for (auto& input : layer["inputs"]) {
        if (const auto t = targets.find(input.get<std::string>()); t != targets.end())
          input = t->second;
      }
    }
  }

 private:
  // The layer each alias finally reads, each chain followed once.
  std::map<std::string, std::string> alias_targets(const std::string& path) const {
    std::map<std::string, std::string> targets;
    for (const auto& [start, first] : aliases_) {
      std::vector<std::string> chain;
      std::set<std::string> on_chain;
      std::string at = start;
      for (auto a = aliases_.find(at); a != aliases_.end() && !targets.contains(at);
           a = aliases_.find(at)) {
        if (!on_chain.insert(at).second)
          throw core::ConfigError(
              path, "", "the layers " + cycle_text(chain, at) + " read each other in a cycle");
        chain.push_back(at);
        at = a->second;
      }
      const auto known = targets.find(at);
      const std::string target = known == targets.end() ? at : known->second;
      for (const auto& name : chain)
        targets.emplace(name, target);
    }
    return targets;
  }

  // "'a' -> 'b' -> 'a'": the part of `chain` from `back` on, and `back` again.
  static std::string cycle_text(const std::vector<std::string>& chain, const std::string& back) {
    std::string text;
    for (auto at = std::find(chain.begin(), chain.end(), back); at != chain.end(); ++at)
      text += "'" + *at + "' -> ";
    return text + "'" + back + "'";
  }

  KerasImport& out_;
  json input_shape_;
  json layers_ = json::array();
  bool softmax_end_ = false;
  std::map<std::string, std::string> aliases_;
};

KerasImport import_keras_model(const json& keras, const std::string& path) {
  KerasImport out;
  const auto layers = read_layers(keras, path);
  out.keras_class = keras.at("class_name").get<std::string>();
  out.keras_version = keras.value("keras_version", "unknown");
  if (out.keras_class != "Sequential" && out.keras_class != "Functional" &&
      out.keras_class != "Model")
    throw core::ConfigError(
        path, "/class_name",
        "expected a Sequential or Functional model, found '" + out.keras_class + "'");
  if (layers.empty())
    throw core::ConfigError(path, "/config/layers", "the model has no layers");
  std::optional<json> shape;
  std::size_t inputs = 0;
  for (const auto& l : layers) {
    if (l.class_name == "InputLayer")
      ++inputs;
    if (!shape)
      shape = sample_shape(l.config);
  }
  if (!shape)
    throw core::ConfigError(path, "/config/layers/0",
                            "no input shape: build the model with an Input(shape=...) or "
                            "input_shape before calling to_json()");
  if (std::any_of(shape->begin(), shape->end(), [](const json& d) { return d.is_null(); }))
    throw core::ConfigError(path, "/config/layers/0",
                            "the input shape " + shape->dump() +
                                " per sample has a dimension of unknown size (None): ipusim "
                                "simulates fixed sizes; build the model with Input(shape=...) "
                                "of whole numbers");
  if (inputs > 1)
    throw core::ConfigError(
        path, "/config/layers",
        "the model has " + std::to_string(inputs) + " inputs; an ipusim model has one");
  Converter converter(out, *shape);
  for (std::size_t i = 0; i < layers.size(); ++i) {
    try {
      converter.convert(layers[i], i + 1 == layers.size());
    } catch (const json::exception& e) {
      converter.problems.add(layers[i],
                             "its config is not as Keras writes it: " + without_prefix(e));
    }
  }
  converter.finish();
  converter.resolve_aliases(path);
  if (!converter.problems.items.empty()) {
    std::string message = "cannot import " + std::to_string(converter.problems.items.size()) +
                          " layer(s), so nothing was written:";
    for (const auto& item : converter.problems.items)
      message += "\n  " + item;
    throw core::ConfigError(path, "", message);
  }
  out.model = {{"name", keras.at("config").value("name", "keras_model")},
               {"input", {{"shape", *shape}, {"dtype", "fp32"}}},
               {"layers", converter.layers()}};
  return out;
}

}  // namespace

KerasImport import_keras(const json& keras, const std::string& path) {
  try {
    return import_keras_model(keras, path);
  } catch (const json::exception& e) {
    throw core::ConfigError(
        path, "",
        "expected a Keras model as model.to_json() writes it (" + without_prefix(e) + ")");
  }
}

std::int64_t check_keras_model(const KerasImport& imported, const Model& model,
                               const std::string& path) {
  for (const auto& [name, width] : imported.attention_widths) {
    const auto& output = model.info[std::size_t(model.index_of(name))].output;
    if (output.back() != width)
      throw core::ConfigError(path, "",
                              "'" + name + "' (MultiHeadAttention): num_heads x key_dim is " +
                                  std::to_string(width) + " but its input is " +
                                  std::to_string(output.back()) +
                                  " wide; ipusim's attention splits the input width "
                                  "among the heads");
  }
  std::int64_t moving = 0;
  for (std::size_t i = 0; i < model.layers.size(); ++i)
    if (model.layers[i].type == LayerType::kBatchNorm)
      moving += model.info[i].params;  // a mean and a variance per (gamma, beta) pair
  return moving;
}

}  // namespace ipusim::models
