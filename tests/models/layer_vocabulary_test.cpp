// The layer vocabulary PyTorch models need, as configs spell it: explicit padding and ceil_mode
// on the windows, avgpool2d, token_mean and token_select, causal attention, position_table and
// class_token. Parsing, shapes, their errors' exact texts, and each type's parameters, FLOPs and
// saved bytes.

#include <catch2/catch.hpp>
#include <string>

#include "model_test_support.hpp"
#include "models/layers/layer_types.hpp"

using namespace ipusim::models;
using ipusim::models::testing::model_error;
using ipusim::models::testing::model_from;
using ipusim::models::testing::with_layers;

namespace {

// The error a one-layer model on a [28, 28, 1] input raises for `layer_json`.
std::string image_layer_error(const std::string& layer_json) {
  return model_error(with_layers("[28, 28, 1]", "[" + layer_json + "]"));
}

// The only layer of a model on `input` (a JSON shape).
LayerInfo only_layer(const std::string& input, const std::string& layer_json) {
  return model_from(with_layers(input, "[" + layer_json + "]")).info.at(0);
}

}  // namespace

TEST_CASE("padding takes valid, same or four explicit pads, top, left, bottom, right") {
  const Model model = model_from(with_layers("[112, 112, 64]", R"([
      {"id": "c", "type": "conv2d", "filters": 4, "kernel": 3, "padding": [2, 0, 1, 3]},
      {"id": "p", "type": "maxpool2d", "pool": 3, "stride": 2, "padding": [1, 1, 1, 1]},
      {"id": "v", "type": "maxpool2d", "padding": "valid"}])"));
  const Padding& pads = model.layers[0].params.padding;
  CHECK_FALSE(pads.same);
  CHECK(pads.top == 2);
  CHECK(pads.left == 0);
  CHECK(pads.bottom == 1);
  CHECK(pads.right == 3);
  // floor((112 + 3 - 3) / 1) + 1 = 113 rows, floor((112 + 3 - 3) / 1) + 1 = 113 columns.
  CHECK(shape_text(model.info[0].output) == "[113, 113, 4]");
  // floor((113 + 2 - 3) / 2) + 1 = 57.
  CHECK(shape_text(model.info[1].output) == "[57, 57, 4]");
  CHECK(model.layers[2].params.padding == kValidPadding);
  CHECK(shape_text(model.info[2].output) == "[28, 28, 4]");
}

TEST_CASE("padding that is not valid, same or four pads from 0 is refused at the key") {
  const std::string conv = R"({"id": "c", "type": "conv2d", "filters": 4, "kernel": 3, )";
  CHECK(image_layer_error(conv + R"("padding": [1, 1]})") ==
        "model.json: at /model/layers/0/padding: expected [top, left, bottom, right], found a "
        "list of 2");
  CHECK(image_layer_error(conv + R"("padding": 1})") ==
        "model.json: at /model/layers/0/padding: expected \"valid\", \"same\" or [top, left, "
        "bottom, right], found 1");
  CHECK(image_layer_error(conv + R"("padding": [1, -1, 0, 0]})") ==
        "model.json: at /model/layers/0/padding/1: expected an integer from 0 to 1099511627776, "
        "found -1");
  CHECK(image_layer_error(conv + R"("padding": "full"})") ==
        "model.json: at /model/layers/0/padding: unknown value 'full'; expected 'valid' or 'same'");
}

TEST_CASE("a pool's pads may be at most half its window, as PyTorch requires") {
  CHECK(image_layer_error(
            R"({"id": "p", "type": "maxpool2d", "pool": [3, 2], "padding": [1, 2, 0, 0]})") ==
        "model.json: at /model/layers/0/padding: expected pads of at most half the 3x2 pool "
        "window (1 above and below, 1 left and right), found [1, 2, 0, 0]");
  CHECK(image_layer_error(
            R"({"id": "p", "type": "avgpool2d", "pool": 3, "padding": [0, 0, 2, 0]})") ==
        "model.json: at /model/layers/0/padding: expected pads of at most half the 3x3 pool "
        "window (1 above and below, 1 left and right), found [0, 0, 2, 0]");
}

TEST_CASE("a window larger than its padded input names the padding") {
  CHECK(model_error(with_layers("[2, 2, 1]", R"([
      {"id": "c", "type": "conv2d", "filters": 1, "kernel": 5, "padding": [1, 1, 1, 1]}])")) ==
        "model.json: at /model/layers/0: layer 'c' (conv2d) has a 5x5 kernel larger than its "
        "input padded by [1, 1, 1, 1]: the model input is [2, 2, 1]");
  // Padded to 4x4, a 4x4 kernel fits once.
  CHECK(shape_text(only_layer("[2, 2, 1]", R"({"id": "c", "type": "conv2d", "filters": 1,
      "kernel": 4, "padding": [1, 1, 1, 1]})")
                       .output) == "[1, 1, 1]");
}

