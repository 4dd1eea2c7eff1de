#include "models/import/keras_import.hpp"

#include <catch2/catch.hpp>
#include <fstream>

#include "models/layers/model.hpp"
#include "sim/core/config_file.hpp"
#include "sim/core/error.hpp"

namespace {

using namespace ipusim;
using nlohmann::json;

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

models::Model parse(const json& model) {
  const auto document = core::ConfigDocument::from_json(json{{"model", model}}, "imported.json");
  return models::parse_model(document.root().at("model"));
}

std::string import_error(const json& keras) {
  try {
    models::import_keras(keras, "model.json");
  } catch (const core::ConfigError& error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the Keras tutorial's CNN imports as the shipped config's model, softmax as the loss") {
  const auto imported =
      models::import_keras(read_json("tests/models/keras/keras_cnn.json"), "keras_cnn.json");
  CHECK(imported.keras_class == "Functional");
  CHECK(imported.keras_version == "2.11.0");
  const auto shipped = read_json("configs/keras_cnn_2stage.json").at("model");
  const auto imported_model = parse(imported.model);
  const auto shipped_model = parse(shipped);
  REQUIRE(imported_model.layers.size() == shipped_model.layers.size());
  for (std::size_t i = 0; i < shipped_model.layers.size(); ++i) {
    INFO(shipped_model.layers[i].id);
    CHECK(imported_model.layers[i].id == shipped_model.layers[i].id);
    CHECK(imported_model.layers[i].type == shipped_model.layers[i].type);
    CHECK(imported_model.info[i].output == shipped_model.info[i].output);
    CHECK(imported_model.info[i].params == shipped_model.info[i].params);
  }
  // Keras' model.summary() in the tutorial: 320 + 18,496 + 16,010.
  CHECK(imported_model.total_params() == 34826);
}

TEST_CASE("a Keras 3 transformer block imports with its inputs, norms and attention") {
  const auto imported = models::import_keras(
      read_json("tests/models/keras/keras3_transformer_block.json"), "block.json");
  const auto model = parse(imported.model);
  const auto& layers = imported.model.at("layers");
  CHECK(layers[1] ==
        json{{"id", "attention"}, {"type", "attention"}, {"heads", 4}, {"dropout", 0.1}});
  CHECK(layers[2] ==
        json{{"id", "residual"}, {"type", "add"}, {"inputs", {"tokens", "attention"}}});
  CHECK(layers[3] == json{{"id", "norm"}, {"type", "layer_norm"}, {"epsilon", 1e-6}});
  CHECK(layers.back() == json{{"id", "loss"}, {"type", "softmax_cross_entropy"}});
  // Keras' count: attention 4 x (32 x 32 + 32), layer norm 2 x 32, dense 32 x 64 + 64 and
  // 64 x 32 + 32, batch norm 2 x 512 trainable (and 2 x 512 moving), dense 512 x 5 + 5.
  CHECK(model.total_params() ==
        4 * (32 * 32 + 32) + 64 + (32 * 64 + 64) + (64 * 32 + 32) + 2 * 512 + (512 * 5 + 5));
  CHECK(models::check_keras_model(imported, model, "block.json") == 2 * 512);
}

TEST_CASE("a Keras import lists every layer it cannot represent, with names and places") {
  CHECK(import_error(read_json("tests/models/keras/keras_unsupported.json")) ==
        "model.json: cannot import 2 layer(s), so nothing was written:\n"
        "  'lstm' (LSTM) at /config/layers/2: no ipusim layer type for it\n"
        "  'out' (Dense) at /config/layers/3: activation 'sigmoid' has no ipusim equivalent "
        "(relu, gelu, tanh, or softmax ending the model)");
}

json embedding_model(const json& embedding_config) {
  return {{"class_name", "Sequential"},
          {"config",
           {{"name", "tokens"},
            {"layers",
             {{{"class_name", "InputLayer"},
               {"config", {{"name", "ids"}, {"batch_input_shape", {nullptr, 10}}}}},
              {{"class_name", "Embedding"}, {"config", embedding_config}},
              {{"class_name", "Flatten"}, {"config", {{"name", "flat"}}}},
              {{"class_name", "Dense"},
               {"config", {{"name", "out"}, {"units", 3}, {"activation", "softmax"}}}}}}}}};
}

TEST_CASE("a Keras Embedding imports as a plain lookup over the input's sequence") {
  const auto imported = models::import_keras(
      embedding_model({{"name", "embed"}, {"input_dim", 100}, {"output_dim", 8}}), "model.json");
  CHECK(imported.model["layers"][1] == json{{"id", "embed"},
                                            {"type", "embedding"},
                                            {"vocab_size", 100},
                                            {"hidden", 8},
                                            {"sequence_length", 10},
                                            {"positions", false},
                                            {"layer_norm", false}});
  // Keras' count: the table 100 x 8, the dense 80 x 3 + 3.
  CHECK(parse(imported.model).total_params() == 100 * 8 + 80 * 3 + 3);
  CHECK(import_error(embedding_model(
            {{"name", "embed"}, {"input_dim", 100}, {"output_dim", 8}, {"mask_zero", true}})) ==
        "model.json: cannot import 1 layer(s), so nothing was written:\n"
        "  'embed' (Embedding) at /config/layers/1: mask_zero passes a padding mask to later "
        "layers, which ipusim's layers do not take; give attention layers the mask as an input "
        "instead");
}

TEST_CASE("a Keras import names each layer's weights in ipusim's order") {
  const auto imported = models::import_keras(
      read_json("tests/models/keras/keras3_transformer_block.json"), "block.json");
  REQUIRE(!imported.weights.empty());
  CHECK(imported.weights[0].layer == "attention");
  CHECK(imported.weights[0].merge_heads);
  CHECK(imported.weights[0].names ==
        std::vector<std::string>{"query/kernel", "query/bias", "key/kernel", "key/bias",
                                 "value/kernel", "value/bias", "attention_output/kernel",
                                 "attention_output/bias"});
  CHECK(imported.weights[1].names == std::vector<std::string>{"gamma", "beta"});
}

TEST_CASE("a Keras import refuses what is not a one-input Keras model, saying where") {
  CHECK(import_error(json{{"layers", json::array()}}) ==
        "model.json: expected a Keras model as model.to_json() writes it: an object with "
        "\"class_name\" and \"config\"");
  const json no_shape = {
      {"class_name", "Sequential"},
      {"config",
       {{"layers", {{{"class_name", "Dense"}, {"config", {{"name", "d"}, {"units", 4}}}}}}}}};
  CHECK(import_error(no_shape) ==
        "model.json: at /config/layers/0: no input shape: build the model with an "
        "Input(shape=...) or input_shape before calling to_json()");
  const json unknown_sizes = {
      {"class_name", "Sequential"},
      {"config",
       {{"layers",
         {{{"class_name", "InputLayer"},
           {"config", {{"name", "x"}, {"batch_input_shape", {nullptr, nullptr, nullptr, 8}}}}},
          {{"class_name", "Dense"}, {"config", {{"name", "d"}, {"units", 4}}}}}}}}};
  CHECK(import_error(unknown_sizes) ==
        "model.json: at /config/layers/0: the input shape [null,null,8] per sample has a "
        "dimension of unknown size (None): ipusim simulates fixed sizes; build the model with "
        "Input(shape=...) of whole numbers");
  auto wide = read_json("tests/models/keras/keras3_transformer_block.json");
  wide["config"]["layers"][1]["config"]["key_dim"] = 16;
  const auto imported = models::import_keras(wide, "wide.json");
  std::string message;
  try {
    models::check_keras_model(imported, parse(imported.model), "wide.json");
  } catch (const core::ConfigError& error) {
    message = error.what();
  }
  CHECK(message ==
        "wide.json: 'attention' (MultiHeadAttention): num_heads x key_dim is 64 but "
        "its input is 32 wide; ipusim's attention splits the input width among the "
        "heads");
}

TEST_CASE("a Keras layer whose config lacks a key or has one of another type is listed") {
  json model = embedding_model({{"name", "embed"}, {"input_dim", 100}, {"outputdim", 8}});
  model["config"]["layers"][3]["config"]["activation"] = 7;
  CHECK(import_error(model) ==
        "model.json: cannot import 2 layer(s), so nothing was written:\n"
        "  'embed' (Embedding) at /config/layers/1: its config is not as Keras writes it: key "
        "'output_dim' not found\n"
        "  'out' (Dense) at /config/layers/3: its config is not as Keras writes it: type must be "
        "string, but is number");
  model["config"]["layers"][2]["class_name"] = 3;
  CHECK(import_error(model) ==
        "model.json: at /config/layers/2: expected a layer as Keras writes it (type must be "
        "string, but is number)");
  model["keras_version"] = 3;
  model["config"]["layers"][2]["class_name"] = "Flatten";
  CHECK(import_error(model) ==
        "model.json: expected a Keras model as model.to_json() writes it (type must be "
        "string, but is number)");
}

json pooled_model(const json& pool_config) {
  return {
      {"class_name", "Sequential"},
      {"config",
       {{"name", "pooled"},
        {"layers",
         {{{"class_name", "InputLayer"},
           {"config", {{"name", "images"}, {"batch_input_shape", {nullptr, 8, 8, 3}}}}},
          {{"class_name", "Conv2D"},
           {"config",
            {{"name", "conv"}, {"filters", 4}, {"kernel_size", {3, 3}}, {"activation", "relu"}}}},
          {{"class_name", "GlobalAveragePooling2D"}, {"config", pool_config}},
          {{"class_name", "Dense"},
           {"config", {{"name", "out"}, {"units", 5}, {"activation", "softmax"}}}}}}}}};
}

TEST_CASE("a Keras GlobalAveragePooling2D pools each image to its channels") {
  const auto imported = models::import_keras(pooled_model({{"name", "gap"}}), "pooled.json");
  const auto model = parse(imported.model);
  REQUIRE(model.layers.size() == 5);
  CHECK(model.layers[2].type == models::LayerType::kGlobalAveragePool2d);
  CHECK(model.info[2].output == models::Shape{4});  // 6 x 6 x 4 pooled to the 4 channels
  CHECK(model.total_params() == (3 * 3 * 3 * 4 + 4) + (4 * 5 + 5));
  CHECK(import_error(pooled_model({{"name", "gap"}, {"keepdims", true}})) ==
        "model.json: cannot import 1 layer(s), so nothing was written:\n"
        "  'gap' (GlobalAveragePooling2D) at /config/layers/2: only channels_last pooling to "
        "[channels] (keepdims false) is supported");
}

TEST_CASE("Keras activations that alias each other in a cycle are refused, naming them") {
  const auto layer = [](const std::string& name, const std::string& reads) {
    return json{{"class_name", "Activation"},
                {"name", name},
                {"config", {{"name", name}, {"activation", "linear"}}},
                {"inbound_nodes", {{{reads, 0, 0, json::object()}}}}};
  };
  const json input = {{"class_name", "InputLayer"},
                      {"name", "in"},
                      {"config", {{"name", "in"}, {"batch_input_shape", {nullptr, 4}}}},
                      {"inbound_nodes", json::array()}};
  const json out = {{"class_name", "Dense"},
                    {"name", "out"},
                    {"config", {{"name", "out"}, {"units", 3}, {"activation", "softmax"}}},
                    {"inbound_nodes", {{{"a", 0, 0, json::object()}}}}};
  const json model = {
      {"class_name", "Functional"},
      {"config", {{"layers", {input, layer("a", "b"), layer("b", "c"), layer("c", "a"), out}}}}};
  CHECK(import_error(model) ==
        "model.json: the layers 'a' -> 'b' -> 'c' -> 'a' read each other "
        "in a cycle");
  const json self = {{"class_name", "Functional"},
                     {"config", {{"layers", {input, layer("a", "a"), out}}}}};
  CHECK(import_error(self) == "model.json: the layers 'a' -> 'a' read each other in a cycle");
}

// An 8x8x4 image through `layers` (Keras configs) and a softmax Dense of 3.
json family_model(const json& layers) {
  json all = {{{"class_name", "InputLayer"},
               {"config", {{"name", "images"}, {"batch_shape", {nullptr, 8, 8, 4}}}}}};
  for (const auto& layer : layers)
    all.push_back(layer);
  all.push_back({{"class_name", "GlobalAveragePooling2D"}, {"config", {{"name", "gap"}}}});
  all.push_back({{"class_name", "Dense"},
                 {"config", {{"name", "out"}, {"units", 3}, {"activation", "softmax"}}}});
  return {{"class_name", "Sequential"}, {"config", {{"name", "family"}, {"layers", all}}}};
}

TEST_CASE("Keras' grouped, depthwise and transposed convolutions, crops and group norms import") {
  const json depthwise = {{"name", "dw"},
                          {"kernel_size", {3, 3}},
                          {"padding", "same"},
                          {"activation", "relu"},
                          {"build_config", {{"input_shape", {nullptr, 8, 8, 4}}}}};
  const auto imported = models::import_keras(
      family_model(
          {{{"class_name", "Conv2D"},
            {"config", {{"name", "grouped"}, {"filters", 4}, {"kernel_size", 1}, {"groups", 2}}}},
           {{"class_name", "DepthwiseConv2D"}, {"config", depthwise}},
           {{"class_name", "Conv2DTranspose"},
            {"config", {{"name", "up"}, {"filters", 2}, {"kernel_size", 1}, {"strides", 2}}}},
           {{"class_name", "Cropping2D"}, {"config", {{"name", "crop"}, {"cropping", {1, 2}}}}},
           {{"class_name", "GroupNormalization"}, {"config", {{"name", "norm"}, {"groups", 2}}}}}),
      "family.json");
  const json& layers = imported.model["layers"];
  CHECK(layers[1]["groups"] == 2);
  CHECK(layers[2] == json{{"id", "dw"},
                          {"type", "conv2d"},
                          {"filters", 4},
                          {"groups", 4},
                          {"kernel", 3},
                          {"stride", 1},
                          {"padding", "same"},
                          {"bias", true},
                          {"activation", "relu"}});
  // Keras' "valid" 1x1 kernel of stride 2 gives 8 x 2 rows: output_padding 1.
  CHECK(layers[3]["output_padding"] == json{1, 1});
  CHECK(layers[4]["cropping"] == json{1, 2});
  CHECK(layers[5]["epsilon"] == 1e-3);
  CHECK(imported.weights[1].names == std::vector<std::string>{"depthwise_kernel", "bias"});
  CHECK(imported.weights[1].merge_heads);
  const auto model = parse(imported.model);
  CHECK(model.info[3].output == models::Shape{16, 16, 2});
  CHECK(model.info[4].output == models::Shape{14, 12, 2});
  // Keras' counts: 1x1x2x4 + 4, 3x3x4 + 4, 1x1x2x4 + 2, gamma and beta 2 each, 2x3 + 3.
  CHECK(model.total_params() == 12 + 40 + 10 + 4 + 9);
}

TEST_CASE("Keras' dilated Conv2D and DepthwiseConv2D import with their dilation") {
  const json depthwise = {{"name", "dw"},
                          {"kernel_size", 3},
                          {"dilation_rate", {2, 2}},
                          {"build_config", {{"input_shape", {nullptr, 8, 8, 4}}}}};
  const auto imported = models::import_keras(
      family_model({{{"class_name", "Conv2D"},
                     {"config",
                      {{"name", "atrous"},
                       {"filters", 4},
                       {"kernel_size", 3},
                       {"dilation_rate", {1, 3}},
                       {"padding", "same"}}}},
                    {{"class_name", "DepthwiseConv2D"}, {"config", depthwise}}}),
      "family.json");
  const json& layers = imported.model["layers"];
  CHECK(layers[1]["dilation"] == json{1, 3});
  CHECK(layers[2]["dilation"] == 2);
  const auto model = parse(imported.model);
  // "same" keeps 8 x 8; the depthwise 3x3 dilated by 2 spans 5: 8 - 5 + 1 = 4 a side.
  CHECK(model.info[1].output == models::Shape{8, 8, 4});
  CHECK(model.info[2].output == models::Shape{4, 4, 4});
}

json sequence_model(const json& layers) {
  json all = {{{"class_name", "InputLayer"},
               {"config", {{"name", "steps"}, {"batch_shape", {nullptr, 16, 4}}}}}};
  for (const auto& layer : layers)
    all.push_back(layer);
  all.push_back({{"class_name", "Flatten"}, {"config", {{"name", "flat"}}}});
  all.push_back({{"class_name", "Dense"},
                 {"config", {{"name", "out"}, {"units", 3}, {"activation", "softmax"}}}});
  return {{"class_name", "Sequential"}, {"config", {{"name", "tcn"}, {"layers", all}}}};
}

TEST_CASE("Keras' Conv1D imports as conv1d, causal padding as (kernel - 1) x dilation before") {
  const auto imported = models::import_keras(sequence_model({{{"class_name", "Conv1D"},
                                                              {"config",
                                                               {{"name", "causal"},
                                                                {"filters", 6},
                                                                {"kernel_size", {3}},
                                                                {"strides", {1}},
                                                                {"dilation_rate", {2}},
                                                                {"padding", "causal"},
                                                                {"activation", "relu"}}}},
                                                             {{"class_name", "Conv1D"},
                                                              {"config",
                                                               {{"name", "down"},
                                                                {"filters", 6},
                                                                {"kernel_size", {2}},
                                                                {"strides", {2}},
                                                                {"padding", "same"},
                                                                {"groups", 2},
                                                                {"use_bias", false}}}}}),
                                             "tcn.json");
  const json& layers = imported.model["layers"];
  CHECK(layers[1] == json{{"id", "causal"},
                          {"type", "conv1d"},
                          {"filters", 6},
                          {"kernel", 3},
                          {"stride", 1},
                          {"padding", {4, 0}},
                          {"bias", true},
                          {"dilation", 2},
                          {"activation", "relu"}});
  CHECK(layers[2]["groups"] == 2);
  CHECK(imported.weights[0].names == std::vector<std::string>{"kernel", "bias"});
  CHECK(imported.weights[1].names == std::vector<std::string>{"kernel"});
  const auto model = parse(imported.model);
  // 16 steps padded by 4 before, a span of 5: 16 outputs; "same" at stride 2: 8.
  CHECK(model.info[1].output == models::Shape{16, 6});
  CHECK(model.info[2].output == models::Shape{8, 6});
  // Keras' counts: 3x4x6 + 6, 2x3x6, then 48x3 + 3.
  CHECK(model.total_params() == 78 + 36 + 147);
  CHECK(
      import_error(sequence_model(
          {{{"class_name", "Conv1D"},
            {"config",
             {{"name", "odd"}, {"filters", 2}, {"kernel_size", {3}}, {"dilation_rate", {0}}}}}})) ==
      "model.json: cannot import 1 layer(s), so nothing was written:\n"
      "  'odd' (Conv1D) at /config/layers/1: kernel_size [3], strides 1 and dilation_rate [0] "
      "(expected an integer of 1 or more each)");
}

TEST_CASE("Keras' depthwise multipliers and transposed output_padding with same are refused") {
  const json depthwise = {{"name", "dw"},
                          {"kernel_size", 3},
                          {"depth_multiplier", 2},
                          {"build_config", {{"input_shape", {nullptr, 8, 8, 4}}}}};
  CHECK(import_error(family_model(
            {{{"class_name", "DepthwiseConv2D"}, {"config", depthwise}},
             {{"class_name", "DepthwiseConv2D"}, {"config", {{"name", "dw2"}, {"kernel_size", 3}}}},
             {{"class_name", "Conv2DTranspose"},
              {"config",
               {{"name", "up"},
                {"filters", 2},
                {"kernel_size", 3},
                {"padding", "same"},
                {"output_padding", 1}}}}})) ==
        "model.json: cannot import 3 layer(s), so nothing was written:\n"
        "  'dw' (DepthwiseConv2D) at /config/layers/1: depth_multiplier 2 (ipusim's depthwise "
        "conv2d gives one output channel an input channel)\n"
        "  'dw2' (DepthwiseConv2D) at /config/layers/2: no input channels in its config (Keras 3 "
        "writes them in build_config; tf.keras 2 does not): build the model with Keras 3\n"
        "  'up' (Conv2DTranspose) at /config/layers/3: output_padding with padding \"same\" "
        "(ipusim's sets the output size)");
}

namespace {

// inp -> a (Dense 8, reading `inbound`) -> out (Dense 3, softmax), naming `output` as the
// model's output.
json functional(const json& inbound, const std::string& output) {
  const auto dense = [](const std::string& name, int units, const std::string& activation,
                        const json& reads) {
    return json{{"class_name", "Dense"},
                {"config", {{"name", name}, {"units", units}, {"activation", activation}}},
                {"name", name},
                {"inbound_nodes", reads}};
  };
  const json input = {{"class_name", "InputLayer"},
                      {"config", {{"name", "inp"}, {"batch_input_shape", {nullptr, 8}}}},
                      {"name", "inp"},
                      {"inbound_nodes", json::array()}};
  return {{"class_name", "Functional"},
          {"config",
           {{"name", "f"},
            {"layers",
             {input, dense("a", 8, "linear", inbound),
              dense("out", 3, "softmax", json::parse(R"([[["a", 0, 0, {}]]])"))}},
            {"input_layers", json::parse(R"([["inp", 0, 0]])")},
            {"output_layers", {{output, 0, 0}}}}}};
}

}  // namespace

TEST_CASE("a Keras graph Keras' own loader would refuse is refused, saying where") {
  const json once = json::parse(R"([[["inp", 0, 0, {}]]])");
  CHECK(import_error(functional(once, "out")).empty());
  CHECK(import_error(functional(once, "zzz")) ==
        "model.json: at /config/output_layers/0: names layer 'zzz', which the model does not "
        "have");
  const json far = json::parse(R"([[["inp", 4611686018427387904, 0, {}]]])");
  CHECK(import_error(functional(far, "out")) ==
        "model.json: at /config/layers/1/inbound_nodes: the tensor "
        "[\"inp\",4611686018427387904,0,{}] is not its layer's first call's first output (node "
        "and tensor index 0), the only one an imported layer has");
  // A Dense called on five tensors keeps them all, and the model refuses a dense over five.
  const json five = json::parse(
      R"([[["inp", 0, 0, {}], ["inp", 0, 0, {}], ["inp", 0, 0, {}], ["inp", 0, 0, {}],
           ["inp", 0, 0, {}]]])");
  const auto imported = models::import_keras(functional(five, "out"), "five.json");
  CHECK(imported.model.at("layers").at(1).at("inputs").size() == 5);
  CHECK_THROWS_AS(parse(imported.model), core::ConfigError);
}
