// The element-wise and normalisation types added as one file each (sigmoid, swish, relu6,
// multiply, glu, group_norm): their shape rules, forward values (against PyTorch's, computed with
// torch 1.13 on the same inputs), gradients (against central differences) and what they keep.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "models/kernels/kernels.hpp"
#include "models/layers/layer_info.hpp"
#include "models/layers/layer_parse.hpp"
#include "models/layers/layer_types.hpp"
#include "sim/core/config_file.hpp"
#include "tests/models/kernels_test_support.hpp"
#include "tests/models/model_test_support.hpp"

using namespace ipusim::models;
using namespace ipusim::models::testing;

namespace {

// A layer as a config spells it, read by its type's own reader (the new types have no LayerType
// name and keep their fields in a struct of their own file).
Layer layer_from(const std::string& layer_json) {
  const auto json = nlohmann::json{{"layers", {nlohmann::json::parse(layer_json)}}};
  const auto document = ipusim::core::ConfigDocument::from_json(json, "model.json");
  return parse_layer(document.root().at("layers").at(std::size_t{0}));
}

Layer typed(const std::string& type) {
  return layer_from(R"({"id": "l", "type": ")" + type + R"("})");
}

Shape batched(std::int64_t batch, const Shape& shape) {
  Shape out{batch};
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

// The forward output of `layer` on one sample of `values`, shaped `shape`.
std::vector<float> forward_values(const Layer& layer, const Shape& shape,
                                  const std::vector<float>& values,
                                  const std::vector<Tensor>& params = {}) {
  const auto kernel = kernel_for(layer, {shape});
  const Tensor x(batched(1, shape), values);
  return values_of(kernel->forward({&x}, params, {}).output);
}

// Each value within a float's rounding of torch's (which computes in float32; ipusim in double,
// rounded once).
void check_close(const std::vector<float>& actual, const std::vector<double>& expected) {
  REQUIRE(actual.size() == expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    INFO("element " << i);
    CHECK(actual[i] == Approx(expected[i]).epsilon(1e-6).margin(1e-7));
  }
}

// The error a model on `input` raises for `layers` (JSON array text).
std::string shape_error(const std::string& input, const std::string& layers) {
  return model_error(with_layers(input, layers));
}

const std::vector<float> kActivationInputs = {-2.0f, -0.5f, 0.0f, 0.5f, 3.0f};

}  // namespace

TEST_CASE("sigmoid is torch.sigmoid forward and y (1 - y) backward") {
  const Layer layer = typed("sigmoid");
  CHECK(layer.type == layer_type_from_name("sigmoid"));
  // torch.sigmoid(torch.tensor([-2.0, -0.5, 0.0, 0.5, 3.0]))
  check_close(
      forward_values(layer, {5}, kActivationInputs),
      {0.11920291930437088, 0.3775406777858734, 0.5, 0.622459352016449, 0.9525741338729858});
  // At 0 the output is 1/2, so the gradient is a quarter of the output's.
  const auto kernel = kernel_for(layer, {{1}});
  const Tensor x({1, 1}, 0.0f);
  const ForwardResult result = kernel->forward({&x}, {}, {});
  CHECK(kernel->backward(Tensor({1, 1}, 2.0f), result.saved, {}, {}).at(0)[0] == 0.5f);
  check_gradients(layer, {random_tensor({2, 3, 4}, 1)});
}

TEST_CASE("swish is torch's silu, x sigmoid(x), and its gradient matches central differences") {
  const Layer layer = typed("swish");
  // torch.nn.functional.silu(torch.tensor([-2.0, -0.5, 0.0, 0.5, 3.0]))
  check_close(
      forward_values(layer, {5}, kActivationInputs),
      {-0.23840583860874176, -0.1887703388929367, 0.0, 0.3112296760082245, 2.857722520828247});
  check_gradients(layer, {random_tensor({2, 3, 4}, 2)});
  check_gradients(layer, {random_tensor({2, 6}, 3)}, {}, SIZE_MAX, DType::kFp16);
}

TEST_CASE(
    "relu6 is torch's ReLU6, clamped from 0 to 6, its gradient zero at and past both bounds") {
  const Layer layer = typed("relu6");
  check_close(forward_values(layer, {5}, {-2.0f, 0.5f, 3.0f, 6.0f, 7.5f}), {0, 0.5, 3, 6, 6});
  // Away from the kinks at 0 and 6, where central differences straddle them.
  const Tensor x({2, 4}, std::vector<float>{-2.0f, -0.5f, 0.3f, 2.5f, 4.0f, 5.5f, 6.5f, 9.0f});
  check_gradients(layer, {x});
  // At either bound the gradient is zero, as torch's hardtanh_backward gives it.
  const auto kernel = kernel_for(layer, {{2}});
  const Tensor bounds({1, 2}, std::vector<float>{0.0f, 6.0f});
  const ForwardResult result = kernel->forward({&bounds}, {}, {});
  CHECK(values_of(kernel->backward(Tensor({1, 2}, 1.0f), result.saved, {}, {}).at(0)) ==
        std::vector<float>{0, 0});
}

TEST_CASE("multiply broadcasts its second input over the first's axes where it has size 1") {
  const Layer layer = layer_from(R"({"id": "m", "type": "multiply", "inputs": ["a", "b"]})");
  // a = 1..8 as [2, 2, 2], b = [10, 100] per channel: y = a b; with dy = 1, da = b and db sums
  // a over the positions: channel 0 1 + 3 + 5 + 7, channel 1 2 + 4 + 6 + 8.
  for (const Shape& gate : {Shape{2}, Shape{1, 1, 2}, Shape{1, 2}}) {
    INFO(shape_text(gate));
    const auto kernel = kernel_for(layer, {{2, 2, 2}, gate});
    const Tensor a({1, 2, 2, 2}, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8});
    const Tensor b(batched(1, gate), std::vector<float>{10, 100});
    const ForwardResult result = kernel->forward({&a, &b}, {}, {});
    CHECK(values_of(result.output) == std::vector<float>{10, 200, 30, 400, 50, 600, 70, 800});
    const auto gradients = kernel->backward(Tensor({1, 2, 2, 2}, 1.0f), result.saved, {}, {});
    CHECK(values_of(gradients.at(0)) == std::vector<float>{10, 100, 10, 100, 10, 100, 10, 100});
    CHECK(values_of(gradients.at(1)) == std::vector<float>{16, 20});
  }
}

