// dropout: zeroes each element with probability `rate` and scales the rest by 1 / (1 - rate).

#include <array>

#include "models/layers/types/type_support.hpp"

namespace ipusim::models {
namespace {

const std::array kDropoutKeys = {
    dropout_rate_key<&LayerParams::rate>("rate", "the probability of dropping an element"),
};

void read_dropout(const core::ConfigNode& layer, LayerParams& params) {
  read_keys(layer, kDropoutKeys, params);
}

// One FLOP per element; it keeps its mask's seed, not the mask.
LayerCost dropout_cost(const Layer& /*layer*/, const std::vector<Shape>& /*inputs*/,
                       const CostSizes& /*size*/) {
  LayerCost cost = operations_cost(0);
  cost.seed_bytes = kDropoutSeedBytes;
  return cost;
}

std::vector<Operation> dropout_operations(const Layer& /*layer*/, const std::vector<Shape>& inputs,
                                          const Shape& /*output*/) {
  const double in = double(element_count(inputs.front()));
  return {lowered(vector_op("dropout", OpClass::kElementwise, in, kDropoutFlops),
                  VectorLowering::kDropout, in)};
}

std::unique_ptr<Kernel> dropout_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                       DType dtype, std::uint64_t seed) {
  return detail::make_dropout(layer, inputs, dtype, seed);
}

}  // namespace

LayerTypeDef dropout_type() {
  return {.name = "dropout",
          .keys = kDropoutKeys,
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_dropout,
          .shape = same_shape,
          .cost = dropout_cost,
          .lower = dropout_operations,
          .kernel = dropout_kernel};
}

}  // namespace ipusim::models
