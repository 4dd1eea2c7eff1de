#include "models/layers/layer_parse.hpp"

#include <algorithm>
#include <limits>
#include <tuple>
#include <utility>

#include "models/layers/layer_types.hpp"
#include "sim/core/error.hpp"
#include "sim/core/suggest.hpp"

namespace ipusim::models {
namespace {

using core::ConfigNode;

std::vector<std::string> allowed_keys(LayerType type) {
  std::vector<std::string> keys = {"id", "type"};
  // An input layer is where the model input enters, so it cannot take other layers.
  if (type != LayerType::kInput)
    keys.push_back("inputs");
  keys.insert(keys.end(), {"cycles", "checkpoint"});
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

// "kernel": 3 or [3, 5] -> (height, width).
std::pair<std::int64_t, std::int64_t> read_pair(const ConfigNode& node) {
  if (!node.is_array()) {
    const std::int64_t both = node.as_positive_int();
    return {both, both};
  }
  if (node.size() != 2)
    node.fail("expected [height, width], found a list of " + std::to_string(node.size()));
  return {node.at(std::size_t{0}).as_positive_int(), node.at(std::size_t{1}).as_positive_int()};
}

Shape read_shape(const ConfigNode& node, std::int64_t min) {
  if (node.size() == 0)
    node.fail("expected a shape with at least one dimension, found []");
  return node.as_int_list(min, core::kMaxCount);
}

Activation read_activation(const ConfigNode& node) {
  return *activation_from_name(node.get_enum("activation", "none", activation_names()));
}

Padding read_padding(const ConfigNode& node) {
  return node.get_enum("padding", "valid", {"valid", "same"}) == "same" ? Padding::kSame
                                                                        : Padding::kValid;
}

void read_reshape(const ConfigNode& node, LayerParams& params) {
  const ConfigNode shape = node.at("shape");
  params.shape = read_shape(shape, -1);
  int inferred = 0;
  for (std::size_t i = 0; i < params.shape.size(); ++i) {
    if (params.shape[i] == 0)
      shape.at(i).fail("a reshape dimension must be positive, or -1 to infer it; found 0");
    inferred += params.shape[i] == -1 ? 1 : 0;
  }
  if (inferred > 1)
    shape.fail("at most one dimension of a reshape may be -1");
}

void read_slice(const ConfigNode& node, LayerParams& params) {
  params.axis = node.get_int("axis", 0, std::numeric_limits<std::int32_t>::min(),
                             std::numeric_limits<std::int32_t>::max());
  params.slice_start = node.get_int("start", 0, 0, core::kMaxCount);
  params.slice_size = node.at("size").as_positive_int();
}

void read_dense(const ConfigNode& node, LayerParams& params) {
  params.units = node.at("units").as_positive_int();
  params.activation = read_activation(node);
  params.bias = node.get_bool("bias", true);
}

void read_conv2d(const ConfigNode& node, LayerParams& params) {
  params.filters = node.at("filters").as_positive_int();
  std::tie(params.kernel_h, params.kernel_w) = read_pair(node.at("kernel"));
  if (const auto stride = node.find("stride"))
    std::tie(params.stride_h, params.stride_w) = read_pair(*stride);
  params.padding = read_padding(node);
  params.activation = read_activation(node);
  params.bias = node.get_bool("bias", true);
}

void read_maxpool2d(const ConfigNode& node, LayerParams& params) {
  if (const auto pool = node.find("pool"))
    std::tie(params.pool_h, params.pool_w) = read_pair(*pool);
  // As in Keras, the window steps by its own size unless told otherwise.
  params.stride_h = params.pool_h;
  params.stride_w = params.pool_w;
  if (const auto stride = node.find("stride"))
    std::tie(params.stride_h, params.stride_w) = read_pair(*stride);
  params.padding = read_padding(node);
}

double read_rate(const ConfigNode& rate) {
  const double value = rate.as_number();
  if (value < 0.0 || value >= 1.0)
    rate.fail("expected a dropout rate from 0 up to (not including) 1, found " +
              rate.json().dump());
  return value;
}

void read_dropout(const ConfigNode& node, LayerParams& params) {
  params.rate = read_rate(node.at("rate"));
}

// An optional "dropout" rate, as attention and the transformer layers take it.
double read_optional_rate(const ConfigNode& node, double fallback) {
  const auto rate = node.find("dropout");
  return rate ? read_rate(*rate) : fallback;
}

double read_positive(const ConfigNode& node, const std::string& key, double fallback) {
  const auto value = node.find(key);
  if (!value)
    return fallback;
  const double number = value->as_number();
  if (!(number > 0.0))
    value->fail("expected " + key + " above 0, found " + value->json().dump());
  return number;
}

void read_batch_norm(const ConfigNode& node, LayerParams& params) {
  params.epsilon = read_positive(node, "epsilon", kBatchNormEpsilon);
  params.momentum = kBatchNormMomentum;
  if (const auto momentum = node.find("momentum")) {
    params.momentum = momentum->as_number();
    if (params.momentum < 0.0 || params.momentum >= 1.0)
      momentum->fail("expected a momentum from 0 up to (not including) 1, found " +
                     momentum->json().dump());
  }
}

void read_attention(const ConfigNode& node, LayerParams& params) {
  params.heads = node.at("heads").as_positive_int();
  params.rate = read_optional_rate(node, 0.0);
}

// BERT's embeddings by default; "positions": false and "layer_norm": false leave a plain
// lookup (Keras' Embedding, ONNX's Gather).
void read_embedding(const ConfigNode& node, LayerParams& params) {
  params.vocab_size = node.at("vocab_size").as_positive_int();
  params.hidden = node.at("hidden").as_positive_int();
  params.sequence_length = node.at("sequence_length").as_positive_int();
  params.positions = node.get_bool("positions", true);
  params.max_positions = params.positions ? params.sequence_length : 0;
  if (const auto positions = node.find("max_positions")) {
    if (!params.positions)
      positions->fail("max_positions sizes the position table, which \"positions\": false removes");
    params.max_positions = positions->as_positive_int();
    if (params.max_positions < params.sequence_length)
      positions->fail("max_positions (" + std::to_string(params.max_positions) +
                      ") must be at least sequence_length (" +
                      std::to_string(params.sequence_length) + ")");
  }
  params.token_types = node.get_int("token_types", 0, 0, core::kMaxCount);
  params.normalized = node.get_bool("layer_norm", true);
  const auto epsilon = node.find("epsilon");
  if (epsilon && !params.normalized)
    epsilon->fail("epsilon belongs to the layer norm, which \"layer_norm\": false removes");
  params.epsilon = read_positive(node, "epsilon", kBertLayerNormEpsilon);
}

// An encoder's keys, or those of one of its halves: heads for the attention, ffn for the
// feed-forward network, read in the encoder's order.
void read_transformer(const ConfigNode& node, LayerParams& params, bool attention,
                      bool feed_forward) {
  params.hidden = node.at("hidden").as_positive_int();
  if (attention) {
    const ConfigNode heads = node.at("heads");
    params.heads = heads.as_positive_int();
    if (params.hidden % params.heads != 0)
      heads.fail("heads (" + std::to_string(params.heads) + ") must divide hidden (" +
                 std::to_string(params.hidden) + ")");
  }
  params.sequence_length = node.at("sequence_length").as_positive_int();
  if (feed_forward)
    params.ffn = node.get_int("ffn", 4 * params.hidden, 1, core::kMaxCount);
  params.rate = read_optional_rate(node, kBertDropout);
}

void read_params(const ConfigNode& node, LayerType type, LayerParams& params) {
  switch (type) {
    case LayerType::kInput:
      if (const auto shape = node.find("shape"))
        params.shape = read_shape(*shape, 1);
      return;
    case LayerType::kReshape:
      return read_reshape(node, params);
    case LayerType::kDense:
      return read_dense(node, params);
    case LayerType::kConv2d:
      return read_conv2d(node, params);
    case LayerType::kMaxPool2d:
      return read_maxpool2d(node, params);
    case LayerType::kDropout:
      return read_dropout(node, params);
    case LayerType::kConcat:
      params.axis = node.get_int("axis", -1, std::numeric_limits<std::int32_t>::min(),
                                 std::numeric_limits<std::int32_t>::max());
      return;
    case LayerType::kSlice:
      return read_slice(node, params);
    case LayerType::kEmbedding:
      return read_embedding(node, params);
    case LayerType::kTransformerEncoder:
      return read_transformer(node, params, true, true);
    case LayerType::kTransformerAttention:
      return read_transformer(node, params, true, false);
    case LayerType::kTransformerFeedForward:
      return read_transformer(node, params, false, true);
    case LayerType::kLayerNorm:
      params.epsilon = read_positive(node, "epsilon", kLayerNormEpsilon);
      return;
    case LayerType::kBatchNorm:
      return read_batch_norm(node, params);
    case LayerType::kAttention:
      return read_attention(node, params);
    case LayerType::kFlatten:
    case LayerType::kGlobalAveragePool2d:
    case LayerType::kRelu:
    case LayerType::kGelu:
    case LayerType::kAdd:
    case LayerType::kSoftmaxCrossEntropy:
    case LayerType::kSoftmax:
    case LayerType::kTanh:
      return;
  }
  core::fail_invariant("type is one of LayerType's values", __FILE__, __LINE__);
}

void read_inputs(const ConfigNode& node, Layer& layer) {
  const std::string named = layer_label(layer);
  const LayerInputs takes = layer_type_row(layer.type).inputs;
  const auto inputs = node.find("inputs");
  if (!inputs) {
    if (takes == LayerInputs::kTwoOrMore)
      node.fail(named + " needs \"inputs\" listing at least two layers");
    return;
  }
  layer.inputs = inputs->as_string_list();
  const std::size_t count = layer.inputs.size();
  if (count == 0)
    inputs->fail("expected at least one layer id, found []");
  if (takes == LayerInputs::kTwoOrMore && count < 2)
    inputs->fail(named + " needs at least two inputs, found 1");
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

}  // namespace

std::optional<std::string> layer_id_problem(const std::string& id) {
  if (id.empty())
    return "a layer id must not be empty";
  if (id.size() > kMaxNameBytes)
    return "the layer id is " + std::to_string(id.size()) + " bytes long; the most is " +
           std::to_string(kMaxNameBytes) + " (reports copy it and files are named after it)";
  const auto control = std::find_if(id.begin(), id.end(), [](char c) {
    return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
  std::string found = control != id.end()                  ? "a control character"
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
  read_params(node, layer.type, layer.params);
  read_inputs(node, layer);
  if (const auto cycles = node.find("cycles"))
    layer.cycles = read_cycles(*cycles);
  layer.checkpoint = node.get_bool("checkpoint", false);
  if (const auto tied = node.find("tied_to"))
    layer.tied_to = read_id(*tied);
  return layer;
}

}  // namespace ipusim::models
