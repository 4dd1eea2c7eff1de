#include "models/layers/model.hpp"

#include <catch2/catch.hpp>

#include "model_test_support.hpp"
#include "models/layers/recompute_plan.hpp"
#include "models/layers/shape_inference.hpp"

using namespace ipusim::models;
using ipusim::models::testing::model_error;
using ipusim::models::testing::model_from;
using ipusim::models::testing::with_layers;

namespace {

// A model whose second layer is `layer_json`, fed by a dense layer 'a' of 32 units.
std::string after_dense(const std::string& input_shape, const std::string& layer_json) {
  return with_layers(input_shape,
                     R"([{"id": "a", "type": "dense", "units": 32}, )" + layer_json + "]");
}

}  // namespace

TEST_CASE("layers without inputs continue from the layer before them") {
  const Model model = model_from(with_layers("[4]", R"([
      {"id": "in", "type": "input", "shape": [4]},
      {"id": "a", "type": "dense", "units": 3},
      {"id": "b", "type": "dense", "units": 3, "inputs": ["in"]},
      {"id": "sum", "type": "add", "inputs": ["a", "b"]}])"));
  CHECK(model.graph.inputs_of(1) == std::vector<int>{0});
  CHECK(model.graph.inputs_of(2) == std::vector<int>{0});
  CHECK(model.index_of("sum") == 3);
  CHECK(model.index_of("nope") == -1);
  CHECK(model.layer_ids() == std::vector<std::string>{"in", "a", "b", "sum"});
  CHECK(model.name == "m");
  CHECK(model.dtype == DType::kFp32);
  CHECK_FALSE(model.trainable);
}

TEST_CASE("graph errors in a config name its file and the layer's JSON pointer") {
  CHECK(model_error(with_layers("[4]", R"([
      {"id": "a", "type": "dense", "units": 3},
      {"id": "a", "type": "dense", "units": 3}])")) ==
        "model.json: at /model/layers/1/id: duplicate layer id 'a': the layer at /model/layers/0 "
        "has it too");
}

TEST_CASE("the model section rejects unknown keys, empty shapes and empty layer lists") {
  CHECK(model_error(R"({"input": {"shape": [4]}, "layer": []})") ==
        "model.json: at /model/layer: unknown key 'layer'; did you mean 'layers'?");
  CHECK(model_error(R"({"input": {"shape": []}, "layers": []})") ==
        "model.json: at /model/input/shape: expected a shape with at least one dimension, found "
        "[]");
  CHECK(model_error(R"({"input": {"shape": [4]}, "layers": []})") ==
        "model.json: at /model/layers: a model needs at least one layer");
  CHECK(model_error(R"({"input": {"shape": [4], "dtype": "bf16"}, "layers": []})") ==
        "model.json: at /model/input/dtype: unknown value 'bf16'; did you mean 'fp16'?");
}

TEST_CASE("add names both inputs and their shapes when they differ") {
  CHECK(model_error(with_layers("[8]", R"([
      {"id": "in", "type": "input"},
      {"id": "a", "type": "dense", "units": 32},
      {"id": "b", "type": "dense", "units": 64, "inputs": ["in"]},
      {"id": "sum", "type": "add", "inputs": ["a", "b"]}])")) ==
        "model.json: at /model/layers/3: layer 'sum' (add) needs inputs of equal shape, but 'a' "
        "gives [32] and 'b' gives [64]");
}

