// concat: its inputs joined along one per-sample axis.

#include <array>

#include "models/layers/types/type_support.hpp"
#include "sim/core/checked.hpp"

namespace ipusim::models {
namespace {

const std::array kConcatKeys = {
    int_key<&LayerParams::axis>("axis", -1, kInt32Min, kInt32Max,
                                "the per-sample axis joined; negative counts from the last"),
};

void read_concat(const core::ConfigNode& layer, LayerParams& params) {
  read_keys(layer, kConcatKeys, params);
}

bool agree_except(const Shape& a, const Shape& b, std::size_t axis) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (i != axis && a[i] != b[i])
      return false;
  }
  return true;
}

Shape concat_shape(const Layer& layer, const std::vector<InputShape>& inputs) {
  const InputShape& first = inputs.front();
  for (const InputShape& input : inputs) {
    if (input.shape.size() != first.shape.size())
      fail_layer(layer, "needs inputs of equal rank, but " + input_text(first) + " and " +
                            input_text(input));
  }
  const std::size_t axis = axis_index(layer, first.shape.size());
  Shape out = first.shape;
  out[axis] = 0;
  for (const InputShape& input : inputs) {
    if (!agree_except(input.shape, first.shape, axis)) {
      fail_layer(layer, "needs inputs that agree on every axis but axis " + std::to_string(axis) +
                            ", but " + input_text(first) + " and " + input_text(input));
    }
    out[axis] = core::checked_add(out[axis], input.shape[axis], "concatenated axis");
  }
  return out;
}

std::unique_ptr<Kernel> concat_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                      DType dtype, std::uint64_t /*seed*/) {
  return detail::make_concat(layer, inputs, dtype);
}

}  // namespace

LayerTypeDef concat_type() {
  return {.name = "concat",
          .keys = kConcatKeys,
          .inputs = LayerInputs::kTwoOrMore,
          .view = false,
          .read = read_concat,
          .shape = concat_shape,
          .cost = no_cost,
          .lower = no_operations,
          .kernel = concat_kernel};
}

}  // namespace ipusim::models
