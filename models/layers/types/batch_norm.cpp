// batch_norm: normalises each channel (the last axis) over every other axis, with running
// statistics for inference.

#include <array>

#include "models/layers/types/type_support.hpp"

namespace ipusim::models {
namespace {

const std::array kBatchNormKeys = {
    positive_number_key<&LayerParams::epsilon>("epsilon", kBatchNormEpsilon,
                                               "added to the variance"),
    fraction_key<&LayerParams::momentum>("momentum", kBatchNormMomentum,
                                         "the running statistics' share kept per micro-batch"),
};

void read_batch_norm(const core::ConfigNode& layer, LayerParams& params) {
  read_keys(layer, kBatchNormKeys, params);
}

std::vector<Operation> batch_norm_operations(const Layer& /*layer*/,
                                             const std::vector<Shape>& /*inputs*/,
                                             const Shape& output) {
  const double channels = double(output.back());
  const double elements = double(element_count(output));
  return {normalization_op("batch_norm", elements, kLayerNormFlops, elements / channels,
                           VectorLowering::kLayerNorm, true)};
}

std::unique_ptr<Kernel> batch_norm_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                          DType dtype, std::uint64_t /*seed*/) {
  return detail::make_batch_norm(layer, inputs, dtype);
}

}  // namespace

LayerTypeDef batch_norm_type() {
  return {.name = "batch_norm",
          .keys = kBatchNormKeys,
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_batch_norm,
          .shape = same_shape,
          .cost = normalization_cost,
          .lower = batch_norm_operations,
          .kernel = batch_norm_kernel};
}

}  // namespace ipusim::models
