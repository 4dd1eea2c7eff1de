// multiply: the elementwise product of two inputs, the second broadcast over the first (a
// squeeze-and-excite's channel gate, [H, W, C] x [1, 1, C] or [C]; a gate of the input's shape).
//
// The broadcast rule is numpy's, one way, on per-sample shapes: aligned at their last axes, each
// axis of the second equals the first's or is 1, and the second has no more axes than the first
// (missing leading axes count as 1). The output has the first's shape.

#include <vector>

#include "models/layers/types/type_support.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {
namespace {

Shape multiply_shape(const Layer& layer, const std::vector<InputShape>& inputs) {
  if (!broadcasts_to(inputs[1].shape, inputs[0].shape)) {
    fail_layer(layer,
               "needs its second input to broadcast to its first (numpy's rule on per-sample "
               "shapes: aligned at the last axis, each axis of the second equal to the first's "
               "or 1, and no more axes), but " +
                   input_text(inputs[0]) + " and " + input_text(inputs[1]));
  }
  return inputs[0].shape;
}

// Backward needs both inputs: each one's gradient is the output's times the other.
LayerCost multiply_cost(const Layer& /*layer*/, const std::vector<Shape>& inputs,
                        const CostSizes& size) {
  return operations_cost((size.in + element_count(inputs.at(1))) * size.d);
}

// A multiply an element forward; backward a multiply an element for each input's gradient and,
// for the second, an add for each element summed into one of its own (E − B adds).
std::vector<Operation> multiply_operations(const Layer& /*layer*/, const std::vector<Shape>& inputs,
                                           const Shape& output) {
  const double out = double(element_count(output));
  const double second = double(element_count(inputs.at(1)));
  const bool broadcast = second != out;
  Operation op = vector_op("multiply", OpClass::kElementwise, out, 1, 1, broadcast ? 2 : 1);
  op.backward.flops = 3 * out - second;
  return {op};
}

// For each element of the first input (per sample), the element of the second it is multiplied
// by: the second's strides, 0 along its axes of size 1.
std::vector<std::int64_t> multiply_second_index(const Shape& first, const Shape& second) {
  const std::size_t rank = first.size();
  std::vector<std::int64_t> strides(rank, 0);
  std::int64_t stride = 1;
  for (std::size_t k = second.size(); k-- > 0;) {
    strides[rank - second.size() + k] = second[k] == 1 ? 0 : stride;
    stride *= second[k];
  }
  std::vector<std::int64_t> index(static_cast<std::size_t>(element_count(first)));
  std::vector<std::int64_t> at(rank, 0);
  std::int64_t offset = 0;
  for (std::int64_t& out : index) {
    out = offset;
    for (std::size_t k = rank; k-- > 0;) {  // the next element, last axis fastest
      offset += strides[k];
      if (++at[k] < first[k])
        break;
      offset -= strides[k] * first[k];
      at[k] = 0;
    }
  }
  return index;
}

// Keeps both inputs. The second's gradient sums, in double and in element order, the products
// that each of its elements took part in.
class MultiplyKernel final : public Kernel {
 public:
  MultiplyKernel(const Layer& layer, const std::vector<Shape>& inputs, DType dtype)
      : Kernel(layer.type, dtype, inputs, inputs.at(0)),
        second_index_(multiply_second_index(inputs.at(0), inputs.at(1))),
        second_size_(element_count(inputs.at(1))) {
    IPUSIM_CHECK(inputs.size() == 2 && broadcasts_to(inputs[1], inputs[0]));
  }

  ForwardResult forward(const std::vector<const Tensor*>& inputs,
                        std::span<const Tensor> /*params*/,
                        const ForwardContext& /*context*/) const override {
    IPUSIM_CHECK(inputs.size() == 2 && inputs[0]->sample_shape() == input_shapes()[0] &&
                 inputs[1]->sample_shape() == input_shapes()[1]);
    const Tensor& a = *inputs[0];
    const Tensor& b = *inputs[1];
    Tensor y(a.shape());
    const auto size = static_cast<std::int64_t>(second_index_.size());
    for (std::int64_t n = 0; n < a.batch(); ++n) {
      for (std::int64_t i = 0; i < size; ++i)
        y[n * size + i] = a[n * size + i] * b[n * second_size_ + second(i)];
    }
    round_to_dtype(y, dtype());
    SavedState saved;
    saved.dtype = dtype();
    saved.tensors = {a, b};
    return {std::move(y), std::move(saved), {}};
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& saved,
                               std::span<const Tensor> /*params*/,
                               std::span<GradientAccumulator> /*gradients*/) const override {
    const Tensor& a = saved.tensors.at(0);
    const Tensor& b = saved.tensors.at(1);
    Tensor da(a.shape());
    Tensor db(b.shape());
    const auto size = static_cast<std::int64_t>(second_index_.size());
    std::vector<double> sums(static_cast<std::size_t>(second_size_));
    for (std::int64_t n = 0; n < a.batch(); ++n) {
      std::fill(sums.begin(), sums.end(), 0.0);
      for (std::int64_t i = 0; i < size; ++i) {
        const float dy = output_gradient[n * size + i];
        da[n * size + i] = dy * b[n * second_size_ + second(i)];
        sums[static_cast<std::size_t>(second(i))] += double(dy) * a[n * size + i];
      }
      for (std::int64_t j = 0; j < second_size_; ++j)
        db[n * second_size_ + j] = static_cast<float>(sums[static_cast<std::size_t>(j)]);
    }
    round_to_dtype(da, dtype());
    round_to_dtype(db, dtype());
    return {std::move(da), std::move(db)};
  }

 private:
  std::int64_t second(std::int64_t i) const { return second_index_[static_cast<std::size_t>(i)]; }

  std::vector<std::int64_t> second_index_;
  std::int64_t second_size_;
};

std::unique_ptr<Kernel> multiply_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                        DType dtype, std::uint64_t /*seed*/) {
  return std::make_unique<MultiplyKernel>(layer, inputs, dtype);
}

}  // namespace

LayerTypeDef multiply_type() {
  return {.name = "multiply",
          .keys = {},
          .inputs = LayerInputs::kTwo,
          .view = false,
          .read = read_no_keys,
          .shape = multiply_shape,
          .cost = multiply_cost,
          .lower = multiply_operations,
          .kernel = multiply_kernel};
}

}  // namespace ipusim::models