TEST_CASE("concat joins along one axis and checks the others") {
  const Model model = model_from(with_layers("[4, 4, 3]", R"([
      {"id": "in", "type": "input"},
      {"id": "a", "type": "conv2d", "filters": 8, "kernel": 1},
      {"id": "cat", "type": "concat", "inputs": ["a", "in"], "axis": -1}])"));
  CHECK(shape_text(model.info[2].output) == "[4, 4, 11]");
  CHECK(model_error(with_layers("[4, 4, 3]", R"([
      {"id": "in", "type": "input"},
      {"id": "a", "type": "conv2d", "filters": 8, "kernel": 2},
      {"id": "cat", "type": "concat", "inputs": ["in", "a"]}])")) ==
        "model.json: at /model/layers/2: layer 'cat' (concat) needs inputs that agree on every "
        "axis but axis 2, but 'in' gives [4, 4, 3] and 'a' gives [3, 3, 8]");
  CHECK(model_error(with_layers("[4, 4, 3]", R"([
      {"id": "in", "type": "input"},
      {"id": "f", "type": "flatten"},
      {"id": "cat", "type": "concat", "inputs": ["in", "f"]}])")) ==
        "model.json: at /model/layers/2: layer 'cat' (concat) needs inputs of equal rank, but "
        "'in' gives [4, 4, 3] and 'f' gives [48]");
  CHECK(model_error(with_layers("[4, 4, 3]", R"([
      {"id": "in", "type": "input"},
      {"id": "cat", "type": "concat", "inputs": ["in", "in"], "axis": 3}])")) ==
        "model.json: at /model/layers/1: layer 'cat' (concat) has axis 3, but its inputs have 3 "
        "axes (allowed: -3 to 2)");
}

TEST_CASE("a conv2d kernel or pool window larger than its input is refused for valid padding") {
  CHECK(model_error(with_layers("[28, 28, 1]", R"([
      {"id": "pool", "type": "maxpool2d", "pool": 8},
      {"id": "conv", "type": "conv2d", "filters": 4, "kernel": [3, 5]}])")) ==
        "model.json: at /model/layers/1: layer 'conv' (conv2d) has a 3x5 kernel larger than its "
        "input: 'pool' gives [3, 3, 1]");
  CHECK(model_error(
            with_layers("[2, 2, 1]", R"([{"id": "pool", "type": "maxpool2d", "pool": 3}])")) ==
        "model.json: at /model/layers/0: layer 'pool' (maxpool2d) has a 3x3 pool window larger "
        "than its input: the model input is [2, 2, 1]");
  const Model same = model_from(with_layers("[3, 3, 1]", R"([
      {"id": "conv", "type": "conv2d", "filters": 4, "kernel": 5, "stride": 2, "padding": "same"}])"));
  CHECK(shape_text(same.info[0].output) == "[2, 2, 4]");
}

TEST_CASE("a dilated kernel spans (kernel - 1) x dilation + 1 inputs, refused past its input") {
  // 28 rows: (28 - 9) + 1 = 20 for a 3-tall kernel dilated by 4; 28 columns: (28 - 3) + 1.
  const Model model = model_from(with_layers("[28, 28, 1]", R"([
      {"id": "conv", "type": "conv2d", "filters": 4, "kernel": 3, "dilation": [4, 1]}])"));
  CHECK(shape_text(model.info[0].output) == "[20, 26, 4]");
  CHECK(model.info[0].params == 3 * 3 * 4 + 4);
  CHECK(model_error(with_layers("[8, 8, 1]", R"([
      {"id": "conv", "type": "conv2d", "filters": 4, "kernel": 3, "dilation": [4, 2]}])")) ==
        "model.json: at /model/layers/0: layer 'conv' (conv2d) has a 3x3 kernel dilated to 9x5 "
        "larger than its input: the model input is [8, 8, 1]");
  CHECK(model_error(with_layers("[12, 2]", R"([
      {"id": "c", "type": "conv1d", "filters": 2, "kernel": 4, "dilation": 4}])")) ==
        "model.json: at /model/layers/0: layer 'c' (conv1d) has a kernel of 4 dilated by 4 (13 "
        "long) longer than its input: the model input is [12, 2]");
  CHECK(model_error(with_layers("[8, 8, 1]", R"([
      {"id": "conv", "type": "conv2d", "filters": 1, "kernel": 3, "padding": "same",
       "dilation": 1099511627776}])")) ==
        "model.json: at /model/layers/0: layer 'conv' (conv2d) has a kernel whose dilation spans "
        "more than 2^40 inputs");
  CHECK(model_error(with_layers("[8, 8, 1]", R"([
      {"id": "conv", "type": "conv2d", "filters": 1, "kernel": 3, "dilation": 0}])")) ==
        "model.json: at /model/layers/0/dilation: expected an integer from 1 to 1099511627776, "
        "found 0");
}

