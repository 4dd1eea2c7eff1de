// The convolution family's kernels: grouped, depthwise and dilated conv2d, conv1d,
// conv2d_transpose and crop2d. Forward values against PyTorch's (torch 1.13, float64, rounded to 6
// places; the torch call that gave each list is named beside it), on inputs and weights from the
// patterns below; gradients against central differences; what each keeps against the stash rule.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "models/kernels/kernels.hpp"
#include "models/layers/layer_info.hpp"
#include "models/layers/layer_parse.hpp"
#include "models/layers/layer_types.hpp"
#include "sim/core/config_file.hpp"
#include "tests/models/kernels_test_support.hpp"

using namespace ipusim::models;
using namespace ipusim::models::testing;

namespace {

// A layer as a config writes it, read by its type's readers.
Layer conv_family_layer(const std::string& layer_json) {
  const auto json = nlohmann::json{{"layers", {nlohmann::json::parse(layer_json)}}};
  const auto document = ipusim::core::ConfigDocument::from_json(json, "model.json");
  return parse_layer(document.root().at("layers").at(std::size_t{0}));
}

// Element i of the input pattern, ((7 i) mod 13) / 13 - 0.5, and of the weight pattern,
// ((5 i) mod 11) / 11 - 0.5, both in channels-last order (as the script's xs and ws).
Tensor input_pattern(Shape shape) {
  Tensor tensor(std::move(shape));
  for (std::int64_t i = 0; i < tensor.elements(); ++i)
    tensor[i] = float(double((i * 7) % 13) / 13.0 - 0.5);
  return tensor;
}
Tensor weight_pattern(Shape shape) {
  Tensor tensor(std::move(shape));
  for (std::int64_t i = 0; i < tensor.elements(); ++i)
    tensor[i] = float(double((i * 5) % 11) / 11.0 - 0.5);
  return tensor;
}

// The layer's forward output on one sample of the input pattern, its weights the weight pattern
// and its bias `bias`.
Tensor forward_on_patterns(const Layer& layer, const Shape& input, const std::vector<float>& bias) {
  const auto kernel = kernel_for(layer, {input});
  std::vector<Tensor> params;
  for (const ParameterSpec& spec : kernel->parameters()) {
    if (spec.role == ParameterSpec::Role::kBias)
      params.emplace_back(spec.shape, bias);
    else
      params.push_back(weight_pattern(spec.shape));
  }
  Shape batched{1};
  batched.insert(batched.end(), input.begin(), input.end());
  const Tensor x = input_pattern(batched);
  return kernel->forward({&x}, params, {}).output;
}

// `expected` holds (index, value) pairs of the flat channels-last output.
void check_values(const Tensor& output, const std::vector<std::pair<int, double>>& expected) {
  for (const auto& [index, value] : expected) {
    INFO("element " << index);
    CHECK(output[index] == Approx(value).margin(2e-6));
  }
}

}  // namespace

TEST_CASE("a grouped conv2d gives torch's conv2d with groups") {
  const Layer layer = conv_family_layer(
      R"({"id": "c", "type": "conv2d", "filters": 4, "kernel": 3, "padding": [1, 1, 1, 1],
          "groups": 2})");
  const Tensor y = forward_on_patterns(layer, {4, 4, 4}, {0.1f, -0.2f, 0.3f, 0.0f});
  REQUIRE(y.shape() == Shape{1, 4, 4, 4});
  // F.conv2d(x, w, b, stride=1, padding=1, groups=2), w = ours permuted (3, 2, 0, 1).
  check_values(y, {{0, -0.029371},
                   {1, 0.013287},
                   {2, 0.362937},
                   {3, -0.160839},
                   {24, 0.6},
                   {25, -0.483217},
                   {62, 0.167133},
                   {63, -0.101399}});
}

