#include "models/layers/layer_parse.hpp"

#include <algorithm>
#include <utility>

#include "models/layers/layer_types.hpp"
#include "sim/core/error.hpp"
#include "sim/core/suggest.hpp"

namespace ipusim::models {
namespace {

using core::ConfigNode;

std::vector<std::string> allowed_keys(LayerType type) {
  std::vector<std::string> keys = common_layer_keys(type);
  for (auto& key : layer_type_keys(type))
    keys.push_back(std::move(key));
  return keys;
}

LayerType read_type(const ConfigNode& node) {
  const std::string name = node.as_string();
  if (const auto type = layer_type_from_name(name))
    return *type;
  const std::string hint = core::did_you_mean(name, layer_type_names());
  node.fail("unknown layer type '" + name + "'" +
            (hint.empty() ? "; the types are " + core::quoted_list(layer_type_names()) : hint));
}

std::string read_id(const ConfigNode& node) {
  const std::string id = node.as_string();
  if (const auto problem = layer_id_problem(id))
    node.fail(*problem);
  return id;
}

void read_inputs(const ConfigNode& node, Layer& layer) {
  const std::string named = layer_label(layer);
  const LayerInputs takes = layer_type_row(layer.type).inputs;
  const auto inputs = node.find("inputs");
  if (!inputs) {
    if (takes == LayerInputs::kTwoOrMore)
      node.fail(named + " needs \"inputs\" listing at least two layers");
    if (takes == LayerInputs::kTwo)
      node.fail(named + " needs \"inputs\" listing two layers");
    return;
  }
  layer.inputs = inputs->as_string_list();
  const std::size_t count = layer.inputs.size();
  if (count == 0)
    inputs->fail("expected at least one layer id, found []");
  if (takes == LayerInputs::kTwoOrMore && count < 2)
    inputs->fail(named + " needs at least two inputs, found 1");
  if (takes == LayerInputs::kTwo && count != 2)
    inputs->fail(named + " takes two inputs, but \"inputs\" lists " + std::to_string(count));
  if (takes == LayerInputs::kOneOrTwo && count > 2)
    inputs->fail(named + " takes one or two inputs, but \"inputs\" lists " + std::to_string(count));
  if (takes == LayerInputs::kOne && count > 1)
    inputs->fail(named + " takes one input, but \"inputs\" lists " + std::to_string(count));
}

// Zero is allowed: a profiled layer can be free (a loss folded into the previous op).
CyclesOverride read_cycles(const ConfigNode& node) {
  node.expect_only_keys({"forward", "backward"});
  return {node.at("forward").as_int(0, core::kMaxCount),
          node.at("backward").as_int(0, core::kMaxCount)};
}

// C0 controls, DEL, and the C1 controls U+0080 to U+009F, which UTF-8 writes as 0xC2 0x80-0x9F
// (some terminals obey U+009B as ESC [).
bool holds_control_character(const std::string& id) {
  for (std::size_t i = 0; i < id.size(); ++i) {
    const auto byte = static_cast<unsigned char>(id[i]);
    const bool c1 = byte == 0xc2 && i + 1 < id.size() &&
                    static_cast<unsigned char>(id[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(id[i + 1]) <= 0x9f;
    if (byte < 0x20 || byte == 0x7f || c1)
      return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> common_layer_keys(LayerType type) {
  std::vector<std::string> keys = {"id", "type"};
  // An input layer is where the model input enters, so it cannot take other layers.
  if (type != LayerType::kInput)
    keys.push_back("inputs");
  keys.insert(keys.end(), {"cycles", "checkpoint"});
  return keys;
}

std::optional<std::string> layer_id_problem(const std::string& id) {
  if (id.empty())
    return "a layer id must not be empty";
  if (id.size() > kMaxNameBytes)
    return "the layer id is " + std::to_string(id.size()) + " bytes long; the most is " +
           std::to_string(kMaxNameBytes) + " (reports copy it and files are named after it)";
  std::string found = holds_control_character(id)          ? "a control character"
                      : id.find('/') != std::string::npos  ? "'/'"
                      : id.find('\\') != std::string::npos ? "'\\'"
                      : id.find("..") != std::string::npos ? "'..'"
                                                           : "";
  if (found.empty())
    return std::nullopt;
  return "the layer id '" + id + "' holds " + found +
         "; numeric mode names files after layer ids (<id>.kernel.initial.npy), so an id must "
         "be a plain file name, without '/', '\\', '..' or control characters";
}

Layer parse_layer(const ConfigNode& node) {
  Layer layer;
  layer.pointer = node.pointer();
  layer.file = node.file();
  layer.id = read_id(node.at("id"));
  layer.type = read_type(node.at("type"));
  node.expect_only_keys(allowed_keys(layer.type));
  layer_type_row(layer.type).read(node, layer.params);
  read_inputs(node, layer);
  if (const auto cycles = node.find("cycles"))
    layer.cycles = read_cycles(*cycles);
  layer.checkpoint = node.get_bool("checkpoint", false);
  if (const auto tied = node.find("tied_to"))
    layer.tied_to = read_id(*tied);
  return layer;
}

}  // namespace ipusim::models