TEST_CASE("conv2d and maxpool2d need an image input") {
  CHECK(model_error(with_layers("[28, 28]", R"([
      {"id": "conv", "type": "conv2d", "filters": 4, "kernel": 3}])")) ==
        "model.json: at /model/layers/0: layer 'conv' (conv2d) needs an input of shape [height, "
        "width, channels], but the model input is [28, 28]");
}

TEST_CASE("a reshape must keep the element count") {
  const Model model = model_from(with_layers("[784]", R"([
      {"id": "r", "type": "reshape", "shape": [28, -1, 1]}])"));
  CHECK(shape_text(model.info[0].output) == "[28, 28, 1]");
  CHECK(model_error(
            with_layers("[28, 28]", R"([{"id": "r", "type": "reshape", "shape": [30, 30]}])")) ==
        "model.json: at /model/layers/0: layer 'r' (reshape) cannot reshape [28, 28] (784 "
        "elements) to [30, 30] (900 elements)");
  CHECK(model_error(
            with_layers("[28, 28]", R"([{"id": "r", "type": "reshape", "shape": [-1, 30]}])")) ==
        "model.json: at /model/layers/0: layer 'r' (reshape) cannot reshape [28, 28] (784 "
        "elements) to [-1, 30]: 784 is not a multiple of 30");
}

TEST_CASE("dense applies to the last axis") {
  const Model model = model_from(with_layers("[5, 7]", R"([
      {"id": "d", "type": "dense", "units": 3, "activation": "tanh"}])"));
  CHECK(shape_text(model.info[0].output) == "[5, 3]");
  CHECK(model.info[0].params == 24);
  CHECK(model.info[0].forward_flops == 2.0 * 5 * 7 * 3 + 15 + 4 * 15);
  CHECK(model.info[0].backward_flops == 4.0 * 5 * 7 * 3 + 15 + 4 * 15);
}

TEST_CASE("an input layer's declared shape must be the model input's") {
  CHECK(
      model_error(with_layers("[28, 28]", R"([{"id": "in", "type": "input", "shape": [784]}])")) ==
      "model.json: at /model/layers/0: layer 'in' (input) declares shape [784], but the model "
      "input is [28, 28]");
}

TEST_CASE("an embedding takes token ids of its sequence length from the model input") {
  const std::string embedding =
      R"({"id": "emb", "type": "embedding", "vocab_size": 10, "hidden": 4, "sequence_length": 8})";
  CHECK(model_error(with_layers("[16]", "[" + embedding + "]")) ==
        "model.json: at /model/layers/0: layer 'emb' (embedding) takes token ids of shape [8] "
        "(sequence_length), but the model input is [16]");
  CHECK(model_error(with_layers(
            "[8]", R"([{"id": "d", "type": "dense", "units": 8}, )" + embedding + "]")) ==
        "model.json: at /model/layers/1: layer 'emb' (embedding) takes token ids from the model "
        "input, not the output of 'd'");
  const Model through_input =
      model_from(with_layers("[8]", R"([{"id": "tokens", "type": "input"}, )" + embedding + "]"));
  CHECK(shape_text(through_input.info[1].output) == "[8, 4]");
}

TEST_CASE("a transformer encoder needs a sequence_length by hidden input") {
  CHECK(model_error(after_dense("[8, 16]", R"({"id": "enc", "type": "transformer_encoder",
                                 "hidden": 16, "heads": 2, "sequence_length": 8})")) ==
        "model.json: at /model/layers/1: layer 'enc' (transformer_encoder) needs an input of "
        "shape [8, 16] (sequence_length, hidden), but 'a' gives [8, 32]");
}

TEST_CASE("the loss must be the last layer") {
  CHECK(model_error(with_layers("[4]", R"([
      {"id": "logits", "type": "dense", "units": 3},
      {"id": "cel", "type": "softmax_cross_entropy"},
      {"id": "after", "type": "dense", "units": 2}])")) ==
        "model.json: at /model/layers/1: layer 'cel' (softmax_cross_entropy) is the loss and "
        "must be the last layer, but 'after' follows it");
}

