#include <catch2/catch.hpp>

#include "model_test_support.hpp"
#include "models/layers/shape_inference.hpp"

using namespace ipusim::models;
using ipusim::models::testing::model_from;

namespace {

std::vector<std::string> shapes_of(const Model& model) {
  std::vector<std::string> shapes;
  for (const LayerInfo& info : model.info)
    shapes.push_back(shape_text(info.output));
  return shapes;
}

std::vector<std::int64_t> params_of(const Model& model) {
  std::vector<std::int64_t> params;
  for (const LayerInfo& info : model.info)
    params.push_back(info.params);
  return params;
}

const char* const kKerasCnn = R"({
  "name": "keras_cnn", "input": {"shape": [28, 28, 1]}, "classes": 10,
  "layers": [
    {"id": "conv2d", "type": "conv2d", "filters": 32, "kernel": [3, 3], "activation": "relu"},
    {"id": "max_pooling2d", "type": "maxpool2d", "pool": 2},
    {"id": "conv2d_1", "type": "conv2d", "filters": 64, "kernel": 3, "activation": "relu"},
    {"id": "max_pooling2d_1", "type": "maxpool2d", "pool": [2, 2]},
    {"id": "flatten", "type": "flatten"},
    {"id": "dropout", "type": "dropout", "rate": 0.5},
    {"id": "dense", "type": "dense", "units": 10},
    {"id": "loss", "type": "softmax_cross_entropy"}
  ]})";

std::string bert_large() {
  std::string layers = R"({"id": "embeddings", "type": "embedding", "vocab_size": 30522,
      "hidden": 1024, "sequence_length": 128, "max_positions": 512, "token_types": 2})";
  for (int i = 1; i <= 24; ++i) {
    layers += R"(, {"id": "encoder)" + std::to_string(i) +
              R"(", "type": "transformer_encoder", "hidden": 1024, "heads": 16,
                 "sequence_length": 128, "ffn": 4096})";
  }
  layers += R"(, {"id": "pooler", "type": "dense", "units": 1024, "activation": "tanh"})";
  return R"({"name": "bert_large", "input": {"shape": [128], "dtype": "fp16"}, "layers": [)" +
         layers + "]}";
}

Model shipped_config(const std::string& path) {
  const auto document =
      ipusim::core::ConfigDocument::load(std::string(IPUSIM_SOURCE_DIR) + "/configs/" + path, {});
  return parse_model(document.root().at("model"));
}

}  // namespace

TEST_CASE("the Keras CNN has the shapes and parameter counts Keras prints") {
  const Model model = model_from(kKerasCnn);
  CHECK(shapes_of(model) == std::vector<std::string>{"[26, 26, 32]", "[13, 13, 32]", "[11, 11, 64]",
                                                     "[5, 5, 64]", "[1600]", "[1600]", "[10]",
                                                     "[]"});
  CHECK(params_of(model) == std::vector<std::int64_t>{320, 0, 18496, 0, 0, 0, 16010, 0});
  CHECK(model.total_params() == 34826);
  CHECK(model.trainable);
  CHECK(model.classes == 10);
}

TEST_CASE("the TF1 MNIST MLP has 244,522 parameters") {
  const Model model = model_from(R"({
    "name": "tf1_mnist", "input": {"shape": [28, 28], "dtype": "fp32"}, "classes": 10,
    "layers": [
      {"id": "flatten", "type": "flatten"},
      {"id": "dense256", "type": "dense", "units": 256, "activation": "relu"},
      {"id": "dense128", "type": "dense", "units": 128, "activation": "relu"},
      {"id": "dense64", "type": "dense", "units": 64, "activation": "relu"},
      {"id": "dense32", "type": "dense", "units": 32, "activation": "relu"},
      {"id": "logits", "type": "dense", "units": 10},
      {"id": "cel", "type": "softmax_cross_entropy"}
    ]})");
  CHECK(params_of(model) == std::vector<std::int64_t>{0, 200960, 32896, 8256, 2080, 330, 0});
  CHECK(model.total_params() == 244522);
}

