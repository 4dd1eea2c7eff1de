// relu6: min(max(x, 0), 6) elementwise (PyTorch's ReLU6, exported as ONNX's Clip(x, 0, 6);
// MobileNetV2's activation).

#include <algorithm>

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
class Relu6Kernel final : public Kernel {
 public:
  Relu6Kernel(const Layer& layer, const std::vector<Shape>& inputs, DType dtype)
      : Kernel(layer.type, dtype, inputs, inputs.at(0)) {
    IPUSIM_CHECK(inputs.size() == 1);
  }

  ForwardResult forward(const std::vector<const Tensor*>& inputs,
                        std::span<const Tensor> /*params*/,
                        const ForwardContext& /*context*/) const override {
    IPUSIM_CHECK(inputs.size() == 1 && inputs[0]->sample_shape() == input_shapes()[0]);
    Tensor y = *inputs[0];
    for (float& v : y.values())
      v = std::clamp(v, 0.0f, kRelu6Max);
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
    for (std::int64_t i = 0; i < dx.elements(); ++i) {
      if (!(y[i] > 0.0f && y[i] < kRelu6Max))
        dx[i] = 0.0f;
    }
    return {std::move(dx)};
  }
};

std::unique_ptr<Kernel> relu6_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                     DType dtype, std::uint64_t /*seed*/) {
  return std::make_unique<Relu6Kernel>(layer, inputs, dtype);
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
