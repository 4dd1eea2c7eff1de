// Layers that only move numbers: flatten, reshape and concat. They save nothing.

#include <algorithm>
#include <span>

#include "models/kernels/kernels_internal.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models::detail {
namespace {

// flatten and reshape: the same numbers under another per-sample shape.
class ReshapeKernel final : public Kernel {
 public:
  ReshapeKernel(LayerType type, const std::vector<Shape>& inputs, Shape output, DType dtype)
      : Kernel(type, dtype, inputs, std::move(output)) {
    IPUSIM_CHECK(inputs.size() == 1 &&
                 element_count(inputs[0]) == element_count(this->output_shape()));
  }

  ForwardResult forward(const std::vector<const Tensor*>& inputs,
                        std::span<const Tensor> /*params*/,
                        const ForwardContext& /*context*/) const override {
    IPUSIM_CHECK(inputs.size() == 1 && inputs[0]->sample_shape() == input_shapes()[0]);
    return {inputs[0]->reshaped(with_batch(inputs[0]->batch(), output_shape())), SavedState{}, {}};
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& /*saved*/,
                               std::span<const Tensor> /*params*/,
                               std::span<GradientAccumulator> /*gradients*/) const override {
    return {output_gradient.reshaped(with_batch(output_gradient.batch(), input_shapes()[0]))};
  }
};

// A reshape target may leave one extent as -1, inferred from the element count.
Shape resolve_reshape(const Shape& target, std::int64_t elements) {
  Shape shape = target;
  const auto inferred = std::find(shape.begin(), shape.end(), -1);
  if (inferred != shape.end()) {
    *inferred = 1;
    *inferred = elements / element_count(shape);
  }
  return shape;
}

// A per-sample axis, negative counting from the last; shape inference has checked it.
std::size_t resolve_axis(std::int64_t axis, const Shape& shape) {
  const auto rank = static_cast<std::int64_t>(shape.size());
  const std::int64_t resolved = axis < 0 ? axis + rank : axis;
  IPUSIM_CHECK(resolved >= 0 && resolved < rank);
  return static_cast<std::size_t>(resolved);
}

// Joins inputs along one per-sample axis. Viewing every tensor as [outer, extent x inner],
// where outer is everything before the axis (batch included), makes it a copy of row pieces.
class ConcatKernel final : public Kernel {
 public:
  ConcatKernel(const Layer& layer, const std::vector<Shape>& inputs, DType dtype)
      : Kernel(LayerType::kConcat, dtype, inputs, output_shape_of(layer, inputs)),
        axis_(resolve_axis(layer.params.axis, inputs.at(0))) {}

  ForwardResult forward(const std::vector<const Tensor*>& inputs,
                        std::span<const Tensor> /*params*/,
                        const ForwardContext& /*context*/) const override {
    IPUSIM_CHECK(inputs.size() == input_shapes().size());
    const std::int64_t batch = inputs[0]->batch();
    Tensor y(with_batch(batch, output_shape()));
    const std::int64_t outer = batch * prefix_elements();
    float* out = y.data();
    for (std::int64_t o = 0; o < outer; ++o) {
      for (std::size_t k = 0; k < inputs.size(); ++k) {
        const std::int64_t width = piece_width(k);
        const float* piece = inputs[k]->data() + o * width;
        out = std::copy(piece, piece + width, out);
      }
    }
    return {std::move(y), SavedState{}, {}};
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& /*saved*/,
                               std::span<const Tensor> /*params*/,
                               std::span<GradientAccumulator> /*gradients*/) const override {
    const std::int64_t batch = output_gradient.batch();
    std::vector<Tensor> gradients;
    for (const Shape& shape : input_shapes())
      gradients.emplace_back(with_batch(batch, shape));
    const float* in = output_gradient.data();
    for (std::int64_t o = 0; o < batch * prefix_elements(); ++o) {
      for (std::size_t k = 0; k < gradients.size(); ++k) {
        const std::int64_t width = piece_width(k);
        std::copy(in, in + width, gradients[k].data() + o * width);
        in += width;
      }
    }
    return gradients;
  }

 private:
  static Shape output_shape_of(const Layer& layer, const std::vector<Shape>& inputs) {
    IPUSIM_CHECK(!inputs.empty());
    const std::size_t axis = resolve_axis(layer.params.axis, inputs[0]);
    Shape shape = inputs[0];
    shape[axis] = 0;
    for (const Shape& input : inputs) {
      IPUSIM_CHECK(input.size() == shape.size());
      for (std::size_t d = 0; d < shape.size(); ++d)
        IPUSIM_CHECK(d == axis || input[d] == shape[d]);
      shape[axis] += input[axis];
    }
    return shape;
  }

