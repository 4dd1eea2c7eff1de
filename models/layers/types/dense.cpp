// dense: a fully connected layer over the last axis, then a bias and an activation. Its matmul
// may be serialised over the output channels, as PopTorch's serializedMatMul (mode
// OutputChannels) and Graphcore's GPT-2 LM head (--embedding-serialization-factor) do it.

#include <array>

#include "models/layers/types/type_support.hpp"
#include "sim/core/checked.hpp"

namespace ipusim::models {
namespace {

struct DenseFields {
  std::int64_t serialization_factor = 1;
};

const std::array kDenseKeys = {
    positive_int_key<&LayerParams::units>("units", "output features"),
    kActivationKey,
    kBiasKey,
    own_key("tied_to", KeyKind::kLayerId, "none",
            "an embedding whose word matrix it uses, transposed (parse_layer reads it)"),
    int_key<&DenseFields::serialization_factor>(
        "serialization_factor", 1, 1, kMaxSerialization,
        "the matmul as so many over slices of the output channels, dividing units: a slice's "
        "temporaries at a time, its compute sets once a slice"),
};

void read_dense(const core::ConfigNode& layer, LayerParams& params) {
  read_keys(layer, kDenseKeys, params);
}

std::int64_t serialization_factor(const Layer& layer) {
  return own_fields_or_defaults<DenseFields>(layer.params).serialization_factor;
}

Shape dense_shape(const Layer& layer, const std::vector<InputShape>& inputs) {
  const std::int64_t factor = serialization_factor(layer);
  if (layer.params.units % factor != 0) {
    fail_layer(layer, "needs units divisible by its serialization_factor " +
                          std::to_string(factor) + ", but units is " +
                          std::to_string(layer.params.units));
  }
  Shape out = only_input(inputs).shape;
  out.back() = layer.params.units;
  return out;
}

LayerCost dense_cost(const Layer& layer, const std::vector<Shape>& inputs, const CostSizes& size) {
  const std::int64_t units = layer.params.units;
  return linear_cost(layer, size, core::checked_mul(inputs.front().back(), units, kParamCount),
                     units);
}

// Serialised k ways, each pass runs k compute sets of a k-th of the work. A tied matmul's weights
// were laid out for the embedding's lookup, not for it, so poplin rearranges them into a
// temporary copy first (poplin/MatMul.hpp, preArrangeMatMulInputRHS: an operand "that would
// otherwise be rearranged as part of the matmul operation"); serialised, a slice's copy at a time.
Operation serialised(Operation matmul, const Layer& layer) {
  const auto factor = serialization_factor(layer);
  matmul.forward.compute_sets *= int(factor);
  matmul.backward.compute_sets *= int(factor);
  if (matmul.product)
    matmul.product->slices = factor;
  if (!layer.tied_to.empty())
    matmul.temporary_weight_elements = matmul.forward.weight_elements / double(factor);
  return matmul;
}

std::vector<Operation> dense_operations(const Layer& layer, const std::vector<Shape>& inputs,
                                        const Shape& /*output*/) {
  const Shape& input = inputs.front();
  const double inner = double(input.back());
  const double rows = double(element_count(input)) / inner;
  const double units = double(layer.params.units);
  std::vector<Operation> ops = {
      serialised(product("matmul", OpClass::kMatmul, {rows, inner, units}), layer)};
  if (layer.params.bias)
    ops.push_back(lowered(vector_op("bias_add", OpClass::kElementwise, rows * units, kBiasFlops),
                          VectorLowering::kBiasAdd, units));
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
