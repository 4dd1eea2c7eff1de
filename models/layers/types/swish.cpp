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
  return {vector_op("swish", OpClass::kNonLinear, double(element_count(output)), kSwishFlops)};
}

// Keeps its input: the derivative s + x·s·(1 − s) needs x, which the output alone does not give.
class SwishKernel final : public Kernel {
 public:
  SwishKernel(const Layer& layer, const std::vector<Shape>& inputs, DType dtype)
      : Kernel(layer.type, dtype, inputs, inputs.at(0)) {
    IPUSIM_CHECK(inputs.size() == 1);
  }

  ForwardResult forward(const std::vector<const Tensor*>& inputs,
                        std::span<const Tensor> /*params*/,
                        const ForwardContext& /*context*/) const override {
    IPUSIM_CHECK(inputs.size() == 1 && inputs[0]->sample_shape() == input_shapes()[0]);
    Tensor y = *inputs[0];
    for (float& v : y.values())
      v = static_cast<float>(v * detail::logistic(v));
    round_to_dtype(y, dtype());
    SavedState saved;
    saved.dtype = dtype();
    saved.tensors.push_back(*inputs[0]);
    return {std::move(y), std::move(saved), {}};
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& saved,
                               std::span<const Tensor> /*params*/,
                               std::span<GradientAccumulator> /*gradients*/) const override {
    const Tensor& x = saved.tensors.at(0);
    Tensor dx = output_gradient;
    for (std::int64_t i = 0; i < dx.elements(); ++i) {
      const double s = detail::logistic(x[i]);
      dx[i] = static_cast<float>(dx[i] * (s + x[i] * s * (1.0 - s)));
    }
    round_to_dtype(dx, dtype());
    return {std::move(dx)};
  }
};

std::unique_ptr<Kernel> swish_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                     DType dtype, std::uint64_t /*seed*/) {
  return std::make_unique<SwishKernel>(layer, inputs, dtype);
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
