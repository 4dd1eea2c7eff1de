// softmax_cross_entropy: the loss layer, a mean over rows of logits, with integer labels.
// A label below 0 marks a row with no target (an unmasked token), which adds nothing.

#include <algorithm>
#include <cmath>

#include "models/kernels/kernels_internal.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models::detail {
namespace {

// Softmax over the last axis (the classes) and the cross-entropy against one integer label per
// row of logits: one per sample for [classes] samples, as Fashion-MNIST has, or one per token
// for [sequence, classes] ones (masked-language modelling). The output is the mean loss over the
// rows with a target in the micro-batch, shape {1}; the gradient of such a row's logits is
// (softmax - one_hot) x loss_gradient / targets, and zero for a row without one.
class SoftmaxCrossEntropyKernel final : public Kernel {
 public:
  SoftmaxCrossEntropyKernel(const std::vector<Shape>& inputs, DType dtype)
      : Kernel(LayerType::kSoftmaxCrossEntropy, dtype, inputs, Shape{}) {
    IPUSIM_CHECK(inputs.size() == 1 && !inputs[0].empty() && inputs[0].back() > 0);
  }

  ForwardResult forward(const std::vector<const Tensor*>& inputs,
                        std::span<const Tensor> /*params*/,
                        const ForwardContext& context) const override {
    IPUSIM_CHECK(inputs.size() == 1 && inputs[0]->sample_shape() == input_shapes()[0]);
    const Tensor& logits = *inputs[0];
    const std::int64_t rows = logits.elements() / classes();
    IPUSIM_CHECK(static_cast<std::int64_t>(context.labels.size()) == rows);
    SavedState saved;
    saved.dtype = dtype();
    saved.tensors.emplace_back(logits.shape());
    double total = 0.0;
    std::int64_t targets = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
      const int label = context.labels[static_cast<std::size_t>(r)];
      IPUSIM_CHECK(label < classes());
      saved.indices.push_back(label);
      if (label < 0)
        continue;
      total += softmax_row(logits.data() + r * classes(), label,
                           saved.tensors[0].data() + r * classes());
      ++targets;
    }
    IPUSIM_CHECK(targets > 0);
    Tensor loss({1}, static_cast<float>(total / static_cast<double>(targets)));
    round_to_dtype(loss, dtype());
    return {std::move(loss), std::move(saved), {}};
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& saved,
                               std::span<const Tensor> /*params*/,
                               std::span<GradientAccumulator> /*gradients*/) const override {
    IPUSIM_CHECK(output_gradient.elements() == 1);
    Tensor dx = saved.tensors.at(0);
    const auto targets = std::count_if(saved.indices.begin(), saved.indices.end(),
                                       [](std::int64_t label) { return label >= 0; });
    const auto scale = static_cast<float>(output_gradient[0] / static_cast<double>(targets));
    for (std::size_t r = 0; r < saved.indices.size(); ++r) {
      if (saved.indices[r] >= 0)
        dx[static_cast<std::int64_t>(r) * classes() + saved.indices[r]] -= 1.0f;
    }
    for (float& value : dx.values())
      value *= scale;
    round_to_dtype(dx, dtype());
    return {std::move(dx)};
  }

 private:
  std::int64_t classes() const { return input_shapes()[0].back(); }

  // Writes the softmax of one row and returns its loss, log(sum exp(x - max)) + max - x[label],
  // which stays finite for any logits.
  double softmax_row(const float* x, int label, float* probabilities) const {
    const float max = *std::max_element(x, x + classes());
    double sum = 0.0;
    for (std::int64_t c = 0; c < classes(); ++c)
      sum += std::exp(static_cast<double>(x[c]) - max);
    for (std::int64_t c = 0; c < classes(); ++c)
      probabilities[c] = static_cast<float>(std::exp(static_cast<double>(x[c]) - max) / sum);
    return std::log(sum) + max - x[label];
  }
};

}  // namespace

std::unique_ptr<Kernel> make_softmax_cross_entropy(const std::vector<Shape>& inputs, DType dtype) {
  return std::make_unique<SoftmaxCrossEntropyKernel>(inputs, dtype);
}

}  // namespace ipusim::models::detail
