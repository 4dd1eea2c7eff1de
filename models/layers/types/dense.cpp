// dense: a fully connected layer over the last axis, then a bias and an activation.

#include <array>

#include "models/layers/types/type_support.hpp"
#include "sim/core/checked.hpp"

namespace ipusim::models {
namespace {

const std::array kDenseKeys = {
    positive_int_key<&LayerParams::units>("units", "output features"),
    kActivationKey,
    kBiasKey,
    own_key("tied_to", KeyKind::kLayerId, "none",
            "an embedding whose word matrix it uses, transposed (parse_layer reads it)"),
};

void read_dense(const core::ConfigNode& layer, LayerParams& params) {
  read_keys(layer, kDenseKeys, params);
}

Shape dense_shape(const Layer& layer, const std::vector<InputShape>& inputs) {
  Shape out = only_input(inputs).shape;
  out.back() = layer.params.units;
  return out;
}

LayerCost dense_cost(const Layer& layer, const std::vector<Shape>& inputs, const CostSizes& size) {
  const std::int64_t units = layer.params.units;
  return linear_cost(layer, size, core::checked_mul(inputs.front().back(), units, kParamCount),
                     units);
}

std::vector<Operation> dense_operations(const Layer& layer, const std::vector<Shape>& inputs,
                                        const Shape& /*output*/) {
  const Shape& input = inputs.front();
  const double inner = double(input.back());
  const double rows = double(element_count(input)) / inner;
  const double units = double(layer.params.units);
  std::vector<Operation> ops = {product("matmul", OpClass::kMatmul, {rows, inner, units})};
  if (layer.params.bias)
    ops.push_back(vector_op("bias_add", OpClass::kElementwise, rows * units, kBiasFlops));
  add_activation(ops, layer.params.activation, rows * units);
  return ops;
}

std::unique_ptr<Kernel> dense_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                     DType dtype, std::uint64_t /*seed*/) {
  return detail::make_dense(layer, inputs, dtype);
}

}  // namespace

LayerTypeDef dense_type() {
  return {.name = "dense",
          .keys = kDenseKeys,
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_dense,
          .shape = dense_shape,
          .cost = dense_cost,
          .lower = dense_operations,
          .kernel = dense_kernel};
}

}  // namespace ipusim::models
