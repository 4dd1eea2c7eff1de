// gelu: x Φ(x) elementwise, the exact erf form, or its tanh approximation.

#include <array>

#include "models/layers/types/type_support.hpp"

namespace ipusim::models {
namespace {

constexpr std::array<const char*, 2> kGeluForms = {"none", "tanh"};

const std::array kGeluKeys = {
    enum_key<&LayerParams::gelu_form>(
        "approximate", kGeluForms,
        "\"tanh\": 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), PyTorch's "
        "nn.GELU(approximate='tanh'); \"none\": the exact x Φ(x)"),
};

void read_gelu(const core::ConfigNode& layer, LayerParams& params) {
  read_keys(layer, kGeluKeys, params);
}

// Backward needs the input.
LayerCost gelu_cost(const Layer& /*layer*/, const std::vector<Shape>& /*inputs*/,
                    const CostSizes& size) {
  return operations_cost(size.in * size.d);
}

std::vector<Operation> gelu_operations(const Layer& /*layer*/, const std::vector<Shape>& /*inputs*/,
                                       const Shape& output) {
  const double elements = double(element_count(output));
  return {lowered(vector_op("gelu", OpClass::kNonLinear, elements, kGeluFlops),
                  VectorLowering::kGelu, elements)};
}

std::unique_ptr<Kernel> gelu_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                    DType dtype, std::uint64_t /*seed*/) {
  const bool tanh = layer.params.gelu_form == GeluForm::kTanh;
  return detail::make_gelu(inputs, dtype, tanh ? Activation::kGeluTanh : Activation::kGelu);
}

}  // namespace

LayerTypeDef gelu_type() {
  return {.name = "gelu",
          .keys = kGeluKeys,
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_gelu,
          .shape = same_shape,
          .cost = gelu_cost,
          .lower = gelu_operations,
          .kernel = gelu_kernel};
}

}  // namespace ipusim::models
