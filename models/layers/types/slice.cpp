// slice: a contiguous range of one per-sample axis, a view (as in Poplar).

#include <array>

#include "models/layers/types/type_support.hpp"

namespace ipusim::models {
namespace {

const std::array kSliceKeys = {
    int_key<&LayerParams::axis>("axis", 0, kInt32Min, kInt32Max,
                                "the per-sample axis; negative counts from the last"),
    int_key<&LayerParams::slice_start>("start", 0, 0, core::kMaxCount, "the first element taken"),
    positive_int_key<&LayerParams::slice_size>("size", "how many elements it takes"),
};

void read_slice(const core::ConfigNode& layer, LayerParams& params) {
  read_keys(layer, kSliceKeys, params);
}

Shape slice_shape(const Layer& layer, const std::vector<InputShape>& inputs) {
  const InputShape& input = only_input(inputs);
  const std::size_t axis = axis_index(layer, input.shape.size());
  const auto& p = layer.params;
  if (p.slice_start + p.slice_size > input.shape[axis]) {
    fail_layer(layer, "takes elements " + std::to_string(p.slice_start) + " to " +
                          std::to_string(p.slice_start + p.slice_size - 1) + " of axis " +
                          std::to_string(axis) + ", but " + input_text(input));
  }
  Shape out = input.shape;
  out[axis] = p.slice_size;
  return out;
}

std::unique_ptr<Kernel> slice_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                     DType dtype, std::uint64_t /*seed*/) {
  return detail::make_slice(layer, inputs, dtype);
}

}  // namespace

LayerTypeDef slice_type() {
  return {.name = "slice",
          .keys = kSliceKeys,
          .inputs = LayerInputs::kOne,
          .view = true,
          .read = read_slice,
          .shape = slice_shape,
          .cost = no_cost,
          .lower = no_operations,
          .kernel = slice_kernel};
}

}  // namespace ipusim::models
