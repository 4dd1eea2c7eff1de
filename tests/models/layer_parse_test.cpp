#include "models/layers/layer_parse.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "model_test_support.hpp"
#include "models/layers/layer_types.hpp"
#include "tests/test_support.hpp"

using namespace ipusim::models;
using ipusim::models::testing::model_error;
using ipusim::models::testing::with_layers;

namespace {

Layer layer_from(const std::string& layer_json) {
  const auto json = nlohmann::json{{"layers", {nlohmann::json::parse(layer_json)}}};
  const auto document = ipusim::core::ConfigDocument::from_json(json, "model.json");
  return parse_layer(document.root().at("layers").at(std::size_t{0}));
}

// The error a one-layer model on a [28, 28, 1] input raises for `layer_json`.
std::string layer_error(const std::string& layer_json) {
  return model_error(with_layers("[28, 28, 1]", "[" + layer_json + "]"));
}

}  // namespace

TEST_CASE("gelu reads approximate, and dense takes the tanh-approximated gelu") {
  CHECK(layer_from(R"({"id": "g", "type": "gelu"})").params.gelu_form == GeluForm::kExact);
  CHECK(layer_from(R"({"id": "g", "type": "gelu", "approximate": "tanh"})").params.gelu_form ==
        GeluForm::kTanh);
  CHECK(layer_from(R"({"id": "d", "type": "dense", "units": 4, "activation": "gelu_tanh"})")
            .params.activation == Activation::kGeluTanh);
  CHECK(
      layer_error(R"({"id": "g", "type": "gelu", "approximate": "erf"})") ==
      "model.json: at /model/layers/0/approximate: unknown value 'erf'; expected 'none' or 'tanh'");
}

TEST_CASE("a conv2d layer reads single numbers as square kernels and strides") {
  const Layer layer = layer_from(
      R"({"id": "c", "type": "conv2d", "filters": 8, "kernel": 3, "stride": [2, 1],
          "padding": "same", "activation": "gelu", "bias": false, "checkpoint": true})");
  CHECK(layer.type == LayerType::kConv2d);
  CHECK(layer.params.filters == 8);
  CHECK(layer.params.kernel_h == 3);
  CHECK(layer.params.kernel_w == 3);
  CHECK(layer.params.stride_h == 2);
  CHECK(layer.params.stride_w == 1);
  CHECK(layer.params.padding == kSamePadding);
  CHECK(layer.params.activation == Activation::kGelu);
  CHECK_FALSE(layer.params.bias);
  CHECK(layer.checkpoint);
  CHECK(layer.inputs.empty());
  CHECK(layer.pointer == "/layers/0");
  CHECK(layer.file == "model.json");
}

TEST_CASE("a max pool steps by its window unless a stride is given") {
  const Layer square = layer_from(R"({"id": "p", "type": "maxpool2d", "pool": [3, 2]})");
  CHECK(square.params.stride_h == 3);
  CHECK(square.params.stride_w == 2);
  const Layer strided = layer_from(R"({"id": "p", "type": "maxpool2d", "stride": 1})");
  CHECK(strided.params.pool_h == 2);
  CHECK(strided.params.stride_h == 1);
  CHECK(strided.params.stride_w == 1);
}

TEST_CASE("embedding and encoder fields default as BERT's do") {
  const Layer embedding = layer_from(
      R"({"id": "e", "type": "embedding", "vocab_size": 100, "hidden": 16,
          "sequence_length": 8})");
  CHECK(embedding.params.max_positions == 8);
  CHECK(embedding.params.token_types == 0);
  CHECK(embedding.params.positions);
  CHECK(embedding.params.normalized);
  CHECK(embedding.params.epsilon == 1e-12);
  const Layer encoder = layer_from(
      R"({"id": "t", "type": "transformer_encoder", "hidden": 16, "heads": 4,
          "sequence_length": 8})");
  CHECK(encoder.params.ffn == 64);
}

TEST_CASE("profiled cycles replace the cost model for a layer") {
  const Layer layer = layer_from(
      R"({"id": "x", "type": "dense", "units": 8, "cycles": {"forward": 1000, "backward": 2000},
          "inputs": ["a"]})");
  REQUIRE(layer.cycles.has_value());
  CHECK(layer.cycles->forward == 1000);
  CHECK(layer.cycles->backward == 2000);
  CHECK(layer.inputs == std::vector<std::string>{"a"});
}