TEST_CASE("a depthwise conv2d with two filters a channel gives torch's conv2d with groups 3") {
  const Layer layer = conv_family_layer(
      R"({"id": "c", "type": "conv2d", "filters": 6, "kernel": 2, "stride": 2, "groups": 3,
          "bias": false})");
  const Tensor y = forward_on_patterns(layer, {4, 4, 3}, {});
  REQUIRE(y.shape() == Shape{1, 2, 2, 6});
  // F.conv2d(x, w, None, stride=2, groups=3): its 24 values.
  check_values(y,
               {{0, 0.412587},   {1, -0.087413},  {2, -0.01049},   {3, -0.017483},  {4, 0.038462},
                {5, 0.024476},   {6, 0.265734},   {7, -0.045455},  {8, -0.01049},   {9, -0.059441},
                {10, -0.045455}, {11, -0.101399}, {12, -0.038462}, {13, -0.146853}, {14, -0.146853},
                {15, 0.314685},  {16, 0.066434},  {17, 0.066434},  {18, 0.314685},  {19, -0.059441},
                {20, -0.01049},  {21, -0.045455}, {22, -0.017483}, {23, -0.059441}});
}

TEST_CASE("conv1d padded 1 before and 2 after, with stride 2 and groups 2, gives torch's conv1d") {
  const Layer layer = conv_family_layer(
      R"({"id": "c", "type": "conv1d", "filters": 2, "kernel": 3, "stride": 2,
          "padding": [1, 2], "groups": 2})");
  const Tensor y = forward_on_patterns(layer, {7, 4}, {0.25f, -0.5f});
  REQUIRE(y.shape() == Shape{1, 4, 2});
  // F.conv1d(F.pad(x, (1, 2)), w, b, stride=2, groups=2), w = ours permuted (2, 1, 0).
  check_values(y, {{0, 0.061189},
                   {1, -0.465035},
                   {2, 0.491259},
                   {3, -0.437063},
                   {4, 0.050699},
                   {5, -0.486014},
                   {6, 0.162587},
                   {7, -0.398601}});
}

TEST_CASE(
    "a conv2d dilated by 2 along rows and 1 along columns gives torch's conv2d with dilation (2, "
    "1)") {
  const Layer layer = conv_family_layer(
      R"({"id": "c", "type": "conv2d", "filters": 3, "kernel": 3, "dilation": [2, 1],
          "padding": [2, 1, 2, 1]})");
  const Tensor y = forward_on_patterns(layer, {6, 5, 2}, {0.1f, -0.2f, 0.3f});
  // The 3x3 kernel spans 5x3 pixels: (6 + 4 - 5) + 1 = 6 rows, (5 + 2 - 3) + 1 = 5 columns.
  REQUIRE(y.shape() == Shape{1, 6, 5, 3});
  // F.conv2d(x, w, b, padding=(2, 1), dilation=(2, 1)), w = ours permuted (3, 2, 0, 1).
  check_values(y, {{0, -0.183217},
                   {1, -0.116084},
                   {2, 0.174126},
                   {31, -0.7},
                   {45, -0.955944},
                   {59, 0.964336},
                   {88, -0.116084},
                   {89, 0.362937}});
}

TEST_CASE("a \"same\" conv2d dilated by 2 with stride 2 pads as TensorFlow does") {
  const Layer layer = conv_family_layer(
      R"({"id": "c", "type": "conv2d", "filters": 2, "kernel": 3, "dilation": 2, "stride": 2,
          "padding": "same", "bias": false})");
  const Tensor y = forward_on_patterns(layer, {7, 7, 2}, {});
  // ceil(7 / 2) = 4 outputs a side; the span 5 needs (4 - 1) x 2 + 5 - 7 = 4 pads, 2 and 2.
  REQUIRE(y.shape() == Shape{1, 4, 4, 2});
  // F.conv2d(F.pad(x, (2, 2, 2, 2)), w, None, stride=2, dilation=2).
  check_values(y, {{0, 0.041958},
                   {1, 0.199301},
                   {11, -0.506993},
                   {19, -0.594406},
                   {20, 0.604895},
                   {31, 0.041958}});
}

TEST_CASE("a conv1d dilated by 3, \"same\" with groups 2, gives torch's conv1d with dilation 3") {
  const Layer layer = conv_family_layer(
      R"({"id": "c", "type": "conv1d", "filters": 2, "kernel": 3, "dilation": 3,
          "padding": "same", "groups": 2})");
  const Tensor y = forward_on_patterns(layer, {8, 4}, {0.25f, -0.5f});
  // The span 7 over 8 positions: 8 outputs with 3 pads on each side.
  REQUIRE(y.shape() == Shape{1, 8, 2});
  // F.conv1d(F.pad(x, (3, 3)), w, b, dilation=3, groups=2): its 16 values.
  check_values(y, {{0, 0.071678},
                   {1, -0.244755},
                   {2, 0.183566},
                   {3, -0.468531},
                   {4, 0.295455},
                   {5, -0.692308},
                   {6, 0.445804},
                   {7, -0.185315},
                   {8, 0.407343},
                   {9, -0.437063},
                   {10, 0.52972},
                   {11, -0.594406},
                   {12, 0.190559},
                   {13, -0.342657},
                   {14, -0.057692},
                   {15, -0.454545}});
}