TEST_CASE("multiply's gradients match central differences for each broadcast") {
  const Layer layer = layer_from(R"({"id": "m", "type": "multiply", "inputs": ["a", "b"]})");
  for (const Shape& second : {Shape{2, 3, 4}, Shape{4}, Shape{1, 1, 4}, Shape{3, 1}, Shape{1}}) {
    INFO(shape_text(second));
    check_gradients(layer, {random_tensor({2, 2, 3, 4}, 4), random_tensor(batched(2, second), 5)});
  }
  // fp16: the gradients rounded to binary16, the second's summed before it is rounded.
  check_gradients(layer, {random_tensor({2, 3, 4}, 6), random_tensor({2, 1, 4}, 7)}, {}, SIZE_MAX,
                  DType::kFp16);
}

TEST_CASE("multiply refuses a second input that does not broadcast to the first, or a third") {
  CHECK(shape_error("[4, 4, 6]", R"([
      {"id": "x", "type": "relu"},
      {"id": "g", "type": "dense", "units": 3, "inputs": ["x"]},
      {"id": "m", "type": "multiply", "inputs": ["x", "g"]}])") ==
        "model.json: at /model/layers/2: layer 'm' (multiply) needs its second input to broadcast "
        "to its first (numpy's rule on per-sample shapes: aligned at the last axis, each axis of "
        "the second equal to the first's or 1, and no more axes), but 'x' gives [4, 4, 6] and "
        "'g' gives [4, 4, 3]");
  // The broadcast goes one way: the first input is never broadcast to the second.
  CHECK(shape_error("[6]", R"([
      {"id": "x", "type": "reshape", "shape": [1, 6]},
      {"id": "y", "type": "reshape", "shape": [2, 3], "inputs": ["x"]},
      {"id": "z", "type": "reshape", "shape": [1, 2, 3], "inputs": ["x"]},
      {"id": "m", "type": "multiply", "inputs": ["y", "z"]}])") ==
        "model.json: at /model/layers/3: layer 'm' (multiply) needs its second input to broadcast "
        "to its first (numpy's rule on per-sample shapes: aligned at the last axis, each axis of "
        "the second equal to the first's or 1, and no more axes), but 'y' gives [2, 3] and 'z' "
        "gives [1, 2, 3]");
  CHECK(shape_error("[6]", R"([
      {"id": "x", "type": "relu"},
      {"id": "m", "type": "multiply", "inputs": ["x", "x", "x"]}])") ==
        "model.json: at /model/layers/1/inputs: layer 'm' (multiply) takes two inputs, but "
        "\"inputs\" lists 3");
}

