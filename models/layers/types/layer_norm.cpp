// layer_norm: normalises over the last per-sample axis, then scales and shifts per feature.

#include <array>

#include "models/layers/types/type_support.hpp"

namespace ipusim::models {
namespace {

const std::array kLayerNormKeys = {
    positive_number_key<&LayerParams::epsilon>("epsilon", kLayerNormEpsilon,
                                               "added to the variance"),
};

void read_layer_norm(const core::ConfigNode& layer, LayerParams& params) {
  read_keys(layer, kLayerNormKeys, params);
}

std::vector<Operation> layer_norm_operations(const Layer& /*layer*/,
                                             const std::vector<Shape>& /*inputs*/,
                                             const Shape& output) {
  return {normalization_op("layer_norm", double(element_count(output)), kLayerNormFlops,
                           double(output.back()))};
}

std::unique_ptr<Kernel> layer_norm_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                          DType dtype, std::uint64_t /*seed*/) {
  return detail::make_layer_norm(layer, inputs, dtype);
}

}  // namespace

LayerTypeDef layer_norm_type() {
  return {.name = "layer_norm",
          .keys = kLayerNormKeys,
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_layer_norm,
          .shape = same_shape,
          .cost = normalization_cost,
          .lower = layer_norm_operations,
          .kernel = layer_norm_kernel};
}

}  // namespace ipusim::models
