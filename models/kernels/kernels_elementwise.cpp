// Element-wise layers: relu, gelu, tanh, dropout and add.

#include "models/kernels/kernels_internal.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models::detail {
namespace {

void check_single_input(const std::vector<const Tensor*>& inputs, const Kernel& kernel) {
  IPUSIM_CHECK(inputs.size() == 1 && inputs[0]->sample_shape() == kernel.input_shapes()[0]);
}

// A standalone activation. relu and tanh keep their output, gelu its input (what each
// derivative reads).
class ActivationKernel final : public Kernel {
 public:
  ActivationKernel(LayerType type, Activation activation, const std::vector<Shape>& inputs,
                   DType dtype)
      : Kernel(type, dtype, inputs, inputs.at(0)), activation_(activation) {
    IPUSIM_CHECK(inputs.size() == 1);
  }

  ForwardResult forward(const std::vector<const Tensor*>& inputs,
                        std::span<const Tensor> /*params*/,
                        const ForwardContext& /*context*/) const override {
    check_single_input(inputs, *this);
    Tensor y = *inputs[0];
    activate(activation_, y.values());
    round_to_dtype(y, dtype());
    SavedState saved;
    saved.dtype = dtype();
    const bool keeps_input =
        activation_ == Activation::kGelu || activation_ == Activation::kGeluTanh;
    saved.tensors.push_back(keeps_input ? *inputs[0] : y);
    return {std::move(y), std::move(saved), {}};
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& saved,
                               std::span<const Tensor> /*params*/,
                               std::span<GradientAccumulator> /*gradients*/) const override {
    Tensor dx = output_gradient;
    activation_backward(activation_, dx.values(), saved.tensors.at(0).values());
    round_to_dtype(dx, dtype());
    return {std::move(dx)};
  }

 private:
  Activation activation_;
};

// One element-wise rule (Pointwise): sigmoid, swish, relu6.
class PointwiseKernel final : public Kernel {
 public:
  PointwiseKernel(const Layer& layer, const std::vector<Shape>& inputs, DType dtype, Pointwise rule)
      : Kernel(layer.type, dtype, inputs, inputs.at(0)), rule_(rule) {
    IPUSIM_CHECK(inputs.size() == 1);
  }

  ForwardResult forward(const std::vector<const Tensor*>& inputs,
                        std::span<const Tensor> /*params*/,
                        const ForwardContext& /*context*/) const override {
    check_single_input(inputs, *this);
    Tensor y = *inputs[0];
    for (float& v : y.values())
      v = rule_.forward(v);
    round_to_dtype(y, dtype());
    SavedState saved;
    saved.dtype = dtype();
    saved.tensors.push_back(rule_.keeps_input ? *inputs[0] : y);
    return {std::move(y), std::move(saved), {}};
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& saved,
                               std::span<const Tensor> /*params*/,
                               std::span<GradientAccumulator> /*gradients*/) const override {
    const Tensor& kept = saved.tensors.at(0);
    Tensor dx = output_gradient;
    for (std::int64_t i = 0; i < dx.elements(); ++i) {
      const double derivative = rule_.derivative(kept[i]);
      dx[i] = derivative == 0.0 ? 0.0f : static_cast<float>(dx[i] * derivative);
    }
    round_to_dtype(dx, dtype());
    return {std::move(dx)};
  }

 private:
  Pointwise rule_;
};

// Inverted dropout: kept elements are scaled by 1 / (1 - rate) so inference needs no rescale.
// The mask stream is keyed by (layer seed, micro-batch, repeat), never by call order.
class DropoutKernel final : public Kernel {
 public:
  DropoutKernel(const Layer& layer, const std::vector<Shape>& inputs, DType dtype,
                std::uint64_t seed)
      : Kernel(LayerType::kDropout, dtype, inputs, inputs.at(0)),
        rate_(layer.params.rate),
        seed_(derive_seed(seed, layer.id)) {
    IPUSIM_CHECK(inputs.size() == 1 && rate_ >= 0.0 && rate_ < 1.0);
  }