TEST_CASE("a model trains exactly one loss") {
  CHECK(model_error(with_layers("[4]", R"([
      {"id": "in", "type": "input"},
      {"id": "cel1", "type": "softmax_cross_entropy"},
      {"id": "cel2", "type": "softmax_cross_entropy", "inputs": ["in"]}])")) ==
        "model.json: at /model/layers/2: the model has two loss layers, 'cel1' and 'cel2'; a "
        "model trains exactly one loss, its last layer");
}

TEST_CASE("the loss takes its class count from the logits, which must match the declared classes") {
  const std::string layers = R"([{"id": "logits", "type": "dense", "units": 12},
                                 {"id": "cel", "type": "softmax_cross_entropy"}])";
  const Model model = model_from(with_layers("[4]", layers));
  CHECK(model.trainable);
  CHECK(model.classes == 12);
  CHECK(model_error(R"({"input": {"shape": [4]}, "classes": 10, "layers": )" + layers + "}") ==
        "model.json: at /model/layers/1: layer 'cel' (softmax_cross_entropy) needs logits for 10 "
        "classes (the model's \"classes\"), but 'logits' gives [12]");
}

TEST_CASE("a loss alone reads its logits from the model input") {
  const Model model =
      model_from(with_layers("[7]", R"([{"id": "cel", "type": "softmax_cross_entropy"}])"));
  CHECK(model.classes == 7);
  CHECK(model.info[0].saved_bytes == 7 * 4 + 4);
  CHECK(model_error(R"({"input": {"shape": [7]}, "classes": 10,
                        "layers": [{"id": "cel", "type": "softmax_cross_entropy"}]})") ==
        "model.json: at /model/layers/0: layer 'cel' (softmax_cross_entropy) needs logits for 10 "
        "classes (the model's \"classes\"), but the model input is [7]");
}

TEST_CASE("an inference-only model keeps its declared class count") {
  const Model model = model_from(
      R"({"input": {"shape": [4]}, "classes": 3, "layers": [{"id": "d", "type": "dense", "units": 3}]})");
  CHECK_FALSE(model.trainable);
  CHECK(model.classes == 3);
  CHECK(model.name == "model");
}

TEST_CASE("saved bytes follow the kernels' rule for every layer type") {
  const Model model = model_from(with_layers("[6, 6, 2]", R"([
      {"id": "in", "type": "input"},
      {"id": "conv", "type": "conv2d", "filters": 4, "kernel": 3, "activation": "gelu"},
      {"id": "pool", "type": "maxpool2d"},
      {"id": "flat", "type": "flatten"},
      {"id": "drop", "type": "dropout", "rate": 0.25},
      {"id": "relu", "type": "relu"},
      {"id": "gelu", "type": "gelu"},
      {"id": "plain", "type": "dense", "units": 5},
      {"id": "act", "type": "dense", "units": 16, "activation": "relu"},
      {"id": "sum", "type": "add", "inputs": ["act", "gelu"]},
      {"id": "cat", "type": "concat", "inputs": ["sum", "flat"]},
      {"id": "r", "type": "reshape", "shape": [2, 16]},
      {"id": "logits", "type": "dense", "units": 10},
      {"id": "cel", "type": "softmax_cross_entropy"}])"));
  std::vector<std::int64_t> saved;
  std::vector<std::int64_t> seeds;
  for (const LayerInfo& info : model.info) {
    saved.push_back(info.saved_bytes);
    seeds.push_back(info.seed_bytes);
  }
  // conv: input 72 + pre-activation 64 elements; pool: 16 int32 indices; dropout: its seed only;
  // plain dense: its 16 inputs only; act: 5 inputs + 16 outputs; cel: 20 probabilities + 2 labels.
  CHECK(saved == std::vector<std::int64_t>{0, 136 * 4, 16 * 4, 0, 0, 16 * 4, 16 * 4, 16 * 4, 21 * 4,
                                           0, 0, 0, 32 * 4, 20 * 4 + 2 * 4});
  // Per micro-batch: a pair of uint32 for the dropout.
  CHECK(seeds == std::vector<std::int64_t>{0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  CHECK(model.classes == 10);
}

TEST_CASE("fp16 halves activation, saved and weight bytes but not int32 indices or seeds") {
  const std::string layers = R"([
      {"id": "conv", "type": "conv2d", "filters": 4, "kernel": 3, "activation": "relu"},
      {"id": "pool", "type": "maxpool2d"},
      {"id": "drop", "type": "dropout", "rate": 0.5}])";
  const Model model =
      model_from(R"({"input": {"shape": [6, 6, 2], "dtype": "fp16"}, "layers": )" + layers + "}");
  CHECK(model.dtype == DType::kFp16);
  CHECK(model.info[0].activation_bytes == 64 * 2);
  CHECK(model.info[0].saved_bytes == (72 + 64) * 2);
  CHECK(model.info[0].weight_bytes == 76 * 2);
  CHECK(model.info[1].saved_bytes == 16 * 4);
  CHECK(model.info[2].saved_bytes == 0);
  CHECK(model.info[2].seed_bytes == 8);
}