TEST_CASE("the popxl MNIST model has 932,362 parameters") {
  const Model model = model_from(R"({
    "name": "popxl_mnist", "input": {"shape": [784]},
    "layers": [
      {"id": "fc1", "type": "dense", "units": 512, "activation": "gelu"},
      {"id": "fc2", "type": "dense", "units": 512, "activation": "gelu"},
      {"id": "fc3", "type": "dense", "units": 512, "activation": "gelu"},
      {"id": "fc4", "type": "dense", "units": 10},
      {"id": "loss", "type": "softmax_cross_entropy"}
    ]})");
  CHECK(model.total_params() == 932362);
  CHECK(model.classes == 10);
}

TEST_CASE("BERT-Large has the 335,141,888 parameters HuggingFace reports for BertModel") {
  const Model model = model_from(bert_large());
  CHECK(model.total_params() == 335141888);
  CHECK(model.info[0].params == 31782912);
  CHECK(model.info[1].params == 12596224);
  CHECK(model.info[25].params == 1049600);
  CHECK(shape_text(model.info[25].output) == "[128, 1024]");
  CHECK_FALSE(model.trainable);
  CHECK(model.classes == 0);
}

TEST_CASE("a BERT-Large encoder costs 24·s·h² + 4·s²·h FLOPs and keeps 32·s·h + 4·a·s² bytes") {
  const Model model = model_from(bert_large());
  const LayerInfo& encoder = model.info[1];
  CHECK(encoder.forward_flops == 24.0 * 128 * 1024 * 1024 + 4.0 * 128 * 128 * 1024);
  CHECK(encoder.backward_flops == 2 * encoder.forward_flops);
  // Korthikanti et al.'s 34·s·h + 5·a·s² for fp16, less the dropout masks (2·s·h + a·s²): the
  // three dropouts keep an 8-byte seed each per micro-batch instead.
  CHECK(encoder.saved_bytes == 32 * 128 * 1024 + 4 * 16 * 128 * 128);
  CHECK(encoder.seed_bytes == 3 * 8);
  CHECK(encoder.weight_bytes == 12596224 * 2);
  // The embedding keeps its layer norm's input (fp16) and the int32 token ids.
  CHECK(model.info[0].saved_bytes == 128 * 1024 * 2 + 128 * 4);
}

TEST_CASE("the models shipped in configs/ parse with their published parameter counts") {
  CHECK(shipped_config("models/tf1_mnist_mlp.json").total_params() == 244522);
  CHECK(shipped_config("keras_cnn_2stage.json").total_params() == 34826);
  CHECK(shipped_config("popxl_mnist_3stage.json").total_params() == 932362);
  // The tiny ViT: patch projection 28 x 32 + 32; per encoder (h 32, ffn 64) Q, K, V, O 4 x (h x h
  // + h), two layer norms 2 x 2h, ffn h x 64 + 64 and 64 x h + h; the classifier 32 x 10 + 10.
  CHECK(shipped_config("vit_tiny_fashion_mnist.json").total_params() ==
        (28 * 32 + 32) + 2 * (4 * (32 * 32 + 32) + 2 * 64 + (32 * 64 + 64) + (64 * 32 + 32)) +
            (32 * 10 + 10));
  // BertModel without its pooler (334,092,288), the MLM head's transform and the decoder's bias;
  // the decoder's weights are the word embeddings'. Hugging Face's BertForMaskedLM has 2,048
  // more: the head's layer norm, which ipusim does not model yet.
  CHECK(shipped_config("bert_large_4ipu.json").total_params() ==
        334092288 + (1024 * 1024 + 1024) + 30522);
  // The tiny BERT: embeddings (64 + 16 + 2) x 32 + 2 x 32; four encoders (h 32, ffn 64) whose
  // attention halves hold 4h² + 4h + 2h and FFN halves 2h·ffn + ffn + h + 2h; the head's
  // transform 32 x 32 + 32, layer norm 2 x 32 and decoder bias 64. Whole or in halves, alike.
  const std::int64_t tiny_bert =
      (64 + 16 + 2) * 32 + 2 * 32 +
      4 * ((4 * 32 * 32 + 4 * 32 + 2 * 32) + (2 * 32 * 64 + 64 + 32 + 2 * 32)) + (32 * 32 + 32) +
      2 * 32 + 64;
  CHECK(tiny_bert == 38048);
  CHECK(shipped_config("bert_tiny_4ipu.json").total_params() == tiny_bert);
  CHECK(shipped_config("bert_tiny_halves_4ipu.json").total_params() == tiny_bert);
  // The tiny GPT: word and position tables (48 + 16) x 32 without a layer norm; two pre-LN
  // blocks (h 32) of two layer norms 2 x 2h, attention's Q, K, V, O 4 x (h² + h), and the MLP
  // h x 128 + 128 and 128 x h + h; the final layer norm 2h; the LM head is the word table.
  CHECK(shipped_config("gpt_tiny_2ipu.json").total_params() ==
        (48 + 16) * 32 + 2 * (2 * 64 + 4 * (32 * 32 + 32) + (32 * 128 + 128) + (128 * 32 + 32)) +
            64);
}