  // Like poprand's dropout, the kernel keeps only the seed of its mask (2 x uint32) and draws
  // the mask again in backward.
  ForwardResult forward(const std::vector<const Tensor*>& inputs,
                        std::span<const Tensor> /*params*/,
                        const ForwardContext& context) const override {
    check_single_input(inputs, *this);
    const std::uint64_t seed = dropout_seed(seed_, context);
    Tensor y = *inputs[0];
    apply_dropout_mask(y.values(), rate_, seed, dtype());
    SavedState saved;
    saved.seeds.push_back(seed_words(seed));
    return {std::move(y), std::move(saved), {}};
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& saved,
                               std::span<const Tensor> /*params*/,
                               std::span<GradientAccumulator> /*gradients*/) const override {
    IPUSIM_CHECK(saved.seeds.size() == 1);
    Tensor dx = output_gradient;
    apply_dropout_mask(dx.values(), rate_, seed_value(saved.seeds[0]), dtype());
    return {std::move(dx)};
  }

 private:
  double rate_;
  std::uint64_t seed_;
};

// The element-wise sum of inputs of one shape, added left to right.
class AddKernel final : public Kernel {
 public:
  AddKernel(const std::vector<Shape>& inputs, DType dtype)
      : Kernel(LayerType::kAdd, dtype, inputs, inputs.at(0)) {
    for (const Shape& shape : inputs)
      IPUSIM_CHECK(shape == inputs[0]);
  }

  ForwardResult forward(const std::vector<const Tensor*>& inputs,
                        std::span<const Tensor> /*params*/,
                        const ForwardContext& /*context*/) const override {
    IPUSIM_CHECK(inputs.size() == input_shapes().size());
    Tensor y = *inputs[0];
    for (std::size_t k = 1; k < inputs.size(); ++k) {
      IPUSIM_CHECK(inputs[k]->shape() == y.shape());
      for (std::int64_t i = 0; i < y.elements(); ++i)
        y[i] += (*inputs[k])[i];
    }
    round_to_dtype(y, dtype());
    return {std::move(y), SavedState{}, {}};
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& /*saved*/,
                               std::span<const Tensor> /*params*/,
                               std::span<GradientAccumulator> /*gradients*/) const override {
    return std::vector<Tensor>(input_shapes().size(), output_gradient);
  }
};

}  // namespace

std::unique_ptr<Kernel> make_relu(const std::vector<Shape>& inputs, DType dtype) {
  return std::make_unique<ActivationKernel>(LayerType::kRelu, Activation::kRelu, inputs, dtype);
}

std::unique_ptr<Kernel> make_gelu(const std::vector<Shape>& inputs, DType dtype, Activation form) {
  return std::make_unique<ActivationKernel>(LayerType::kGelu, form, inputs, dtype);
}

std::unique_ptr<Kernel> make_pointwise(const Layer& layer, const std::vector<Shape>& inputs,
                                       DType dtype, Pointwise rule) {
  return std::make_unique<PointwiseKernel>(layer, inputs, dtype, rule);
}

std::unique_ptr<Kernel> make_tanh(const std::vector<Shape>& inputs, DType dtype) {
  return std::make_unique<ActivationKernel>(LayerType::kTanh, Activation::kTanh, inputs, dtype);
}

std::unique_ptr<Kernel> make_dropout(const Layer& layer, const std::vector<Shape>& inputs,
                                     DType dtype, std::uint64_t seed) {
  return std::make_unique<DropoutKernel>(layer, inputs, dtype, seed);
}

std::unique_ptr<Kernel> make_add(const std::vector<Shape>& inputs, DType dtype) {
  return std::make_unique<AddKernel>(inputs, dtype);
}

}  // namespace ipusim::models::detail
