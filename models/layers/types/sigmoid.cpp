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
class SigmoidKernel final : public Kernel {
 public:
  SigmoidKernel(const Layer& layer, const std::vector<Shape>& inputs, DType dtype)
      : Kernel(layer.type, dtype, inputs, inputs.at(0)) {
    IPUSIM_CHECK(inputs.size() == 1);
  }

  ForwardResult forward(const std::vector<const Tensor*>& inputs,
                        std::span<const Tensor> /*params*/,
                        const ForwardContext& /*context*/) const override {
    IPUSIM_CHECK(inputs.size() == 1 && inputs[0]->sample_shape() == input_shapes()[0]);
    Tensor y = *inputs[0];
    for (float& v : y.values())
      v = static_cast<float>(detail::logistic(v));
    round_to_dtype(y, dtype());
    SavedState saved;
    saved.dtype = dtype();
    saved.tensors.push_back(y);
    return {std::move(y), std::move(saved), {}};
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& saved,
                               std::span<const Tensor> /*params*/,
                               std::span<GradientAccumulator> /*gradients*/) const override {
    const Tensor& y = saved.tensors.at(0);
    Tensor dx = output_gradient;
    for (std::int64_t i = 0; i < dx.elements(); ++i)
      dx[i] *= y[i] * (1.0f - y[i]);
    round_to_dtype(dx, dtype());
    return {std::move(dx)};
  }
};

std::unique_ptr<Kernel> sigmoid_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                       DType dtype, std::uint64_t /*seed*/) {
  return std::make_unique<SigmoidKernel>(layer, inputs, dtype);
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