TEST_CASE("conv2d_transpose with padding 1 and output_padding 1 gives torch's conv_transpose2d") {
  const Layer layer = conv_family_layer(
      R"({"id": "t", "type": "conv2d_transpose", "filters": 3, "kernel": 3, "stride": 2,
          "padding": [1, 1, 1, 1], "output_padding": 1})");
  const Tensor y = forward_on_patterns(layer, {3, 3, 2}, {0.1f, 0.2f, -0.3f});
  // (3 - 1) x 2 - 1 - 1 + 3 + 1 = 6
  REQUIRE(y.shape() == Shape{1, 6, 6, 3});
  // F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1), w = ours permuted
  // (3, 2, 0, 1).
  check_values(y, {{0, -0.10979},
                   {1, 0.032168},
                   {2, -0.425874},
                   {3, 0.166434},
                   {54, 0.372727},
                   {55, 0.521678},
                   {106, 0.336364},
                   {107, -0.142657}});
}

TEST_CASE("conv2d_transpose \"same\" gives Keras' in x stride: torch's full output, cut after") {
  const Layer layer = conv_family_layer(
      R"({"id": "t", "type": "conv2d_transpose", "filters": 3, "kernel": 3, "stride": 2,
          "padding": "same", "bias": false})");
  const Tensor y = forward_on_patterns(layer, {3, 3, 2}, {});
  REQUIRE(y.shape() == Shape{1, 6, 6, 3});
  // F.conv_transpose2d(x, w, None, stride=2)[:, :, :6, :6]: TensorFlow pads the 1 row of
  // kernel - stride after.
  check_values(y, {{0, 0.248252},
                   {1, -0.20979},
                   {2, -0.167832},
                   {3, -0.125874},
                   {54, 0.122378},
                   {60, -0.038462},
                   {106, 0.115385},
                   {107, 0.136364}});
}

TEST_CASE("crop2d keeps the window inside its cropping, and backward puts the gradient back") {
  const Layer layer =
      conv_family_layer(R"({"id": "k", "type": "crop2d", "cropping": [[1, 0], [0, 2]]})");
  const auto kernel = kernel_for(layer, {{3, 4, 1}});
  REQUIRE(kernel->output_shape() == Shape{2, 2, 1});
  // The 3x4 image 0..11: rows 1 and 2, columns 0 and 1.
  Tensor x({1, 3, 4, 1});
  for (std::int64_t i = 0; i < 12; ++i)
    x[i] = float(i);
  const ForwardResult result = kernel->forward({&x}, {}, {});
  CHECK(values_of(result.output) == std::vector<float>{4, 5, 8, 9});
  const Tensor g({1, 2, 2, 1}, std::vector<float>{1, 2, 3, 4});
  const std::vector<Tensor> dx = kernel->backward(g, result.saved, {}, {});
  CHECK(values_of(dx[0]) == std::vector<float>{0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0});
  // The symmetric forms: N for every side, [h, w] for each axis's two.
  CHECK(
      kernel_for(conv_family_layer(R"({"id": "k", "type": "crop2d", "cropping": 1})"), {{5, 6, 2}})
          ->output_shape() == Shape{3, 4, 2});
  CHECK(kernel_for(conv_family_layer(R"({"id": "k", "type": "crop2d", "cropping": [2, 1]})"),
                   {{5, 6, 2}})
            ->output_shape() == Shape{1, 4, 2});
}