TEST_CASE("ceil_mode rounds a pool's output size up as PyTorch does") {
  // 6 rows, 3x3 windows, stride 2: floor gives 2, ceil 3.
  CHECK(shape_text(only_layer("[6, 6, 1]", R"({"id": "p", "type": "maxpool2d", "pool": 3,
      "stride": 2})")
                       .output) == "[2, 2, 1]");
  CHECK(shape_text(only_layer("[6, 6, 1]", R"({"id": "p", "type": "maxpool2d", "pool": 3,
      "stride": 2, "ceil_mode": true})")
                       .output) == "[3, 3, 1]");
  // 5 columns, 2-wide windows, stride 2, one pad each side: 3, not ceil(5 / 2) + 1 = 4.
  CHECK(shape_text(only_layer("[1, 5, 1]", R"({"id": "p", "type": "avgpool2d", "pool": [1, 2],
      "padding": [0, 1, 0, 1], "ceil_mode": true})")
                       .output) == "[1, 3, 1]");
  CHECK(image_layer_error(R"({"id": "p", "type": "maxpool2d", "ceil_mode": 1})") ==
        "model.json: at /model/layers/0/ceil_mode: expected true or false, found an integer 1");
}

TEST_CASE("avgpool2d steps by its window, counts padding by default and keeps nothing") {
  const Model model = model_from(with_layers("[9, 9, 4]", R"([
      {"id": "a", "type": "avgpool2d", "pool": 3, "padding": [1, 1, 1, 1]},
      {"id": "b", "type": "avgpool2d", "stride": 1, "count_include_pad": false}])"));
  const LayerParams& a = model.layers[0].params;
  CHECK(a.stride_h == 3);
  CHECK(a.stride_w == 3);
  CHECK(a.count_include_pad);
  CHECK_FALSE(a.ceil_mode);
  CHECK_FALSE(model.layers[1].params.count_include_pad);
  const LayerInfo& info = model.info[0];
  // floor((9 + 2 - 3) / 3) + 1 = 3.
  CHECK(shape_text(info.output) == "[3, 3, 4]");
  CHECK(info.params == 0);
  CHECK(info.param_tensors == 0);
  CHECK(info.saved_bytes == 0);
  // An add an element of each 3x3 window each way: 36 outputs x 9.
  CHECK(info.forward_flops == 36 * 9);
  CHECK(info.backward_flops == 36 * 9);
  CHECK(info.operations.size() == 1);
  CHECK(info.operations[0].name == "avgpool");
  CHECK(info.operations[0].op_class == OpClass::kReduction);
}

TEST_CASE("a max pool with padding and ceil_mode keeps one int32 argmax an output") {
  const LayerInfo info = only_layer("[112, 112, 64]", R"({"id": "p", "type": "maxpool2d",
      "pool": 3, "stride": 2, "padding": [1, 1, 1, 1], "ceil_mode": true})");
  // ceil((112 + 2 - 3) / 2) + 1 = 57; the 57th window starts at 112 - 1, inside: 57.
  CHECK(shape_text(info.output) == "[57, 57, 64]");
  CHECK(info.saved_bytes == 57 * 57 * 64 * 4);
  CHECK(info.forward_flops == 57.0 * 57 * 64 * 9);
}

TEST_CASE("causal is off by default and costs what the unmasked attention costs") {
  const std::string encoder =
      R"({"id": "t", "type": "transformer_encoder", "hidden": 8, "heads": 2,
          "sequence_length": 4)";
  const std::string half =
      R"({"id": "t", "type": "transformer_attention", "hidden": 8, "heads": 2,
          "sequence_length": 4)";
  const std::string attention = R"({"id": "t", "type": "attention", "heads": 2)";
  for (const std::string& layer : {encoder, half, attention}) {
    INFO(layer);
    const Model plain = model_from(with_layers("[4, 8]", "[" + layer + "}]"));
    const Model masked = model_from(with_layers("[4, 8]", "[" + layer + R"(, "causal": true}])"));
    CHECK_FALSE(plain.layers[0].params.causal);
    CHECK(masked.layers[0].params.causal);
    const LayerInfo& a = plain.info[0];
    const LayerInfo& b = masked.info[0];
    CHECK(a.params == b.params);
    CHECK(a.forward_flops == b.forward_flops);
    CHECK(a.backward_flops == b.backward_flops);
    CHECK(a.saved_bytes == b.saved_bytes);
    CHECK(a.operations.size() == b.operations.size());
  }
  CHECK(model_error(with_layers("[4, 8]", "[" + attention + R"(, "causal": "yes"}])")) ==
        "model.json: at /model/layers/0/causal: expected true or false, found a string \"yes\"");
}

