// hard_swish: x relu6(x + 3) / 6 elementwise (PyTorch's nn.Hardswish, exported as ONNX's
// HardSwish at opset 14): MobileNetV3's activation.

#include <algorithm>

#include "models/kernels/kernels_internal.hpp"
#include "models/layers/types/type_support.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {
namespace {

// hard_sigmoid's four and the multiply by x, each way.
constexpr double kHardSwishFlops = 5;

// Backward needs the input.
LayerCost hard_swish_cost(const Layer& /*layer*/, const std::vector<Shape>& /*inputs*/,
                          const CostSizes& size) {
  return operations_cost(size.in * size.d);
}

std::vector<Operation> hard_swish_operations(const Layer& /*layer*/,
                                             const std::vector<Shape>& /*inputs*/,
                                             const Shape& output) {
  return {
      vector_op("hard_swish", OpClass::kNonLinear, double(element_count(output)), kHardSwishFlops)};
}

float hard_swish_forward(float x) {
  return x * std::clamp(x + 3.0f, 0.0f, 6.0f) / 6.0f;
}

// Keeps its input: 0 below -3, x/3 + 1/2 from -3 to 3 (both included), 1 above, as PyTorch's
// hardswish_backward has it.
double hard_swish_derivative(float x) {
  if (x < -3.0f)
    return 0.0;
  return x <= 3.0f ? double(x) / 3.0 + 0.5 : 1.0;
}

std::unique_ptr<Kernel> hard_swish_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                          DType dtype, std::uint64_t /*seed*/) {
  return detail::make_pointwise(layer, inputs, dtype,
                                {hard_swish_forward, hard_swish_derivative, /*keeps_input=*/true});
}

}  // namespace

LayerTypeDef hard_swish_type() {
  return {.name = "hard_swish",
          .keys = {},
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_no_keys,
          .shape = same_shape,
          .cost = hard_swish_cost,
          .lower = hard_swish_operations,
          .kernel = hard_swish_kernel};
}

}  // namespace ipusim::models
