// hard_sigmoid: relu6(x + 3) / 6 elementwise (PyTorch's nn.Hardsigmoid, exported as ONNX's
// HardSigmoid with alpha 1/6 and beta 1/2): MobileNetV3's squeeze-and-excite gate.

#include <algorithm>

#include "models/kernels/kernels_internal.hpp"
#include "models/layers/types/type_support.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {
namespace {

// A multiply-add, a max and a min per element.
constexpr double kHardSigmoidFlops = 4;

// Backward needs the output, which tells which elements the clip passed.
LayerCost hard_sigmoid_cost(const Layer& /*layer*/, const std::vector<Shape>& /*inputs*/,
                            const CostSizes& size) {
  return operations_cost(size.out * size.d);
}

std::vector<Operation> hard_sigmoid_operations(const Layer& /*layer*/,
                                               const std::vector<Shape>& /*inputs*/,
                                               const Shape& output) {
  return {vector_op("hard_sigmoid", OpClass::kNonLinear, double(element_count(output)),
                    kHardSigmoidFlops)};
}

float hard_sigmoid_forward(float x) {
  return std::clamp(x / 6.0f + 0.5f, 0.0f, 1.0f);
}

// Keeps its output: the gradient is 1/6 where 0 < y < 1 (-3 < x < 3), zero at and past either
// bound, as PyTorch's hardsigmoid_backward has it.
double hard_sigmoid_derivative(float y) {
  return y > 0.0f && y < 1.0f ? 1.0 / 6.0 : 0.0;
}

std::unique_ptr<Kernel> hard_sigmoid_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                            DType dtype, std::uint64_t /*seed*/) {
  return detail::make_pointwise(
      layer, inputs, dtype, {hard_sigmoid_forward, hard_sigmoid_derivative, /*keeps_input=*/false});
}

}  // namespace

LayerTypeDef hard_sigmoid_type() {
  return {.name = "hard_sigmoid",
          .keys = {},
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_no_keys,
          .shape = same_shape,
          .cost = hard_sigmoid_cost,
          .lower = hard_sigmoid_operations,
          .kernel = hard_sigmoid_kernel};
}

}  // namespace ipusim::models