TEST_CASE("conv2d FLOPs count every output's multiply-adds twice forward and four times back") {
  const Model model = model_from(with_layers("[28, 28, 1]", R"([
      {"id": "conv", "type": "conv2d", "filters": 32, "kernel": 3, "activation": "relu"}])"));
  const double products = 26.0 * 26 * 3 * 3 * 1 * 32;
  const double per_output = 26.0 * 26 * 32;
  CHECK(model.info[0].forward_flops == 2 * products + 2 * per_output);
  CHECK(model.info[0].backward_flops == 4 * products + 2 * per_output);
}

TEST_CASE("bytes moved count inputs and outputs, and views move nothing") {
  const Model model = model_from(with_layers("[4, 4]", R"([
      {"id": "flat", "type": "flatten"},
      {"id": "d", "type": "dense", "units": 8, "activation": "relu"},
      {"id": "cel", "type": "softmax_cross_entropy"}])"));
  CHECK(model.info[0].bytes_moved_forward == 0);
  CHECK(model.info[0].bytes_moved_backward == 0);
  // Forward reads 16 inputs and writes 8 outputs; backward reads the output gradient and the
  // 24 saved elements and writes 16 input gradients.
  CHECK(model.info[1].bytes_moved_forward == (16 + 8) * 4);
  CHECK(model.info[1].bytes_moved_backward == (8 + 24 + 16) * 4);
  CHECK(model.info[1].weight_bytes == 136 * 4);
  // The loss seeds backward: no output gradient to read.
  CHECK(model.info[2].bytes_moved_forward == 8 * 4 + 4);
  CHECK(model.info[2].bytes_moved_backward == (8 * 4 + 4) + 8 * 4);
}

TEST_CASE("global_average_pool2d pools an image to its channels and keeps nothing for backward") {
  const Model model = model_from(with_layers("[7, 5, 8]", R"([
      {"id": "gap", "type": "global_average_pool2d"}])"));
  const LayerInfo& info = model.info[0];
  CHECK(shape_text(info.output) == "[8]");
  CHECK(info.params == 0);
  // 280 additions and 8 divisions forward; backward writes each of the 280 pixels' share.
  CHECK(info.forward_flops == 288);
  CHECK(info.backward_flops == 280);
  CHECK(info.activation_bytes == 8 * 4);
  CHECK(info.saved_bytes == 0);
  CHECK(info.bytes_moved_forward == (280 + 8) * 4);
  CHECK(info.bytes_moved_backward == (8 + 280) * 4);
  REQUIRE(info.operations.size() == 1);
  CHECK(info.operations[0].name == "global_average_pool");
  CHECK(info.operations[0].op_class == OpClass::kReduction);
  CHECK(info.operations[0].forward.work == 280);
  CHECK(info.operations[0].backward.work == 280);
  CHECK(info.operations[0].backward.exchanged_elements == 8);
  CHECK(model_error(with_layers("[28, 28]", R"([
      {"id": "gap", "type": "global_average_pool2d"}])")) ==
        "model.json: at /model/layers/0: layer 'gap' (global_average_pool2d) needs an input of "
        "shape [height, width, channels], but the model input is [28, 28]");
}