TEST_CASE("every layer type has its row, found by its name, with its config keys in order") {
  REQUIRE(layer_type_names().size() == layer_type_count());
  for (std::size_t i = 0; i < layer_type_count(); ++i) {
    const auto type = static_cast<LayerType>(i);
    INFO(layer_type_name(type));
    CHECK(layer_type_from_name(layer_type_name(type)) == type);
  }
  CHECK(layer_type_keys(LayerType::kConv2d) ==
        std::vector<std::string>{"filters", "kernel", "stride", "dilation", "padding", "activation",
                                 "bias", "groups"});
  CHECK(layer_type_keys(LayerType::kRelu).empty());
}

TEST_CASE("the layer types LayerType names are the registry's rows of their names") {
  const std::vector<std::pair<LayerType, std::string>> named = {
      {LayerType::kInput, "input"},
      {LayerType::kFlatten, "flatten"},
      {LayerType::kReshape, "reshape"},
      {LayerType::kDense, "dense"},
      {LayerType::kConv2d, "conv2d"},
      {LayerType::kMaxPool2d, "maxpool2d"},
      {LayerType::kGlobalAveragePool2d, "global_average_pool2d"},
      {LayerType::kDropout, "dropout"},
      {LayerType::kRelu, "relu"},
      {LayerType::kGelu, "gelu"},
      {LayerType::kAdd, "add"},
      {LayerType::kConcat, "concat"},
      {LayerType::kSlice, "slice"},
      {LayerType::kSoftmaxCrossEntropy, "softmax_cross_entropy"},
      {LayerType::kEmbedding, "embedding"},
      {LayerType::kTransformerEncoder, "transformer_encoder"},
      {LayerType::kLayerNorm, "layer_norm"},
      {LayerType::kBatchNorm, "batch_norm"},
      {LayerType::kSoftmax, "softmax"},
      {LayerType::kTanh, "tanh"},
      {LayerType::kAttention, "attention"},
      {LayerType::kTransformerAttention, "transformer_attention"},
      {LayerType::kTransformerFeedForward, "transformer_feed_forward"},
      {LayerType::kAvgPool2d, "avgpool2d"},
      {LayerType::kTokenMean, "token_mean"},
      {LayerType::kTokenSelect, "token_select"},
      {LayerType::kPositionTable, "position_table"},
      {LayerType::kClassToken, "class_token"},
  };
  for (const auto& [type, name] : named) {
    CHECK(layer_type_name(type) == name);
    CHECK(layer_type_from_name(name) == type);
  }
}

TEST_CASE("a misspelt layer type suggests the closest type") {
  CHECK(layer_error(R"({"id": "d", "type": "dens", "units": 8})") ==
        "model.json: at /model/layers/0/type: unknown layer type 'dens'; did you mean 'dense'?");
}

TEST_CASE("a layer type unlike any known type lists the types") {
  CHECK(layer_error(R"({"id": "l", "type": "lstm"})") ==
        "model.json: at /model/layers/0/type: unknown layer type 'lstm'; the types are "
        "'input', 'flatten', 'reshape', 'dense', 'conv2d', 'maxpool2d', "
        "'global_average_pool2d', 'dropout', 'relu', 'gelu', 'add', 'concat', 'slice', "
        "'softmax_cross_entropy', 'embedding', 'transformer_encoder', 'layer_norm', "
        "'batch_norm', 'softmax', 'tanh', 'attention', 'transformer_attention', "
        "'transformer_feed_forward', 'avgpool2d', 'token_mean', 'token_select', "
        "'position_table', 'class_token', 'relative_attention', 'sigmoid', 'swish', "
        "'multiply', 'glu', 'group_norm', 'conv1d', 'conv2d_transpose', 'crop2d', 'relu6', "
        "'hard_sigmoid' or 'hard_swish'");
}

TEST_CASE("a key another layer type would take is unknown, with the closest key suggested") {
  CHECK(layer_error(R"({"id": "d", "type": "dense", "units": 8, "unit": 3})") ==
        "model.json: at /model/layers/0/unit: unknown key 'unit'; did you mean 'units'?");
  CHECK(layer_error(R"({"id": "d", "type": "flatten", "filters": 3})") ==
        "model.json: at /model/layers/0/filters: unknown key 'filters'; the keys allowed here "
        "are 'id', 'type', 'inputs', 'cycles', 'checkpoint' or 'order'");
}

TEST_CASE("an input layer cannot take inputs") {
  CHECK(layer_error(R"({"id": "in", "type": "input", "inputs": ["x"]})") ==
        "model.json: at /model/layers/0/inputs: unknown key 'inputs'; the keys allowed here are "
        "'id', 'type', 'cycles', 'checkpoint' or 'shape'");
}