  std::int64_t prefix_elements() const {
    const Shape& shape = input_shapes()[0];
    return element_count(std::span(shape).first(axis_));
  }

  std::int64_t piece_width(std::size_t input) const {
    const Shape& shape = input_shapes()[input];
    return element_count(std::span(shape).subspan(axis_));
  }

  std::size_t axis_;
};

// Takes `size` entries from `start` along one per-sample axis. Viewing the input as [outer,
// extent, inner] (outer includes the batch), each outer row contributes one contiguous piece.
class SliceKernel final : public Kernel {
 public:
  SliceKernel(const Layer& layer, const std::vector<Shape>& inputs, DType dtype)
      : Kernel(LayerType::kSlice, dtype, inputs, output_shape_of(layer, inputs.at(0))),
        axis_(resolve_axis(layer.params.axis, inputs.at(0))),
        start_(layer.params.slice_start) {}

  ForwardResult forward(const std::vector<const Tensor*>& inputs,
                        std::span<const Tensor> /*params*/,
                        const ForwardContext& /*context*/) const override {
    IPUSIM_CHECK(inputs.size() == 1);
    const Tensor& x = *inputs[0];
    Tensor y(with_batch(x.batch(), output_shape()));
    for (std::int64_t o = 0; o < x.batch() * outer(); ++o) {
      const float* from = x.data() + o * extent() * inner() + start_ * inner();
      std::copy(from, from + piece(), y.data() + o * piece());
    }
    return {std::move(y), SavedState{}, {}};
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& /*saved*/,
                               std::span<const Tensor> /*params*/,
                               std::span<GradientAccumulator> /*gradients*/) const override {
    const std::int64_t batch = output_gradient.batch();
    Tensor dx(with_batch(batch, input_shapes()[0]));
    for (std::int64_t o = 0; o < batch * outer(); ++o) {
      const float* from = output_gradient.data() + o * piece();
      std::copy(from, from + piece(), dx.data() + o * extent() * inner() + start_ * inner());
    }
    return {std::move(dx)};
  }

 private:
  static Shape output_shape_of(const Layer& layer, const Shape& input) {
    Shape shape = input;
    const std::size_t axis = resolve_axis(layer.params.axis, input);
    IPUSIM_CHECK(layer.params.slice_start + layer.params.slice_size <= shape[axis]);
    shape[axis] = layer.params.slice_size;
    return shape;
  }

  std::int64_t outer() const {
    const Shape& shape = input_shapes()[0];
    return element_count(Shape(shape.begin(), shape.begin() + static_cast<std::ptrdiff_t>(axis_)));
  }
  std::int64_t inner() const {
    const Shape& shape = input_shapes()[0];
    return element_count(
        Shape(shape.begin() + static_cast<std::ptrdiff_t>(axis_) + 1, shape.end()));
  }
  std::int64_t extent() const { return input_shapes()[0][axis_]; }
  std::int64_t piece() const { return output_shape()[axis_] * inner(); }

  std::size_t axis_;
  std::int64_t start_;
};

}  // namespace

std::unique_ptr<Kernel> make_slice(const Layer& layer, const std::vector<Shape>& inputs,
                                   DType dtype) {
  return std::make_unique<SliceKernel>(layer, inputs, dtype);
}

std::unique_ptr<Kernel> make_flatten(const std::vector<Shape>& inputs, DType dtype) {
  return std::make_unique<ReshapeKernel>(LayerType::kFlatten, inputs,
                                         Shape{element_count(inputs.at(0))}, dtype);
}

std::unique_ptr<Kernel> make_reshape(const Layer& layer, const std::vector<Shape>& inputs,
                                     DType dtype) {
  return std::make_unique<ReshapeKernel>(
      LayerType::kReshape, inputs, resolve_reshape(layer.params.shape, element_count(inputs.at(0))),
      dtype);
}

std::unique_ptr<Kernel> make_concat(const Layer& layer, const std::vector<Shape>& inputs,
                                    DType dtype) {
  return std::make_unique<ConcatKernel>(layer, inputs, dtype);
}

}  // namespace ipusim::models::detail
