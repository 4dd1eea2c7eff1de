#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "models/layers/layer_types.hpp"
#include "models/layers/model.hpp"
#include "models/layers/shape_inference.hpp"
#include "sim/core/config_file.hpp"

using namespace ipusim::models;

namespace {

// Every shipped config that holds a model: configs/*.json (their own or an included one) and
// configs/models/*.json, by name.
std::vector<std::filesystem::path> shipped_model_configs() {
  const std::filesystem::path configs = std::filesystem::path(IPUSIM_SOURCE_DIR) / "configs";
  std::vector<std::filesystem::path> paths;
  for (const auto& folder : {configs, configs / "models"}) {
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
    const double flops = operation_flops(op, forward ? op.forward : op.backward);
    sum.all += flops;
    if (on_amp(op.op_class))
      sum.on_amp += flops;
  }
  return sum;
}

// The invariant between a layer's FLOPs and its operations', type by type
// (models/layers/layer_info.hpp says why each differs where it does).
void check_layer_flops(LayerType type, const LayerInfo& info) {
  const OperationFlops forward = operations_flops(info, true);
  const OperationFlops backward = operations_flops(info, false);
  const double outputs = double(element_count(info.output));
  switch (type) {
    case LayerType::kInput:
    case LayerType::kFlatten:
    case LayerType::kReshape:
    case LayerType::kConcat:
    case LayerType::kSlice:
    case LayerType::kDense:
    case LayerType::kConv2d:
    case LayerType::kRelu:
    case LayerType::kGelu:
    case LayerType::kTanh:
    case LayerType::kAdd:
      CHECK(info.forward_flops == forward.all);
      CHECK(info.backward_flops == backward.all);
      return;
    case LayerType::kAttention:
    case LayerType::kTransformerEncoder:
    case LayerType::kTransformerAttention:
    case LayerType::kTransformerFeedForward:
      CHECK(info.forward_flops == forward.on_amp);
      CHECK(info.backward_flops == backward.on_amp);
      CHECK(info.backward_flops == 2 * info.forward_flops);
      return;
    case LayerType::kMaxPool2d:
      CHECK(info.forward_flops == forward.all);
      CHECK(info.backward_flops == outputs);
      return;
    case LayerType::kGlobalAveragePool2d:
      CHECK(info.forward_flops == forward.all + outputs);
      CHECK(info.backward_flops == backward.all);
      return;
    case LayerType::kDropout:  // the operation counts the draw and the multiply
      CHECK(info.forward_flops == forward.all / 2);
      CHECK(info.backward_flops == backward.all / 2);
      return;
    case LayerType::kSoftmax:
      CHECK(info.forward_flops == forward.all);
      CHECK(info.backward_flops == 3 * outputs);
      return;
    case LayerType::kSoftmaxCrossEntropy:
      CHECK(info.forward_flops == forward.all);
      CHECK(info.backward_flops == backward.all / kSoftmaxFlops);
      return;
    case LayerType::kLayerNorm:
    case LayerType::kBatchNorm:
    case LayerType::kEmbedding:
      CHECK(info.forward_flops == forward.all);
      CHECK(info.backward_flops == 2 * info.forward_flops);
      return;
  }
  FAIL("not a LayerType");
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
      check_layer_flops(model.layers[i].type, model.info[i]);
      types.insert(model.layers[i].type);
    }
  }
  CHECK(models == 13);
  CHECK(types.size() == 18);
}