namespace {

// A ResNet bottleneck of width w reading c channels: 1x1 (c -> w), 3x3 (w -> w) and 1x1
// (w -> 4w) convolutions without bias, each with a batch norm's scale and shift; the first
// bottleneck of a stage adds a 1x1 projection (c -> 4w) and its batch norm.
std::int64_t bottleneck_params(std::int64_t c, std::int64_t w, bool projection) {
  const std::int64_t convolutions = c * w + 3 * 3 * w * w + w * 4 * w;
  const std::int64_t batch_norms = 2 * w + 2 * w + 2 * 4 * w;
  return convolutions + batch_norms + (projection ? c * 4 * w + 2 * 4 * w : 0);
}

// A stage of `blocks` bottlenecks of width w after c channels.
std::int64_t stage_params(std::int64_t blocks, std::int64_t c, std::int64_t w) {
  return bottleneck_params(c, w, true) + (blocks - 1) * bottleneck_params(4 * w, w, false);
}

std::string output_of(const Model& model, const std::string& id) {
  const int index = model.index_of(id);
  return index < 0 ? "no layer '" + id + "'" : shape_text(model.info[std::size_t(index)].output);
}

}  // namespace

TEST_CASE(
    "GPT-2 small has Hugging Face's 124,439,808 parameters plus its 15 padded vocabulary rows") {
  // Word and position tables V x h + 1024 x h; per block two layer norms 2 x 2h, attention's
  // packed Q, K, V h x 3h + 3h and projection h² + h, the MLP h x 4h + 4h and 4h x h + h; the
  // final layer norm 2h; the LM head is the word table. GPT2LMHeadModel counts the same with
  // V = 50257; Graphcore pads it to 50272.
  const std::int64_t h = 768;
  const std::int64_t block =
      2 * 2 * h + (h * 3 * h + 3 * h) + (h * h + h) + (h * 4 * h + 4 * h) + (4 * h * h + h);
  const auto gpt2 = [&](std::int64_t vocab) { return vocab * h + 1024 * h + 12 * block + 2 * h; };
  CHECK(gpt2(50257) == 124439808);
  CHECK(shipped_config("examples/gpt2_small_pod16.json").total_params() == gpt2(50272));
}

TEST_CASE("ResNeXt-101 32x4d has torchvision's 44,177,704 parameters") {
  // torchvision's ResNet(Bottleneck, [3, 4, 23, 3], groups=32, width_per_group=4) counts
  // 44,177,704 with batch norms; a group norm has the same scale and shift per channel.
  CHECK(shipped_config("examples/resnext101_pod16.json").total_params() == 44177704);
}

TEST_CASE("U-Net has the parameters of its convolutions, by closed form") {
  // 3x3 convolutions 9·in·out + out, 2x2 transposed ones 4·in·out + out, the 1x1 logits 64·2 + 2.
  const auto conv = [](std::int64_t k, std::int64_t in, std::int64_t out) {
    return k * k * in * out + out;
  };
  const std::int64_t f[] = {64, 128, 256, 512, 1024};
  std::int64_t total = conv(3, 1, 64) + conv(3, 64, 64) + conv(1, 64, 2);
  for (int level = 1; level < 5; ++level)
    total += conv(3, f[level - 1], f[level]) + conv(3, f[level], f[level]);
  for (int level = 4; level > 0; --level) {
    total += conv(2, f[level], f[level - 1]);          // the transposed convolution
    total += conv(3, 2 * f[level - 1], f[level - 1]);  // after the concatenated skip
    total += conv(3, f[level - 1], f[level - 1]);
  }
  CHECK(total == 31030658);
  CHECK(shipped_config("examples/unet_bow2000.json").total_params() == total);
}