TEST_CASE("a missing required field is named") {
  CHECK(layer_error(R"({"id": "d", "type": "dense"})") ==
        "model.json: at /model/layers/0: missing required field 'units'");
  CHECK(layer_error(R"({"type": "dense", "units": 3})") ==
        "model.json: at /model/layers/0: missing required field 'id'");
}

TEST_CASE("a zero or three-sided kernel is refused") {
  CHECK(layer_error(R"({"id": "c", "type": "conv2d", "filters": 4, "kernel": 0})") ==
        "model.json: at /model/layers/0/kernel: expected an integer from 1 to 1099511627776, "
        "found 0");
  CHECK(layer_error(R"({"id": "c", "type": "conv2d", "filters": 4, "kernel": [3, 3, 3]})") ==
        "model.json: at /model/layers/0/kernel: expected [height, width], found a list of 3");
  CHECK(layer_error(R"({"id": "c", "type": "conv2d", "filters": 4, "kernel": [3, -1]})") ==
        "model.json: at /model/layers/0/kernel/1: expected an integer from 1 to "
        "1099511627776, found -1");
}

TEST_CASE("an unknown activation or padding suggests the closest name") {
  CHECK(layer_error(R"({"id": "d", "type": "dense", "units": 8, "activation": "rlu"})") ==
        "model.json: at /model/layers/0/activation: unknown value 'rlu'; did you mean 'relu'?");
  CHECK(layer_error(
            R"({"id": "c", "type": "conv2d", "filters": 4, "kernel": 3, "padding": "sme"})") ==
        "model.json: at /model/layers/0/padding: unknown value 'sme'; did you mean 'same'?");
}

TEST_CASE("a dropout rate must be at least 0 and below 1") {
  CHECK(layer_error(R"({"id": "d", "type": "dropout", "rate": 1})") ==
        "model.json: at /model/layers/0/rate: expected a dropout rate from 0 up to (not "
        "including) 1, found 1");
  CHECK(layer_error(R"({"id": "d", "type": "dropout", "rate": -0.5})") ==
        "model.json: at /model/layers/0/rate: expected a dropout rate from 0 up to (not "
        "including) 1, found -0.5");
}

TEST_CASE("a reshape may infer one dimension, and only one") {
  CHECK(layer_error(R"({"id": "r", "type": "reshape", "shape": [-1, 4, -1]})") ==
        "model.json: at /model/layers/0/shape: at most one dimension of a reshape may be -1");
  CHECK(layer_error(R"({"id": "r", "type": "reshape", "shape": [0, 4]})") ==
        "model.json: at /model/layers/0/shape/0: a reshape dimension must be positive, or -1 to "
        "infer it; found 0");
  CHECK(layer_error(R"({"id": "r", "type": "reshape", "shape": []})") ==
        "model.json: at /model/layers/0/shape: expected a shape with at least one dimension, "
        "found []");
}

TEST_CASE("attention heads must divide the hidden size") {
  CHECK(layer_error(R"({"id": "t", "type": "transformer_encoder", "hidden": 100, "heads": 16,
                        "sequence_length": 8})") ==
        "model.json: at /model/layers/0/heads: heads (16) must divide hidden (100)");
}

TEST_CASE("an embedding needs a position for every token") {
  CHECK(layer_error(R"({"id": "e", "type": "embedding", "vocab_size": 10, "hidden": 4,
                        "sequence_length": 128, "max_positions": 64})") ==
        "model.json: at /model/layers/0/max_positions: max_positions (64) must be at least "
        "sequence_length (128)");
}

TEST_CASE("an embedding without positions and layer norm is a plain lookup") {
  const Layer lookup = layer_from(
      R"({"id": "e", "type": "embedding", "vocab_size": 100, "hidden": 16,
          "sequence_length": 8, "positions": false, "layer_norm": false})");
  CHECK_FALSE(lookup.params.positions);
  CHECK(lookup.params.max_positions == 0);
  CHECK_FALSE(lookup.params.normalized);
  CHECK(layer_error(R"({"id": "e", "type": "embedding", "vocab_size": 10, "hidden": 4,
                        "sequence_length": 8, "positions": false, "max_positions": 16})") ==
        "model.json: at /model/layers/0/max_positions: max_positions sizes the position table, "
        "which \"positions\": false removes");
  CHECK(layer_error(R"({"id": "e", "type": "embedding", "vocab_size": 10, "hidden": 4,
                        "sequence_length": 8, "layer_norm": false, "epsilon": 1e-5})") ==
        "model.json: at /model/layers/0/epsilon: epsilon belongs to the layer norm, which "
        "\"layer_norm\": false removes");
  CHECK(layer_error(R"({"id": "e", "type": "embedding", "vocab_size": 10, "hidden": 4,
                        "sequence_length": 8, "layer_norm": "no"})") ==
        "model.json: at /model/layers/0/layer_norm: expected true or false, found a string "
        "\"no\"");
}

