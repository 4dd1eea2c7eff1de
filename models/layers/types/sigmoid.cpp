// sigmoid: 1 / (1 + e^-x) elementwise (PyTorch's torch.sigmoid, Keras' sigmoid activation).

#include <cmath>

#include "models/kernels/kernels_internal.hpp"
#include "models/layers/types/type_support.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {
namespace {

// As tanh's: an exponential and a few multiply-adds, each way (backward dy·y·(1 − y)).
constexpr double kSigmoidFlops = 4;

// Backward needs the output: y·(1 − y).
LayerCost sigmoid_cost(const Layer& /*layer*/, const std::vector<Shape>& /*inputs*/,
                       const CostSizes& size) {
  return operations_cost(size.out * size.d);
}

std::vector<Operation> sigmoid_operations(const Layer& /*layer*/,
                                          const std::vector<Shape>& /*inputs*/,
                                          const Shape& output) {
  return {vector_op("sigmoid", OpClass::kNonLinear, double(element_count(output)), kSigmoidFlops)};
}

// Keeps its output, from which backward takes the derivative y·(1 − y).
float sigmoid_forward(float x) {
  return static_cast<float>(detail::logistic(x));
}

double sigmoid_derivative(float y) {
  return y * (1.0f - y);
}

std::unique_ptr<Kernel> sigmoid_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                       DType dtype, std::uint64_t /*seed*/) {
  return detail::make_pointwise(layer, inputs, dtype,
                                {sigmoid_forward, sigmoid_derivative, /*keeps_input=*/false});
}

}  // namespace

LayerTypeDef sigmoid_type() {
  return {.name = "sigmoid",
          .keys = {},
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_no_keys,
          .shape = same_shape,
          .cost = sigmoid_cost,
          .lower = sigmoid_operations,
          .kernel = sigmoid_kernel};
}

}  // namespace ipusim::models