TEST_CASE("token_mean and token_select reduce a sequence of tokens to the shape of one") {
  CHECK(shape_text(only_layer("[5, 2, 4]", R"({"id": "m", "type": "token_mean"})").output) ==
        "[2, 4]");
  const Model first = model_from(with_layers("[5, 8]", R"([{"id": "s", "type": "token_select"}])"));
  CHECK(first.layers[0].params.index == 0);
  CHECK(shape_text(first.info[0].output) == "[8]");
  const Model last =
      model_from(with_layers("[5, 8]", R"([{"id": "s", "type": "token_select", "index": -1}])"));
  CHECK(last.layers[0].params.index == -1);
  CHECK(shape_text(last.info[0].output) == "[8]");
  // The mean: 40 adds and 8 divisions; backward a share a token.
  const LayerInfo mean = only_layer("[5, 8]", R"({"id": "m", "type": "token_mean"})");
  CHECK(shape_text(mean.output) == "[8]");
  CHECK(mean.params == 0);
  CHECK(mean.saved_bytes == 0);
  CHECK(mean.forward_flops == 48);
  CHECK(mean.backward_flops == 40);
  CHECK(mean.operations.at(0).op_class == OpClass::kReduction);
  // A token is a view of its input: no operations, nothing kept or moved.
  const LayerInfo& token = first.info[0];
  CHECK(token.operations.empty());
  CHECK(token.saved_bytes == 0);
  CHECK(token.bytes_moved_forward == 0);
}

TEST_CASE("a token layer needs two axes, and token_select an index inside them") {
  CHECK(model_error(with_layers("[8]", R"([{"id": "m", "type": "token_mean"}])")) ==
        "model.json: at /model/layers/0: layer 'm' (token_mean) needs an input of shape [tokens, "
        "features...], two axes or more, but the model input is [8]");
  CHECK(
      model_error(with_layers("[4, 8]", R"([{"id": "s", "type": "token_select", "index": 4}])")) ==
      "model.json: at /model/layers/0: layer 's' (token_select) has index 4, but its input has 4 "
      "tokens (allowed: -4 to 3): the model input is [4, 8]");
  CHECK(
      model_error(with_layers("[4, 8]", R"([{"id": "s", "type": "token_select", "index": -5}])")) ==
      "model.json: at /model/layers/0: layer 's' (token_select) has index -5, but its input has 4 "
      "tokens (allowed: -4 to 3): the model input is [4, 8]");
  CHECK(model_error(
            with_layers("[4, 8]", R"([{"id": "s", "type": "token_select", "index": 0.5}])")) ==
        "model.json: at /model/layers/0/index: expected an integer from -2147483648 to 2147483647, "
        "found a number 0.5");
}

TEST_CASE("position_table holds a parameter an input element and class_token one a feature") {
  const Model model = model_from(with_layers("[196, 768]", R"([
      {"id": "cls", "type": "class_token"},
      {"id": "pos", "type": "position_table"}])"));
  const LayerInfo& token = model.info[0];
  CHECK(shape_text(token.output) == "[197, 768]");
  CHECK(token.params == 768);
  CHECK(token.param_tensors == 1);
  CHECK(token.saved_bytes == 0);
  CHECK(token.forward_flops == 0);
  CHECK(token.backward_flops == 768);
  const LayerInfo& table = model.info[1];
  CHECK(shape_text(table.output) == "[197, 768]");
  CHECK(table.params == 197 * 768);
  CHECK(table.param_tensors == 1);
  CHECK(table.saved_bytes == 0);
  CHECK(table.forward_flops == 197 * 768);
  CHECK(table.backward_flops == 197 * 768);
  CHECK(table.operations.at(0).op_class == OpClass::kElementwise);
}

TEST_CASE("class_token needs an input of tokens by hidden") {
  CHECK(model_error(with_layers("[4, 4, 3]", R"([{"id": "cls", "type": "class_token"}])")) ==
        "model.json: at /model/layers/0: layer 'cls' (class_token) needs an input of shape "
        "[tokens, hidden], but the model input is [4, 4, 3]");
}

