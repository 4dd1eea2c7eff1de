// relu6: min(max(x, 0), 6) elementwise (PyTorch's ReLU6, exported as ONNX's Clip(x, 0, 6);
// MobileNetV2's activation).

#include <algorithm>

#include "models/kernels/kernels_internal.hpp"
#include "models/layers/types/type_support.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {
namespace {

// A max and a min per element.
constexpr double kRelu6Flops = 2;
constexpr float kRelu6Max = 6.0f;

// Backward needs the output, which tells which elements the clip passed.
LayerCost relu6_cost(const Layer& /*layer*/, const std::vector<Shape>& /*inputs*/,
                     const CostSizes& size) {
  return operations_cost(size.out * size.d);
}

std::vector<Operation> relu6_operations(const Layer& /*layer*/,
                                        const std::vector<Shape>& /*inputs*/, const Shape& output) {
  return {vector_op("relu6", OpClass::kElementwise, double(element_count(output)), kRelu6Flops)};
}

// Keeps its output: the gradient passes where 0 < y < 6, zero at either bound as PyTorch's
// hardtanh_backward has it.
float relu6_forward(float x) {
  return std::clamp(x, 0.0f, kRelu6Max);
}

double relu6_derivative(float y) {
  return y > 0.0f && y < kRelu6Max ? 1.0 : 0.0;
}

std::unique_ptr<Kernel> relu6_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                     DType dtype, std::uint64_t /*seed*/) {
  return detail::make_pointwise(layer, inputs, dtype,
                                {relu6_forward, relu6_derivative, /*keeps_input=*/false});
}

}  // namespace

LayerTypeDef relu6_type() {
  return {.name = "relu6",
          .keys = {},
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_no_keys,
          .shape = same_shape,
          .cost = relu6_cost,
          .lower = relu6_operations,
          .kernel = relu6_kernel};
}

}  // namespace ipusim::models
