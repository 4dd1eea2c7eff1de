// swish: x·sigmoid(x) elementwise, also called SiLU (PyTorch's nn.SiLU, Keras' swish): the
// activation of EfficientNet and Conformer.

#include <cmath>

#include "models/kernels/kernels_internal.hpp"
#include "models/layers/types/type_support.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {
namespace {

// sigmoid's four and the multiply by x, each way (backward dy·(s + x·s·(1 − s))).
constexpr double kSwishFlops = 5;

// Backward needs the input.
LayerCost swish_cost(const Layer& /*layer*/, const std::vector<Shape>& /*inputs*/,
                     const CostSizes& size) {
  return operations_cost(size.in * size.d);
}

std::vector<Operation> swish_operations(const Layer& /*layer*/,
                                        const std::vector<Shape>& /*inputs*/, const Shape& output) {
  const double elements = double(element_count(output));
  return {lowered(vector_op("swish", OpClass::kNonLinear, elements, kSwishFlops),
                  VectorLowering::kSwish, elements)};
}

// Keeps its input: the derivative s + x·s·(1 − s) needs x, which the output alone does not give.
float swish_forward(float x) {
  return static_cast<float>(x * detail::logistic(x));
}

double swish_derivative(float x) {
  const double s = detail::logistic(x);
  return s + x * s * (1.0 - s);
}

std::unique_ptr<Kernel> swish_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                     DType dtype, std::uint64_t /*seed*/) {
  return detail::make_pointwise(layer, inputs, dtype,
                                {swish_forward, swish_derivative, /*keeps_input=*/true});
}

}  // namespace

LayerTypeDef swish_type() {
  return {.name = "swish",
          .keys = {},
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_no_keys,
          .shape = same_shape,
          .cost = swish_cost,
          .lower = swish_operations,
          .kernel = swish_kernel};
}

}  // namespace ipusim::models