TEST_CASE("the convolution family refuses what does not fit, naming the numbers") {
  CHECK(model_error(with_layers("[8, 8, 4]", R"([
      {"id": "c", "type": "conv2d", "filters": 6, "kernel": 3, "groups": 4}])")) ==
        "model.json: at /model/layers/0: layer 'c' (conv2d) has groups 4, which must divide its "
        "4 input channels and its 6 filters");
  CHECK(model_error(with_layers("[8, 8, 4]", R"([
      {"id": "c", "type": "conv1d", "filters": 2, "kernel": 3}])")) ==
        "model.json: at /model/layers/0: layer 'c' (conv1d) needs an input of shape [length, "
        "channels], but the model input is [8, 8, 4]");
  CHECK(model_error(with_layers("[4, 2]", R"([
      {"id": "c", "type": "conv1d", "filters": 2, "kernel": 6, "padding": [0, 1]}])")) ==
        "model.json: at /model/layers/0: layer 'c' (conv1d) has a kernel of 6 longer than its "
        "input padded by [0, 1]: the model input is [4, 2]");
  CHECK(model_error(with_layers("[4, 2]", R"([
      {"id": "c", "type": "conv1d", "filters": 2, "kernel": 2, "padding": [1, 2, 3]}])")) ==
        "model.json: at /model/layers/0/padding: expected \"valid\", \"same\" or [left, right], "
        "found [1,2,3]");
  CHECK(model_error(with_layers("[2, 2, 1]", R"([
      {"id": "t", "type": "conv2d_transpose", "filters": 1, "kernel": 2,
       "padding": [2, 0, 1, 0]}])")) ==
        "model.json: at /model/layers/0: layer 't' (conv2d_transpose) has padding [2, 0, 1, 0] "
        "that leaves an output of 0x3: the model input is [2, 2, 1]");
  CHECK(model_error(with_layers("[2, 2, 1]", R"([
      {"id": "t", "type": "conv2d_transpose", "filters": 1, "kernel": 3, "stride": 2,
       "padding": [0, 0, 0, 0], "output_padding": 2}])")) ==
        "model.json: at /model/layers/0/output_padding: expected an output padding below the "
        "stride [2, 2], found [2, 2]");
  CHECK(model_error(with_layers("[2, 2, 1]", R"([
      {"id": "t", "type": "conv2d_transpose", "filters": 1, "kernel": 3, "stride": 2,
       "padding": "same", "output_padding": 1}])")) ==
        "model.json: at /model/layers/0/output_padding: expected no output_padding with padding "
        "\"same\", which sets the output size");
  CHECK(model_error(with_layers("[4, 4, 1]", R"([
      {"id": "k", "type": "crop2d", "cropping": [[2, 2], [0, 0]]}])")) ==
        "model.json: at /model/layers/0: layer 'k' (crop2d) crops [[2, 2], [0, 0]], which leaves "
        "nothing of its input: the model input is [4, 4, 1]");
}

TEST_CASE("conv2d_transpose sizes its output as PyTorch, and \"same\" as Keras") {
  // (5 - 1) x 2 - 1 - 1 + 3 + 1 = 10 rows; (5 - 1) x 2 - 0 - 2 + 3 + 0 = 9 columns.
  CHECK(shape_text(only_layer("[5, 5, 3]", R"({"id": "t", "type": "conv2d_transpose",
      "filters": 4, "kernel": 3, "stride": 2, "padding": [1, 0, 1, 2],
      "output_padding": [1, 0]})")
                       .output) == "[10, 9, 4]");
  // Keras: in x stride with "same" (the kernel below the stride too), and "valid" with the
  // kernel at least the stride: (in - 1) x stride + kernel.
  CHECK(shape_text(only_layer("[5, 7, 3]", R"({"id": "t", "type": "conv2d_transpose",
      "filters": 4, "kernel": [3, 2], "stride": [2, 3], "padding": "same"})")
                       .output) == "[10, 21, 4]");
  CHECK(shape_text(only_layer("[5, 7, 3]", R"({"id": "t", "type": "conv2d_transpose",
      "filters": 4, "kernel": 4, "stride": 2})")
                       .output) == "[12, 16, 4]");
  // conv1d "same": ceil(9 / 2) = 5.
  CHECK(shape_text(only_layer("[9, 3]", R"({"id": "c", "type": "conv1d", "filters": 2,
      "kernel": 4, "stride": 2, "padding": "same"})")
                       .output) == "[5, 2]");
}