TEST_CASE("glu halves its axis into a sigmoid(b), as torch's glu") {
  // torch.nn.functional.glu(torch.tensor([[1.0, -1.0, 0.5, 2.0], [-2.0, 3.0, 0.0, -1.0]]), -1)
  check_close(forward_values(typed("glu"), {2, 4}, {1, -1, 0.5f, 2, -2, 3, 0, -1}),
              {0.622459352016449, -0.8807970285415649, -1.0, 0.8068243265151978});
  // Along the first axis: b is all 0, whose sigmoid is 1/2, so the output is a / 2.
  const Layer first = layer_from(R"({"id": "g", "type": "glu", "axis": 0})");
  CHECK(forward_values(first, {4, 2}, {1, 2, 3, 4, 0, 0, 0, 0}) ==
        std::vector<float>{0.5f, 1, 1.5f, 2});
  CHECK(kernel_for(first, {{4, 2}})->output_shape() == Shape{2, 2});
  check_gradients(typed("glu"), {random_tensor({2, 3, 6}, 6)});
  check_gradients(layer_from(R"({"id": "g", "type": "glu", "axis": 1})"),
                  {random_tensor({2, 3, 4, 2}, 7)});
  check_gradients(typed("glu"), {random_tensor({2, 4}, 8)}, {}, SIZE_MAX, DType::kFp16);
}

TEST_CASE("glu refuses an odd axis and an axis its input does not have") {
  CHECK(shape_error("[4, 5]", R"([{"id": "g", "type": "glu"}])") ==
        "model.json: at /model/layers/0: layer 'g' (glu) splits axis -1 into two halves, but its "
        "size 5 is odd: the model input is [4, 5]");
  CHECK(shape_error("[4, 6]", R"([{"id": "g", "type": "glu", "axis": 2}])") ==
        "model.json: at /model/layers/0: layer 'g' (glu) has axis 2, but the model input is "
        "[4, 6], whose axes are -2 to 1");
}

TEST_CASE("group_norm normalises each group of channels over the sample, as torch's") {
  const Layer layer = layer_from(R"({"id": "n", "type": "group_norm", "groups": 2})");
  const std::vector<Tensor> params = {Tensor({4}, std::vector<float>{1, 2, 0.5f, -1}),
                                      Tensor({4}, std::vector<float>{0, 0.1f, -0.2f, 0.3f})};
  // torch.nn.functional.group_norm(x.permute(0, 3, 1, 2), 2, gamma, beta, eps=1e-5), permuted
  // back to channels-last, for this [1, 2, 2, 4] x and these gamma and beta.
  check_close(forward_values(layer, {2, 2, 4},
                             {0.5f, -1, 2, 0.25f, 1.5f, 0, -0.5f, 1, -2, 0.75f, 1.25f, -1.5f, 0,
                              2.5f, -0.25f, 0.5f},
                             params),
              {0.16728372871875763, -1.8596093654632568, 0.6037649512290955, 0.39099228382110596,
               0.9320093393325806, -0.33015817403793335, -0.6094651818275452, -0.3369457721710205,
               -1.7445303201675415, 0.8169302940368652, 0.23979592323303223, 2.0895144939422607,
               -0.21507908403873444, 3.4934699535369873, -0.4881421625614166, 0.14834627509117126});
  check_gradients(layer, {random_tensor({2, 2, 2, 4}, 8)});
  check_gradients(layer_from(R"({"id": "n", "type": "group_norm", "groups": 3})"),
                  {random_tensor({2, 4, 6}, 9)});
  // One channel a group (instance norm) and one group (the whole sample).
  check_gradients(layer_from(R"({"id": "n", "type": "group_norm", "groups": 4})"),
                  {random_tensor({2, 3, 4}, 10)});
  check_gradients(layer_from(R"({"id": "n", "type": "group_norm", "groups": 1})"),
                  {random_tensor({2, 3, 4}, 11)}, {}, SIZE_MAX, DType::kFp16);
}

TEST_CASE("group_norm needs groups that divide its channels") {
  CHECK(shape_error("[4, 6]", R"([{"id": "n", "type": "group_norm", "groups": 4}])") ==
        "model.json: at /model/layers/0: layer 'n' (group_norm) needs channels (the last axis) "
        "divisible by its 4 groups, but the model input is [4, 6]");
  CHECK(shape_error("[4, 6]", R"([{"id": "n", "type": "group_norm"}])") ==
        "model.json: at /model/layers/0: missing required field 'groups'");
}