TEST_CASE("the convolution family's gradients match central differences, in fp32 and fp16") {
  const std::vector<std::pair<std::string, Shape>> cases = {
      {R"({"id": "c", "type": "conv2d", "filters": 4, "kernel": 3, "padding": "same",
           "groups": 2, "activation": "tanh"})",
       {5, 4, 4}},
      {R"({"id": "c", "type": "conv2d", "filters": 6, "kernel": [2, 3], "stride": 2,
           "groups": 3, "activation": "gelu"})",
       {5, 6, 3}},
      {R"({"id": "c", "type": "conv1d", "filters": 4, "kernel": 3, "padding": "same",
           "groups": 2, "activation": "tanh"})",
       {6, 4}},
      {R"({"id": "c", "type": "conv1d", "filters": 3, "kernel": 2, "stride": 2})", {7, 2}},
      {R"({"id": "c", "type": "conv2d", "filters": 3, "kernel": [2, 3], "dilation": [3, 2],
           "padding": [1, 2, 0, 1], "activation": "tanh"})",
       {6, 5, 2}},
      {R"({"id": "c", "type": "conv1d", "filters": 4, "kernel": 3, "dilation": 2, "stride": 2,
           "padding": "same", "groups": 2})",
       {9, 4}},
      {R"({"id": "t", "type": "conv2d_transpose", "filters": 2, "kernel": 3, "stride": 2,
           "padding": [1, 0, 1, 2], "output_padding": [1, 0], "activation": "tanh"})",
       {3, 4, 3}},
      {R"({"id": "t", "type": "conv2d_transpose", "filters": 3, "kernel": [2, 3],
           "stride": [2, 1], "padding": "same", "activation": "gelu"})",
       {3, 3, 2}},
      {R"({"id": "k", "type": "crop2d", "cropping": [[1, 2], [0, 1]]})", {5, 4, 3}},
  };
  for (const auto& [json, shape] : cases) {
    INFO(json);
    Shape batched{2};
    batched.insert(batched.end(), shape.begin(), shape.end());
    for (const DType dtype : {DType::kFp32, DType::kFp16}) {
      INFO(dtype_name(dtype));
      check_gradients(conv_family_layer(json), {random_tensor(batched, 5)}, {}, SIZE_MAX, dtype);
    }
  }
}

TEST_CASE("the convolution family keeps what the stash rule charges") {
  struct Case {
    std::string json;
    Shape input;
    std::int64_t per_sample;
  };
  // E(in) x 4, plus E(out) x 4 with an activation (dense's and conv2d's rule); crop2d nothing.
  const std::vector<Case> cases = {
      {R"({"id": "c", "type": "conv2d", "filters": 8, "kernel": 3, "groups": 4})",
       {6, 6, 4},
       6 * 6 * 4 * 4},
      {R"({"id": "c", "type": "conv2d", "filters": 4, "kernel": 3, "groups": 4,
           "activation": "relu"})",
       {6, 6, 4},
       6 * 6 * 4 * 4 + 4 * 4 * 4 * 4},
      {R"({"id": "c", "type": "conv1d", "filters": 6, "kernel": 3, "activation": "gelu"})",
       {9, 2},
       9 * 2 * 4 + 7 * 6 * 4},
      {R"({"id": "t", "type": "conv2d_transpose", "filters": 5, "kernel": 2, "stride": 2,
           "activation": "tanh"})",
       {3, 3, 2},
       3 * 3 * 2 * 4 + 6 * 6 * 5 * 4},
      {R"({"id": "t", "type": "conv2d_transpose", "filters": 5, "kernel": 3})",
       {3, 3, 2},
       3 * 3 * 2 * 4},
      {R"({"id": "k", "type": "crop2d", "cropping": 1})", {4, 4, 3}, 0},
  };
  constexpr std::int64_t kBatch = 3;
  for (const Case& c : cases) {
    INFO(c.json);
    const Layer layer = conv_family_layer(c.json);
    const auto kernel = kernel_for(layer, {c.input});
    CHECK(kernel->saved_bytes_per_sample() == c.per_sample);
    Shape batched{kBatch};
    batched.insert(batched.end(), c.input.begin(), c.input.end());
    const Tensor x = random_tensor(batched, 1);
    std::vector<Tensor> params;
    for (const ParameterSpec& spec : kernel->parameters())
      params.emplace_back(spec.shape);
    const ForwardResult result = kernel->forward({&x}, params, {});
    CHECK(result.saved.saved_bytes() == kBatch * c.per_sample);
    // In fp16, half as many bytes, as the memory model charges them.
    const auto half = kernel_for(layer, {c.input}, DType::kFp16);
    const LayerInfo info = layer_info(layer, {c.input}, half->output_shape(), DType::kFp16);
    CHECK(info.saved_bytes == c.per_sample / 2);
    CHECK(half->forward({&x}, params, {}).saved.saved_bytes() == kBatch * info.saved_bytes);
  }
}
