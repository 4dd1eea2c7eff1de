#include "models/import/keras_layers.hpp"

#include <algorithm>
#include <cstdint>
#include <set>
#include <stdexcept>

#include "models/layers/layer_parse.hpp"
#include "sim/core/error.hpp"
#include "sim/core/suggest.hpp"

namespace ipusim::models::keras {
namespace {

using nlohmann::json;

// A tensor reference [name, node index, tensor index, ...]: the name, when the indices are the
// first call's first output, which is all an ipusim layer has (Keras itself refuses an index
// its layer does not have).
std::string referenced_layer(const json& entry) {
  const auto index = [&](std::size_t at) {
    return entry.size() > at && entry.at(at).is_number_integer() ? entry.at(at).get<std::int64_t>()
                                                                 : -1;
  };
  if (index(1) != 0 || index(2) != 0)
    throw std::invalid_argument("the tensor " + entry.dump() +
                                " is not its layer's first call's first output (node and tensor "
                                "index 0), the only one an imported layer has");
  return entry.at(0).get<std::string>();
}

// The layer names of Keras 3's keras_history entries under `node`, in order.
void collect_history(const json& node, std::vector<std::string>& out) {
  if (node.is_object()) {
    if (node.value("class_name", "") == "__keras_tensor__") {
      const auto& history = node.at("config").at("keras_history");
      out.push_back(referenced_layer(history));
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
// Keras 3 {"args": [...], "kwargs": {...}} with keras_history entries. An attention layer's
// repeats are dropped (self-attention reads one tensor as query, key and value); another
// layer's are kept, so that a Dense called on five tensors is refused for it.
std::vector<std::string> inbound_names(const json& layer, const std::string& class_name) {
  std::vector<std::string> names;
  const auto nodes = layer.find("inbound_nodes");
  if (nodes == layer.end() || !nodes->is_array() || nodes->empty())
    return names;
  const json& first = nodes->front();
  if (first.is_array()) {
    for (const auto& entry : first)
      names.push_back(referenced_layer(entry));
  } else {
    collect_history(first, names);
  }
  if (class_name != "MultiHeadAttention")
    return names;
  std::vector<std::string> unique;
  std::set<std::string> seen;
  for (const auto& name : names)
    if (seen.insert(name).second)
      unique.push_back(name);
  return unique;
}

// A Functional model's output_layers name its layers, as Keras' loader requires.
void check_outputs(const json& config, const std::vector<KerasLayer>& layers,
                   const std::string& path) {
  const auto outputs = config.find("output_layers");
  if (outputs == config.end() || !outputs->is_array())
    return;
  std::vector<std::string> names;
  for (const auto& layer : layers)
    names.push_back(layer.name);
  for (std::size_t i = 0; i < outputs->size(); ++i) {
    const json& entry = outputs->at(i);
    const std::string name = entry.is_array() && !entry.empty() && entry.at(0).is_string()
                                 ? entry.at(0).get<std::string>()
                                 : entry.dump();
    if (std::find(names.begin(), names.end(), name) == names.end())
      throw core::ConfigError(path, "/config/output_layers/" + std::to_string(i),
                              "names layer '" + name + "', which the model does not have" +
                                  core::did_you_mean(name, names));
  }
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
      const std::string class_name = layer.at("class_name").get<std::string>();
      KerasLayer l{class_name, "", layer.at("config"), inbound_names(layer, class_name), pointer};
      l.name = layer.value("name", l.config.value("name", "layer" + std::to_string(i)));
      if (const auto problem = layer_id_problem(l.name))
        fail(pointer + (layer.contains("name") ? "/name" : "/config/name"), *problem);
      out.push_back(std::move(l));
    } catch (const json::exception& e) {
      fail(pointer, "expected a layer as Keras writes it (" + without_prefix(e) + ")");
    } catch (const std::invalid_argument& e) {
      fail(pointer + "/inbound_nodes", e.what());
    }
  }
  check_outputs(config, out, path);
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

namespace {

json pair_or_one(const json& value) {
  return value.is_array() && value.size() == 2 && value[0] == value[1] ? value[0] : value;
}

bool undilated_channels_last(const json& c) {
  return c.value("data_format", "channels_last") == "channels_last" &&
         pair_or_one(c.value("dilation_rate", json(1))) == json(1);
}

// Depthwise is conv2d with groups = channels, which the config does not state: Keras 3 records
// the input shape in build_config, tf.keras 2 does not. The kernel [kh, kw, C, 1] holds
// conv2d's [kh, kw, 1, C] in the same order.
KerasConversion depthwise(const json& c, json& layer) {
  KerasConversion out;
  const json shape =
      c.contains("build_config") ? c.at("build_config").value("input_shape", json()) : json();
  if (c.value("depth_multiplier", 1) != 1)
    out.problem = "depth_multiplier " + c.at("depth_multiplier").dump() +
                  " (ipusim's depthwise conv2d gives one output channel an input channel)";
  else if (c.value("data_format", "channels_last") != "channels_last")
    out.problem = "only channels_last depthwise convolutions are supported";
  else if (!shape.is_array() || shape.empty() || !shape.back().is_number_integer())
    out.problem =
        "no input channels in its config (Keras 3 writes them in build_config; "
        "tf.keras 2 does not): build the model with Keras 3";
  if (!out.problem.empty())
    return out;
  layer.update({{"type", "conv2d"},
                {"filters", shape.back()},
                {"groups", shape.back()},
                {"kernel", pair_or_one(c.at("kernel_size"))},
                {"stride", pair_or_one(c.value("strides", json(1)))},
                {"padding", c.value("padding", "valid")},
                {"bias", c.value("use_bias", true)}});
  if (const json dilation = pair_or_one(c.value("dilation_rate", json(1))); dilation != json(1))
    layer["dilation"] = dilation;
  out.weights = {"depthwise_kernel"};
  if (layer["bias"])
    out.weights.push_back("bias");
  out.reshape_weights = out.activation = true;
  return out;
}

// Keras' "valid" gives in x stride + max(kernel - stride, 0) rows, conv2d_transpose's
// (in - 1) x stride + kernel + output_padding: equal with output_padding max(stride - kernel,
// 0). Keras' "same" is conv2d_transpose's. The kernel [kh, kw, filters, C] is ipusim's.
KerasConversion conv_transpose(const json& c, json& layer) {
  KerasConversion out;
  const std::string padding = c.value("padding", "valid");
  const json given = c.value("output_padding", json());
  if (!undilated_channels_last(c))
    out.problem = "only channels_last, undilated transposed convolutions are supported";
  else if (padding == "same" && !given.is_null())
    out.problem = "output_padding with padding \"same\" (ipusim's sets the output size)";
  if (!out.problem.empty())
    return out;
  const auto pair = [](const json& v) {
    return v.is_array() ? std::vector<std::int64_t>(v.begin(), v.end())
                        : std::vector<std::int64_t>{v.get<std::int64_t>(), v.get<std::int64_t>()};
  };
  const auto kernel = pair(c.at("kernel_size")), strides = pair(c.value("strides", json(1)));
  std::vector<std::int64_t> extra = given.is_null() ? std::vector<std::int64_t>{0, 0} : pair(given);
  for (std::size_t a = 0; a < 2 && given.is_null() && padding == "valid"; ++a)
    extra[a] = std::max<std::int64_t>(strides[a] - kernel[a], 0);
  layer.update({{"type", "conv2d_transpose"},
                {"filters", c.at("filters")},
                {"kernel", pair_or_one(c.at("kernel_size"))},
                {"stride", pair_or_one(c.value("strides", json(1)))},
                {"padding", padding},
                {"bias", c.value("use_bias", true)}});
  if (extra != std::vector<std::int64_t>{0, 0})
    layer["output_padding"] = extra;
  out.weights = {"kernel"};
  if (layer["bias"])
    out.weights.push_back("bias");
  out.activation = true;
  return out;
}

// Keras 3 and tf-addons normalise groups of the last axis, scaled and shifted as ipusim's.
KerasConversion group_norm(const json& c, json& layer) {
  KerasConversion out;
  if (c.value("axis", -1) != -1 || !c.value("center", true) || !c.value("scale", true)) {
    out.problem =
        "only a group norm of the last axis with its scale and center (ipusim's "
        "group_norm has both)";
    return out;
  }
  layer.update({{"type", "group_norm"},
                {"groups", c.value("groups", 32)},
                {"epsilon", c.value("epsilon", 1e-3)}});
  out.weights = {"gamma", "beta"};
  return out;
}

// A Conv1D's integer setting, written N or [N]; nullopt for anything else.
std::optional<std::int64_t> single_int(const json& value) {
  const json& v = value.is_array() && value.size() == 1 ? value[0] : value;
  if (!v.is_number_integer())
    return std::nullopt;
  return v.get<std::int64_t>();
}

// Conv1D over [steps, channels] as conv1d; the kernel [k, C / groups, filters] is ipusim's.
// "causal" pads (kernel - 1) x dilation steps before and none after, as Keras does.
KerasConversion conv1d(const json& c, json& layer) {
  KerasConversion out;
  const auto kernel = single_int(c.at("kernel_size"));
  const auto dilation = single_int(c.value("dilation_rate", json(1)));
  const auto stride = single_int(c.value("strides", json(1)));
  const std::string padding = c.value("padding", "valid");
  std::int64_t reach = 0;  // the kernel's span less one
  if (c.value("data_format", "channels_last") != "channels_last")
    out.problem = "only channels_last 1-D convolutions are supported";
  else if (!kernel || !dilation || !stride || *kernel < 1 || *dilation < 1 || *stride < 1 ||
           __builtin_mul_overflow(*kernel - 1, *dilation, &reach))
    out.problem = "kernel_size " + c.at("kernel_size").dump() + ", strides " +
                  c.value("strides", json(1)).dump() + " and dilation_rate " +
                  c.value("dilation_rate", json(1)).dump() +
                  " (expected an integer of 1 or more each)";
  if (!out.problem.empty())
    return out;
  layer.update({{"type", "conv1d"},
                {"filters", c.at("filters")},
                {"kernel", *kernel},
                {"stride", *stride},
                {"padding", padding == "causal" ? json{reach, 0} : json(padding)},
                {"bias", c.value("use_bias", true)}});
  if (*dilation != 1)
    layer["dilation"] = *dilation;
  if (c.value("groups", 1) != 1)
    layer["groups"] = c.at("groups");
  out.weights = {"kernel"};
  if (layer["bias"])
    out.weights.push_back("bias");
  out.activation = true;
  return out;
}

}  // namespace

std::optional<KerasConversion> convert_family(const KerasLayer& k, json& layer) {
  const json& c = k.config;
  if (k.class_name == "DepthwiseConv2D")
    return depthwise(c, layer);
  if (k.class_name == "Conv1D")
    return conv1d(c, layer);
  if (k.class_name == "Conv2DTranspose")
    return conv_transpose(c, layer);
  if (k.class_name == "GroupNormalization" || k.class_name == "Addons>GroupNormalization")
    return group_norm(c, layer);
  if (k.class_name != "Cropping2D")
    return std::nullopt;
  KerasConversion out;
  if (c.value("data_format", "channels_last") != "channels_last")
    out.problem = "only channels_last cropping is supported";
  layer.update({{"type", "crop2d"}, {"cropping", c.value("cropping", json(0))}});
  return out;
}

}  // namespace ipusim::models::keras