TEST_CASE("the new types keep what their cost declares, in fp32 and fp16") {
  struct Case {
    Layer layer;
    std::vector<Shape> inputs;
    std::int64_t elements;  // kept per sample: the output, the input or both inputs
  };
  const Layer multiply = layer_from(R"({"id": "m", "type": "multiply", "inputs": ["a", "b"]})");
  const std::vector<Case> cases = {
      {typed("sigmoid"), {{3, 4}}, 12},
      {typed("swish"), {{3, 4}}, 12},
      {multiply, {{3, 4}, {4}}, 16},
      {multiply, {{3, 4}, {3, 4}}, 24},
      {typed("glu"), {{3, 4}}, 12},
      {layer_from(R"({"id": "n", "type": "group_norm", "groups": 2})"), {{3, 4}}, 12},
  };
  for (const DType dtype : {DType::kFp32, DType::kFp16}) {
    for (const Case& c : cases) {
      INFO(layer_type_name(c.layer.type) << " " << dtype_name(dtype));
      const auto kernel = kernel_for(c.layer, c.inputs, dtype);
      const std::int64_t bytes = c.elements * dtype_bytes(dtype);
      CHECK(kernel->saved_bytes_per_sample() == bytes);
      CHECK(kernel->saved_bytes_per_micro_batch() == 0);
      std::vector<Tensor> batch;
      for (const Shape& shape : c.inputs)
        batch.push_back(random_tensor(batched(3, shape), 1));
      std::vector<Tensor> params;
      for (const ParameterSpec& spec : kernel->parameters())
        params.emplace_back(spec.shape, 1.0f);
      CHECK(kernel->forward(pointers(batch), params, {}).saved.saved_bytes() == 3 * bytes);
    }
  }
}

TEST_CASE("hard_sigmoid is torch's Hardsigmoid, relu6(x + 3) / 6, its gradient 1/6 inside") {
  const Layer layer = typed("hard_sigmoid");
  // torch.nn.functional.hardsigmoid(torch.tensor([-4.0, -3.0, -1.5, 0.0, 1.5, 3.0, 4.0]))
  check_close(forward_values(layer, {7}, {-4.0f, -3.0f, -1.5f, 0.0f, 1.5f, 3.0f, 4.0f}),
              {0, 0, 0.25, 0.5, 0.75, 1, 1});
  // Away from the kinks at -3 and 3, where central differences straddle them.
  const Tensor x({2, 4}, std::vector<float>{-5.0f, -2.5f, -1.0f, 0.2f, 1.7f, 2.9f, 3.5f, 8.0f});
  check_gradients(layer, {x});
  // At either bound the gradient is zero, as torch's hardsigmoid_backward gives it.
  const auto kernel = kernel_for(layer, {{2}});
  const Tensor bounds({1, 2}, std::vector<float>{-3.0f, 3.0f});
  const ForwardResult result = kernel->forward({&bounds}, {}, {});
  CHECK(values_of(kernel->backward(Tensor({1, 2}, 1.0f), result.saved, {}, {}).at(0)) ==
        std::vector<float>{0, 0});
}

TEST_CASE("hard_swish is torch's Hardswish, x relu6(x + 3) / 6, with torch's gradient") {
  const Layer layer = typed("hard_swish");
  // torch.nn.functional.hardswish(torch.tensor([-4.0, -3.0, -1.5, 0.0, 1.5, 3.0, 4.0]))
  check_close(forward_values(layer, {7}, {-4.0f, -3.0f, -1.5f, 0.0f, 1.5f, 3.0f, 4.0f}),
              {0, 0, -0.375, 0, 1.125, 3, 4});
  const Tensor x({2, 4}, std::vector<float>{-5.0f, -2.5f, -1.0f, 0.2f, 1.7f, 2.9f, 3.5f, 8.0f});
  check_gradients(layer, {x});
  check_gradients(layer, {random_tensor({2, 6}, 4)}, {}, SIZE_MAX, DType::kFp16);
  // At the bounds torch's hardswish_backward gives x / 3 + 1/2: -1/2 at -3 and 3/2 at 3.
  const auto kernel = kernel_for(layer, {{2}});
  const Tensor bounds({1, 2}, std::vector<float>{-3.0f, 3.0f});
  const ForwardResult result = kernel->forward({&bounds}, {}, {});
  CHECK(values_of(kernel->backward(Tensor({1, 2}, 1.0f), result.saved, {}, {}).at(0)) ==
        std::vector<float>{-0.5f, 1.5f});
}
