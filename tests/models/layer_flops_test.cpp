#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "model_test_support.hpp"
#include "models/layers/layer_types.hpp"
#include "models/layers/model.hpp"
#include "models/layers/shape_inference.hpp"
#include "sim/core/config_file.hpp"
#include "tests/models/model_test_support.hpp"

using namespace ipusim::models;

namespace {

// Every shipped config that holds a model: configs/*.json (their own or an included one) and
// configs/models/*.json and configs/examples/*.json, by name.
std::vector<std::filesystem::path> shipped_model_configs() {
  const std::filesystem::path configs = std::filesystem::path(IPUSIM_SOURCE_DIR) / "configs";
  std::vector<std::filesystem::path> paths;
  for (const auto& folder : {configs, configs / "models", configs / "examples"}) {
    for (const auto& entry : std::filesystem::directory_iterator(folder)) {
      if (entry.path().extension() == ".json")
        paths.push_back(entry.path());
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

// One pass of a layer's operations, summed as layer_info sums them.
struct OperationFlops {
  double all = 0;
  double on_amp = 0;  // matmul and conv alone
};

OperationFlops operations_flops(const LayerInfo& info, bool forward) {
  OperationFlops sum;
  for (const Operation& op : info.operations) {
    const double flops = (forward ? op.forward : op.backward).flops;
    sum.all += flops;
    if (on_amp(op.op_class))
      sum.on_amp += flops;
  }
  return sum;
}

// The elements of the first input of layer `i` (the layer before it, or the model input).
double first_input_elements(const Model& model, std::size_t i) {
  const Layer& layer = model.layers[i];
  if (!layer.inputs.empty())
    return double(element_count(model.info[std::size_t(model.index_of(layer.inputs[0]))].output));
  return double(element_count(i == 0 ? model.input_shape : model.info[i - 1].output));
}

// A layer's FLOPs are its operations' (the transformer layers: their matrix products alone), and
// those of the types counted a few FLOPs an element follow their rules, written out here from
// models/layers/layer_info.hpp: E is the output's elements, I the first input's.
void check_layer_flops(const Model& model, std::size_t i) {
  const Layer& layer = model.layers[i];
  const LayerInfo& info = model.info[i];
  const OperationFlops forward = operations_flops(info, true);
  const OperationFlops backward = operations_flops(info, false);
  const std::string name = layer_type_name(layer.type);
  const bool products_only =
      layer.type == LayerType::kAttention || layer.type == LayerType::kTransformerEncoder ||
      layer.type == LayerType::kTransformerAttention ||
      layer.type == LayerType::kTransformerFeedForward || name == "relative_attention";
  CHECK(info.forward_flops == (products_only ? forward.on_amp : forward.all));
  CHECK(info.backward_flops == (products_only ? backward.on_amp : backward.all));
  const double e = double(element_count(info.output));
  const double in = first_input_elements(model, i);
  const LayerParams& p = layer.params;
  switch (layer.type) {
    case LayerType::kAttention:
    case LayerType::kTransformerEncoder:
    case LayerType::kTransformerAttention:
    case LayerType::kTransformerFeedForward:
      CHECK(info.backward_flops == 2 * info.forward_flops);
      return;
    case LayerType::kMaxPool2d:  // a compare an element of each window; an add a window back
      CHECK(info.forward_flops == e * double(p.pool_h * p.pool_w));
      CHECK(info.backward_flops == e);
      return;
    case LayerType::kAvgPool2d:  // an add an element of each window, each way
      CHECK(info.forward_flops == e * double(p.pool_h * p.pool_w));
      CHECK(info.backward_flops == e * double(p.pool_h * p.pool_w));
      return;
    case LayerType::kPositionTable:  // an add an element each way, as a bias
      CHECK(info.forward_flops == e);
      CHECK(info.backward_flops == e);
      return;
    case LayerType::kClassToken:  // a copy forward; the token's gradient, an add a feature
      CHECK(info.forward_flops == 0);
      CHECK(info.backward_flops == double(info.output.back()));
      return;
    case LayerType::kTokenMean:            // as global_average_pool2d's, over the tokens
    case LayerType::kGlobalAveragePool2d:  // the sums and a division a channel; a share a pixel
      CHECK(info.forward_flops == in + e);
      CHECK(info.backward_flops == in);
      return;
    case LayerType::kDropout:  // the multiply by the mask each way
      CHECK(info.forward_flops == e);
      CHECK(info.backward_flops == e);
      return;
    case LayerType::kSoftmax:
      CHECK(info.forward_flops == 5 * e);
      CHECK(info.backward_flops == 3 * e);
      return;
    case LayerType::kSoftmaxCrossEntropy:  // softmax's five a logit; the probability less 1-hot
      CHECK(info.forward_flops == 5 * in);
      CHECK(info.backward_flops == in);
      return;
    case LayerType::kLayerNorm:
    case LayerType::kBatchNorm:
      CHECK(info.forward_flops == 8 * e);
      CHECK(info.backward_flops == 16 * e);
      return;
    case LayerType::kEmbedding: {  // adds of position and type rows, a layer norm; scatter-adds
      const double adds = (p.positions ? 1 : 0) + (p.token_types > 0 ? 1 : 0);
      CHECK(info.forward_flops == e * adds + (p.normalized ? 8 * e : 0));
      CHECK(info.backward_flops == e + e * adds + (p.normalized ? 16 * e : 0));
      return;
    }
    case LayerType::kInput:
    case LayerType::kFlatten:
    case LayerType::kReshape:
    case LayerType::kConcat:
    case LayerType::kSlice:
    case LayerType::kTokenSelect:
    case LayerType::kDense:
    case LayerType::kConv2d:
    case LayerType::kRelu:
    case LayerType::kGelu:
    case LayerType::kTanh:
    case LayerType::kAdd:
      return;
  }
  // The types added since LayerType's names, by name (their closed forms on chosen shapes are
  // tested beside their kernels and below).
  if (name == "relative_attention") {
    CHECK(info.backward_flops == 2 * info.forward_flops);
  } else if (name == "sigmoid") {  // as tanh, four an element each way
    CHECK(info.forward_flops == 4 * e);
    CHECK(info.backward_flops == 4 * e);
  } else if (name == "swish" || name == "glu") {  // the sigmoid's four and a multiply
    CHECK(info.forward_flops == 5 * e);
    CHECK(info.backward_flops == 5 * e);
  } else if (name == "relu6") {  // a max and a min; backward a compare and a select
    CHECK(info.forward_flops == 2 * e);
    CHECK(info.backward_flops == 2 * e);
  } else if (name == "group_norm") {  // as layer_norm's
    CHECK(info.forward_flops == 8 * e);
    CHECK(info.backward_flops == 16 * e);
  } else if (name == "multiply") {  // a multiply; each input's gradient, the second's summed
    const int second = model.index_of(layer.inputs.at(1));
    const double b = double(element_count(model.info[std::size_t(second)].output));
    CHECK(info.forward_flops == e);
    CHECK(info.backward_flops == 3 * e - b);
  } else if (name == "crop2d") {  // a view
    CHECK(info.forward_flops == 0);
    CHECK(info.backward_flops == 0);
  } else if (name != "conv1d" && name != "conv2d_transpose") {  // as conv2d, tested beside it
    FAIL("no FLOPs rule for the layer type " + name);
  }
}

}  // namespace

TEST_CASE(
    "every layer of the shipped models counts the FLOPs of its operations, by its type's rule") {
  std::set<LayerType> types;
  int models = 0;
  for (const auto& path : shipped_model_configs()) {
    const auto document = ipusim::core::ConfigDocument::load(path.string(), {});
    const auto section = document.root().find("model");
    if (!section || !section->is_object())
      continue;
    ++models;
    const Model model = parse_model(*section);
    for (std::size_t i = 0; i < model.layers.size(); ++i) {
      INFO(path.filename().string() << ": " << layer_label(model.layers[i]));
      check_layer_flops(model, i);
      types.insert(model.layers[i].type);
    }
  }
  CHECK(models == 22);
  CHECK(types.size() == 31);
}

TEST_CASE("the element-wise and group norm types count their FLOPs by their closed forms") {
  // E: output elements; B: the multiply's second input. sigmoid 4·E each way (as tanh), swish 5·E
  // (and the multiply by x), multiply E and 3·E − B back (a multiply for each input's gradient
  // and E − B adds summing the second's), glu 5·E of its halved output, group_norm 8·E and 16·E
  // (as layer_norm) with a scale and a bias per channel.
  const Model model = ipusim::models::testing::model_from(R"({
      "name": "m", "input": {"shape": [4, 4, 6]}, "layers": [
        {"id": "norm", "type": "group_norm", "groups": 3},
        {"id": "act", "type": "swish"},
        {"id": "squeeze", "type": "global_average_pool2d"},
        {"id": "gate", "type": "sigmoid"},
        {"id": "excite", "type": "multiply", "inputs": ["act", "gate"]},
        {"id": "same", "type": "multiply", "inputs": ["act", "excite"]},
        {"id": "glu", "type": "glu"}]})");
  struct Expected {
    double forward;
    double backward;
    std::int64_t params;
  };
  const double e = 96;
  const std::vector<Expected> expected = {
      {8 * e, 16 * e, 12}, {5 * e, 5 * e, 0}, {e + 6, e, 0},       {4 * 6, 4 * 6, 0},
      {e, 3 * e - 6, 0},   {e, 3 * e - e, 0}, {5 * 48, 5 * 48, 0},
  };
  REQUIRE(model.info.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    INFO(layer_label(model.layers[i]));
    CHECK(model.info[i].forward_flops == expected[i].forward);
    CHECK(model.info[i].backward_flops == expected[i].backward);
    CHECK(model.info[i].params == expected[i].params);
  }
  CHECK(model.info.back().output == Shape{4, 4, 3});
}

TEST_CASE("the convolution family's FLOPs, parameters and units follow their closed forms") {
  // [16, 16, 32] -> grouped [16, 16, 64] -> depthwise [16, 16, 64] -> up [32, 32, 8] ->
  // crop [30, 28, 8] -> [840, 8] -> conv1d [838, 4].
  const Model model =
      ipusim::models::testing::model_from(ipusim::models::testing::with_layers("[16, 16, 32]", R"([
      {"id": "grouped", "type": "conv2d", "filters": 64, "kernel": 3, "padding": "same",
       "groups": 2},
      {"id": "depthwise", "type": "conv2d", "filters": 64, "kernel": 3, "padding": "same",
       "groups": 64, "bias": false},
      {"id": "up", "type": "conv2d_transpose", "filters": 8, "kernel": 3, "stride": 2,
       "padding": "same"},
      {"id": "crop", "type": "crop2d", "cropping": [[1, 1], [2, 2]]},
      {"id": "flat", "type": "reshape", "shape": [840, 8]},
      {"id": "seq", "type": "conv1d", "filters": 4, "kernel": 3, "groups": 2}])"));
  struct Expected {
    double forward;   // 2 x positions x taps x (C / groups) x filters, + a bias add an output
    double backward;  // twice the convolution, + the bias's gradient, an add an output
    std::int64_t params;
    OpClass unit;  // of the convolution: the AMP from 16 input channels a group
  };
  const std::vector<Expected> expected = {
      {2.0 * 256 * 9 * 16 * 64 + 256 * 64, 4.0 * 256 * 9 * 16 * 64 + 256 * 64, 9 * 16 * 64 + 64,
       OpClass::kConv},
      {2.0 * 256 * 9 * 1 * 64, 4.0 * 256 * 9 * 1 * 64, 9 * 64, OpClass::kElementwise},
      // The conv2d it transposes: 256 positions of a 3x3 window of 8 filters giving 64.
      {2.0 * 256 * 9 * 64 * 8 + 1024 * 8, 4.0 * 256 * 9 * 64 * 8 + 1024 * 8, 9 * 64 * 8 + 8,
       OpClass::kConv},
      {0, 0, 0, OpClass::kCopy},
      {0, 0, 0, OpClass::kCopy},
      {2.0 * 838 * 3 * 4 * 4 + 838 * 4, 4.0 * 838 * 3 * 4 * 4 + 838 * 4, 3 * 4 * 4 + 4,
       OpClass::kElementwise},
  };
  REQUIRE(shape_text(model.info[5].output) == "[838, 4]");
  for (std::size_t i = 0; i < expected.size(); ++i) {
    INFO(layer_label(model.layers[i]));
    const LayerInfo& info = model.info[i];
    CHECK(info.forward_flops == expected[i].forward);
    CHECK(info.backward_flops == expected[i].backward);
    CHECK(info.params == expected[i].params);
    if (expected[i].forward == 0)
      CHECK(info.operations.empty());
    else
      CHECK(info.operations.front().op_class == expected[i].unit);
  }
}