TEST_CASE("add and concat need two inputs and other layers take one") {
  CHECK(layer_error(R"({"id": "s", "type": "add"})") ==
        "model.json: at /model/layers/0: layer 's' (add) needs \"inputs\" listing at least two "
        "layers");
  CHECK(layer_error(R"({"id": "s", "type": "concat", "inputs": ["a"]})") ==
        "model.json: at /model/layers/0/inputs: layer 's' (concat) needs at least two inputs, "
        "found 1");
  CHECK(layer_error(R"({"id": "d", "type": "dense", "units": 2, "inputs": ["a", "b"]})") ==
        "model.json: at /model/layers/0/inputs: layer 'd' (dense) takes one input, but "
        "\"inputs\" lists 2");
  CHECK(layer_error(R"({"id": "d", "type": "dense", "units": 2, "inputs": []})") ==
        "model.json: at /model/layers/0/inputs: expected at least one layer id, found []");
}

TEST_CASE("profiled cycles need both directions as positive integers") {
  CHECK(layer_error(R"({"id": "d", "type": "flatten", "cycles": {"forward": 10}})") ==
        "model.json: at /model/layers/0/cycles: missing required field 'backward'");
  CHECK(layer_error(R"({"id": "d", "type": "flatten", "cycles": {"forward": 10, "backwrd": 3}})") ==
        "model.json: at /model/layers/0/cycles/backwrd: unknown key 'backwrd'; did you mean "
        "'backward'?");
}

TEST_CASE("normalisation, softmax, tanh and attention fields have documented defaults") {
  CHECK(layer_from(R"({"id": "n", "type": "layer_norm"})").params.epsilon == 1e-5);
  CHECK(layer_from(R"({"id": "n", "type": "layer_norm", "epsilon": 1e-12})").params.epsilon ==
        1e-12);
  const Layer bn = layer_from(R"({"id": "b", "type": "batch_norm"})");
  CHECK(bn.params.epsilon == 1e-3);
  CHECK(bn.params.momentum == 0.99);
  const Layer attention = layer_from(R"({"id": "a", "type": "attention", "heads": 4})");
  CHECK(attention.params.heads == 4);
  CHECK(attention.params.rate == 0.0);
  CHECK(layer_from(R"({"id": "a", "type": "attention", "heads": 4, "dropout": 0.1})").params.rate ==
        0.1);
  CHECK(layer_from(R"({"id": "t", "type": "transformer_encoder", "hidden": 16, "heads": 4,
                       "sequence_length": 8})")
            .params.rate == 0.1);
  CHECK(layer_from(R"({"id": "s", "type": "softmax"})").type == LayerType::kSoftmax);
  CHECK(layer_from(R"({"id": "t", "type": "tanh"})").type == LayerType::kTanh);
}

TEST_CASE("bad normalisation and attention fields are errors at the field") {
  CHECK(layer_error(R"({"id": "n", "type": "layer_norm", "epsilon": 0})") ==
        "model.json: at /model/layers/0/epsilon: expected epsilon above 0, found 0");
  CHECK(layer_error(R"({"id": "n", "type": "batch_norm", "epsilon": -1e-3})") ==
        "model.json: at /model/layers/0/epsilon: expected epsilon above 0, found -0.001");
  CHECK(layer_error(R"({"id": "n", "type": "batch_norm", "momentum": 1})") ==
        "model.json: at /model/layers/0/momentum: expected a momentum from 0 up to (not "
        "including) 1, found 1");
  CHECK(layer_error(R"({"id": "a", "type": "attention", "heads": 2, "dropout": 1.5})") ==
        "model.json: at /model/layers/0/dropout: expected a dropout rate from 0 up to (not "
        "including) 1, found 1.5");
  CHECK(layer_error(R"({"id": "a", "type": "attention", "head": 2})") ==
        "model.json: at /model/layers/0/head: unknown key 'head'; did you mean 'heads'?");
  CHECK(layer_error(R"({"id": "n", "type": "layer_norm", "epsilion": 1e-3})") ==
        "model.json: at /model/layers/0/epsilion: unknown key 'epsilion'; did you mean "
        "'epsilon'?");
  CHECK(layer_error(R"({"id": "n", "type": "batch_norm", "momentun": 0.9})") ==
        "model.json: at /model/layers/0/momentun: unknown key 'momentun'; did you mean "
        "'momentum'?");
  CHECK(layer_error(R"({"id": "s", "type": "softmax", "axis": -1})") ==
        "model.json: at /model/layers/0/axis: unknown key 'axis'; the keys allowed here are "
        "'id', 'type', 'inputs', 'cycles' or 'checkpoint'");
}