TEST_CASE("a slice takes a range of one axis and moves nothing") {
  const Model model = model_from(with_layers("[6, 4]", R"([
      {"id": "first", "type": "slice", "size": 2},
      {"id": "middle", "type": "slice", "axis": -1, "start": 1, "size": 2}])"));
  CHECK(model.info[0].output == Shape{2, 4});
  CHECK(model.info[1].output == Shape{2, 2});
  CHECK(model.info[0].bytes_moved_forward == 0);
  CHECK(model.info[0].operations.empty());
  CHECK(model_error(
            with_layers("[6, 4]", R"([{"id": "s", "type": "slice", "start": 5, "size": 2}])")) ==
        "model.json: at /model/layers/0: layer 's' (slice) takes elements 5 to 6 of axis 0, but "
        "the model input is [6, 4]");
}

TEST_CASE("a dense layer tied to an embedding shares its word matrix and owns only its bias") {
  const std::string embedding =
      R"({"id": "emb", "type": "embedding", "vocab_size": 50, "hidden": 8, "sequence_length": 4})";
  const Model model = model_from(with_layers("[4]", "[" + embedding + R"(,
      {"id": "decoder", "type": "dense", "units": 50, "tied_to": "emb"}])"));
  CHECK(model.layers[1].tied_to == "emb");
  CHECK(model.info[1].params == 50);
  CHECK(model.info[1].weight_bytes == 50 * 4);
  CHECK(model.total_params() == (50 + 4) * 8 + 2 * 8 + 50);
  // The product still reads the [8, 50] matrix.
  CHECK(model.info[1].operations.front().forward.weight_elements == 8 * 50);

  CHECK(model_error(with_layers("[4]", "[" + embedding + R"(,
      {"id": "decoder", "type": "dense", "units": 50, "tied_to": "embb"}])")) ==
        "model.json: at /model/layers/1/tied_to: layer 'decoder' (dense) is tied to 'embb', "
        "which is no layer; did you mean 'emb'?");
  CHECK(model_error(with_layers("[4]", "[" + embedding + R"(,
      {"id": "decoder", "type": "dense", "units": 40, "tied_to": "emb"}])")) ==
        "model.json: at /model/layers/1/tied_to: layer 'decoder' (dense) maps 8 to 40 features, "
        "but the word matrix of 'emb' maps its hidden 8 to a vocabulary of 50");
  CHECK(model_error(with_layers("[4]", "[" + embedding + R"(,
      {"id": "other", "type": "dense", "units": 50},
      {"id": "decoder", "type": "dense", "units": 50, "tied_to": "other"}])")) ==
        "model.json: at /model/layers/2/tied_to: layer 'decoder' (dense) is tied to layer 'other' "
        "(dense), but only an embedding's word matrix can be shared");
}

TEST_CASE("second inputs: token types of an embedding, padding masks of attention") {
  const std::string rows = R"({"id": "rows", "type": "input"},
      {"id": "ids", "type": "slice", "size": 1, "inputs": ["rows"]},
      {"id": "ids_flat", "type": "flatten"},
      {"id": "second", "type": "slice", "start": 1, "size": 1, "inputs": ["rows"]},
      {"id": "second_flat", "type": "flatten"},)";
  const Model model = model_from(with_layers("[2, 4]", "[" + rows + R"(
      {"id": "emb", "type": "embedding", "vocab_size": 10, "hidden": 4, "sequence_length": 4,
       "token_types": 2, "inputs": ["ids_flat", "second_flat"]},
      {"id": "att", "type": "attention", "heads": 2, "inputs": ["emb", "second_flat"]}])"));
  CHECK(shape_text(model.info[6].output) == "[4, 4]");
  CHECK(model.info[5].params == (10 + 4 + 2) * 4 + 2 * 4);
  CHECK(model.info[5].saved_bytes == 4 * 4 * 4 + 2 * 4 * 4);
  CHECK(model_error(with_layers("[2, 4]", "[" + rows + R"(
      {"id": "emb", "type": "embedding", "vocab_size": 10, "hidden": 4, "sequence_length": 4,
       "inputs": ["ids_flat", "second_flat"]}])")) ==
        "model.json: at /model/layers/5: layer 'emb' (embedding) has no token types "
        "(token_types is 0), so it takes no second input, but 'second_flat' gives [4]");
  const std::string ids = R"({"id": "rows", "type": "input"},
      {"id": "ids", "type": "slice", "size": 1, "inputs": ["rows"]},
      {"id": "ids_flat", "type": "flatten"},
      {"id": "emb", "type": "embedding", "vocab_size": 10, "hidden": 4, "sequence_length": 4},)";
  CHECK(model_error(with_layers("[2, 4]", "[" + ids + R"(
      {"id": "att", "type": "attention", "heads": 2, "inputs": ["emb", "rows"]}])")) ==
        "model.json: at /model/layers/4: layer 'att' (attention) takes a padding mask of shape "
        "[4] (sequence_length), but 'rows' gives [2, 4]");
  CHECK(model_error(with_layers("[2, 4]", "[" + ids + R"(
      {"id": "att", "type": "attention", "heads": 2, "inputs": ["emb", "rows", "rows"]}])")) ==
        "model.json: at /model/layers/4/inputs: layer 'att' (attention) takes one or two "
        "inputs, but \"inputs\" lists 3");
}