TEST_CASE("ResNet-50 v1.5 has torchvision's 25,557,032 trainable parameters") {
  const Model model = shipped_config("models/resnet50.json");
  // The 7x7 stem convolution and its batch norm; stages of 3, 4, 6 and 3 bottlenecks; the
  // 2048 -> 1000 classifier with its bias.
  const std::int64_t stem = 7 * 7 * 3 * 64 + 2 * 64;
  const std::int64_t stages = stage_params(3, 64, 64) + stage_params(4, 256, 128) +
                              stage_params(6, 512, 256) + stage_params(3, 1024, 512);
  const std::int64_t classifier = 2048 * 1000 + 1000;
  CHECK(stem + stages + classifier == 25557032);
  CHECK(model.total_params() == stem + stages + classifier);
  // 4 stem layers, 16 bottlenecks of 10 layers and 4 projections of 2, pool, dense and loss.
  CHECK(model.layers.size() == 4 + 16 * 10 + 4 * 2 + 3);
  CHECK(output_of(model, "conv1_conv") == "[112, 112, 64]");
  CHECK(output_of(model, "pool1_pool") == "[56, 56, 64]");
  CHECK(output_of(model, "conv2_block3_out") == "[56, 56, 256]");
  // v1.5: the stride is on the 3x3 convolution, not on the first 1x1.
  CHECK(output_of(model, "conv3_block1_1_conv") == "[56, 56, 128]");
  CHECK(output_of(model, "conv3_block1_2_conv") == "[28, 28, 128]");
  CHECK(output_of(model, "conv3_block1_0_conv") == "[28, 28, 512]");
  CHECK(output_of(model, "conv4_block6_out") == "[14, 14, 1024]");
  CHECK(output_of(model, "conv5_block3_out") == "[7, 7, 2048]");
  CHECK(output_of(model, "avg_pool") == "[2048]");
  CHECK(model.trainable);
  CHECK(model.classes == 1000);
}

TEST_CASE("the host call counts ResNet-50's 161 and BERT-Large's 298 weight tensors") {
  // 53 convolutions without biases, 53 batch norms' scales and shifts, the classifier's weight
  // and bias.
  CHECK(shipped_config("models/resnet50.json").weight_tensors() == 53 + 2 * 53 + 2);
  // MLPerf's BERT: the word, position and type tables and their layer norm; 24 encoders of 12
  // (Q, K and V packed with its bias, the output projection and its bias, two layer norms, two
  // FFN layers and their biases); the MLM transform's weight and bias and its layer norm; the
  // decoder's bias, its weight being the word table.
  CHECK(shipped_config("mlperf/bert_v1.0_pod16.json").weight_tensors() == 5 + 24 * 12 + 2 + 2 + 1);
  // An encoder's halves hold its tensors between them.
  CHECK(shipped_config("mlperf/bert_v2.0_pod16.json").weight_tensors() == 5 + 24 * 12 + 2 + 2 + 1);
}

TEST_CASE("the tiny ResNet on Fashion-MNIST has 9,794 parameters") {
  // 3x3 convolutions without bias, each with a batch norm's 2 per filter: the stem (1 -> 8),
  // block 1 (8 -> 8 twice), block 2 (8 -> 16, 16 -> 16 and the 1x1 projection 8 -> 16), block 3
  // (16 -> 16 twice); the 16 -> 10 classifier with its bias.
  const auto conv_bn = [](std::int64_t taps, std::int64_t in, std::int64_t out) {
    return taps * in * out + 2 * out;
  };
  const std::int64_t expected = conv_bn(9, 1, 8) + 2 * conv_bn(9, 8, 8) + conv_bn(9, 8, 16) +
                                conv_bn(9, 16, 16) + conv_bn(1, 8, 16) + 2 * conv_bn(9, 16, 16) +
                                (16 * 10 + 10);
  CHECK(expected == 9794);
  const Model model = shipped_config("resnet_tiny_fashion_mnist.json");
  CHECK(model.total_params() == expected);
  CHECK(shape_text(model.info[std::size_t(model.index_of("block2_out"))].output) == "[14, 14, 16]");
  CHECK(shape_text(model.info[std::size_t(model.index_of("avg_pool"))].output) == "[16]");
}