TEST_CASE("attention heads must divide its input's hidden size") {
  CHECK(ipusim::models::testing::model_error(ipusim::models::testing::with_layers(
            "[4, 8]", R"([{"id": "a", "type": "attention", "heads": 3}])")) ==
        "model.json: at /model/layers/0: layer 'a' (attention) has 3 heads, which must divide "
        "hidden (the last axis), but the model input is [4, 8]");
  CHECK(ipusim::models::testing::model_error(ipusim::models::testing::with_layers(
            "[8]", R"([{"id": "a", "type": "attention", "heads": 2}])")) ==
        "model.json: at /model/layers/0: layer 'a' (attention) needs an input of shape "
        "[sequence, hidden], but the model input is [8]");
}

namespace {

// The README's table of layer types (under "### `model`"): each row's first cell names one or
// more types in backticks, its second cell their keys.
std::vector<std::pair<std::string, std::string>> readme_layer_rows() {
  std::istringstream in(ipusim::testing::read_file("README.md"));
  std::string line;
  bool in_section = false;
  std::vector<std::pair<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    if (line == "### `model`")
      in_section = true;
    else if (in_section && line.rfind("### ", 0) == 0)
      break;
    else if (in_section && line.rfind("| `", 0) == 0) {
      const auto split = line.find(" | ", 2);
      rows.emplace_back(line.substr(0, split), line.substr(split));
    }
  }
  return rows;
}

}  // namespace

TEST_CASE("the README documents every layer type and each of its config keys") {
  const auto rows = readme_layer_rows();
  for (const auto& name : layer_type_names()) {
    INFO(name);
    const auto row = std::find_if(rows.begin(), rows.end(), [&](const auto& r) {
      return r.first.find("`" + name + "`") != std::string::npos;
    });
    REQUIRE(row != rows.end());
    for (const auto& key : layer_type_keys(*layer_type_from_name(name))) {
      INFO(key);
      CHECK(row->second.find("`" + key + "`") != std::string::npos);
    }
  }
}

// A layer type's key is declared as every config key is, with the field it fills.
static_assert(std::is_base_of_v<core::Key, LayerKey>);

namespace {

// What the README states in parentheses right after "`key` (", up to the closing parenthesis
// (an enum's values) or the first comma (a default and a remark); "" when it states nothing.
std::string readme_default(const std::string& cell, const LayerKey& key, bool whole) {
  const std::string opening = "`" + std::string(key.name) + "` (";
  const auto start = cell.find(opening);
  if (start == std::string::npos)
    return "";
  const auto from = start + opening.size();
  const auto stop = whole ? cell.find(')', from) : cell.find_first_of(",)", from);
  std::string text = cell.substr(from, stop - from);
  std::erase(text, '`');
  return text;
}

std::string enum_values(const LayerKey& key) {
  std::string text;
  for (const std::string& value : key.choices)
    text += (text.empty() ? "" : ", ") + value;
  return text;
}

}  // namespace

TEST_CASE("the README's layer table agrees with each key's declared default and values") {
  const auto rows = readme_layer_rows();
  for (const auto& name : layer_type_names()) {
    const auto row = std::find_if(rows.begin(), rows.end(), [&](const auto& r) {
      return r.first.find("`" + name + "`") != std::string::npos;
    });
    REQUIRE(row != rows.end());
    for (const LayerKey& key : layer_type_row(*layer_type_from_name(name)).keys) {
      INFO(name << " " << key.name);
      CHECK(std::string(key.meaning).size() > 0);
      const bool listed = key.kind == KeyKind::kChoice || key.kind == KeyKind::kPadding;
      const std::string stated = readme_default(row->second, key, listed);
      if (stated.empty() || key.required)
        continue;  // a required key's parentheses say what it must be, not a default
      if (!key.default_text.empty())
        CHECK(stated == key.default_text);
      else if (key.kind == KeyKind::kChoice)
        CHECK(stated == enum_values(key));
      else if (key.kind == KeyKind::kPadding)
        CHECK(stated == "valid, same or [top, left, bottom, right]");
      else if (key.kind == KeyKind::kBool)
        CHECK(stated == (key.fallback != 0 ? "true" : "false"));
      else
        CHECK(std::stod(stated) == key.fallback);
    }
  }
}