TEST_CASE("a checkpoint at every layer but the last makes each layer its own segment") {
  const Model model = model_from(with_layers("[8]", R"([
      {"id": "d1", "type": "dense", "units": 4},
      {"id": "d2", "type": "dense", "units": 4},
      {"id": "d3", "type": "dense", "units": 4}])"));
  const RecomputePlan plan = recompute_plan(model, {2, 0, 1}, {.every_layer = true});
  CHECK(plan.checkpoints == std::vector<int>{0, 1});
  // The backward rebuilds d3 first, from d2's output, then d2 from d1's, then d1.
  CHECK(plan.recomputations == std::vector<std::vector<int>>{{2}, {1}, {0}});
  CHECK(plan.kept.empty());
  CHECK(plan.runs(0) == 1);
  CHECK(recompute_plan(model, {0, 1, 2}, {}).recomputations ==
        std::vector<std::vector<int>>{{0, 1, 2}});
}

TEST_CASE("the final forward stage keeps the layers after its last checkpoint") {
  const Model model = model_from(with_layers("[8]", R"([
      {"id": "d1", "type": "dense", "units": 4, "checkpoint": true},
      {"id": "d2", "type": "dense", "units": 4},
      {"id": "d3", "type": "dense", "units": 4}])"));
  const RecomputePlan plan = recompute_plan(model, {0, 1, 2}, {.keep_tail = true});
  CHECK(plan.recomputations == std::vector<std::vector<int>>{{0}});
  CHECK(plan.kept == std::vector<int>{1, 2});
  // With no checkpoint it keeps everything and recomputes nothing.
  const Model plain = model_from(with_layers("[8]", R"([
      {"id": "d1", "type": "dense", "units": 4},
      {"id": "d2", "type": "dense", "units": 4}])"));
  const RecomputePlan none = recompute_plan(plain, {0, 1}, {.keep_tail = true});
  CHECK(none.recomputations.empty());
  CHECK(none.kept == std::vector<int>{0, 1});
}

TEST_CASE("a residual that reaches over a checkpoint is recomputed again for its segment") {
  // in -> a -> b (checkpoint) -> sum(a, b): sum's segment needs a's output, not stashed.
  const Model model = model_from(with_layers("[4]", R"([
      {"id": "in", "type": "input", "shape": [4]},
      {"id": "a", "type": "dense", "units": 4},
      {"id": "b", "type": "dense", "units": 4, "checkpoint": true},
      {"id": "sum", "type": "add", "inputs": ["a", "b"]}])"));
  const RecomputePlan plan = recompute_plan(model, {0, 1, 2, 3}, {});
  CHECK(plan.checkpoints == std::vector<int>{2});
  CHECK(plan.recomputations == std::vector<std::vector<int>>{{0, 1, 3}, {0, 1, 2}});
  CHECK(plan.runs(1) == 2);
  CHECK(plan.runs(2) == 1);
  // The input layer's output is the model input: never a checkpoint.
  CHECK(recompute_plan(model, {0, 1, 2, 3}, {.every_layer = true}).checkpoints ==
        std::vector<int>{1, 2});
}
