// The layers over a sequence of tokens that ViT and GPT heads need: token_mean and token_select,
// which reduce [S, H...] samples to [H...].

#include <algorithm>

#include "models/kernels/kernels_internal.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models::detail {
namespace {

// One token's shape: a sample's without its first axis.
Shape token_shape(const std::vector<Shape>& inputs) {
  IPUSIM_CHECK(inputs.size() == 1 && inputs[0].size() >= 2);
  return Shape(inputs[0].begin() + 1, inputs[0].end());
}

// The mean of the S tokens of [S, H...] samples: each feature sums its tokens in double, in token
// order. Backward gives every token the gradient over S; it needs no saved values.
class TokenMeanKernel final : public Kernel {
 public:
  TokenMeanKernel(const std::vector<Shape>& inputs, DType dtype)
      : Kernel(LayerType::kTokenMean, dtype, inputs, token_shape(inputs)),
        tokens_(inputs[0][0]),
        width_(element_count(output_shape())) {}

  ForwardResult forward(const std::vector<const Tensor*>& inputs,
                        std::span<const Tensor> /*params*/,
                        const ForwardContext& /*context*/) const override {
    IPUSIM_CHECK(inputs.size() == 1 && inputs[0]->sample_shape() == input_shapes()[0]);
    const Tensor& x = *inputs[0];
    Tensor y(with_batch(x.batch(), output_shape()));
    std::vector<double> sums(static_cast<std::size_t>(width_));
    for (std::int64_t n = 0; n < x.batch(); ++n) {
      std::fill(sums.begin(), sums.end(), 0.0);
      const float* sample = x.data() + n * tokens_ * width_;
      for (std::int64_t t = 0; t < tokens_; ++t) {
        for (std::int64_t f = 0; f < width_; ++f)
          sums[std::size_t(f)] += sample[t * width_ + f];
      }
      for (std::int64_t f = 0; f < width_; ++f)
        y[n * width_ + f] = static_cast<float>(sums[std::size_t(f)] / double(tokens_));
    }
    round_to_dtype(y, dtype());
    return {std::move(y), {}, {}};
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& /*saved*/,
                               std::span<const Tensor> /*params*/,
                               std::span<GradientAccumulator> /*gradients*/) const override {
    const std::int64_t batch = output_gradient.batch();
    Tensor dx(with_batch(batch, input_shapes()[0]));
    for (std::int64_t n = 0; n < batch; ++n) {
      float* sample = dx.data() + n * tokens_ * width_;
      for (std::int64_t t = 0; t < tokens_; ++t) {
        for (std::int64_t f = 0; f < width_; ++f)
          sample[t * width_ + f] =
              static_cast<float>(output_gradient[n * width_ + f] / double(tokens_));
      }
    }
    round_to_dtype(dx, dtype());
    return {std::move(dx)};
  }

 private:
  std::int64_t tokens_;
  std::int64_t width_;  // elements of a token
};

// One token of [S, H...] samples, copied forward; backward scatters its gradient into zeros.
class TokenSelectKernel final : public Kernel {
 public:
  TokenSelectKernel(const Layer& layer, const std::vector<Shape>& inputs, DType dtype)
      : Kernel(LayerType::kTokenSelect, dtype, inputs, token_shape(inputs)),
        tokens_(inputs[0][0]),
        width_(element_count(output_shape())),
        index_(layer.params.index < 0 ? layer.params.index + tokens_ : layer.params.index) {
    IPUSIM_CHECK(index_ >= 0 && index_ < tokens_);
  }

  ForwardResult forward(const std::vector<const Tensor*>& inputs,
                        std::span<const Tensor> /*params*/,
                        const ForwardContext& /*context*/) const override {
    IPUSIM_CHECK(inputs.size() == 1 && inputs[0]->sample_shape() == input_shapes()[0]);
    const Tensor& x = *inputs[0];
    Tensor y(with_batch(x.batch(), output_shape()));
    for (std::int64_t n = 0; n < x.batch(); ++n) {
      const float* token = x.data() + (n * tokens_ + index_) * width_;
      std::copy(token, token + width_, y.data() + n * width_);
    }
    return {std::move(y), {}, {}};
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& /*saved*/,
                               std::span<const Tensor> /*params*/,
                               std::span<GradientAccumulator> /*gradients*/) const override {
    const std::int64_t batch = output_gradient.batch();
    Tensor dx(with_batch(batch, input_shapes()[0]));
    for (std::int64_t n = 0; n < batch; ++n) {
      const float* from = output_gradient.data() + n * width_;
      std::copy(from, from + width_, dx.data() + (n * tokens_ + index_) * width_);
    }
    return {std::move(dx)};
  }

 private:
  std::int64_t tokens_;
  std::int64_t width_;
  std::int64_t index_;  // from 0
};

}  // namespace

std::unique_ptr<Kernel> make_token_mean(const std::vector<Shape>& inputs, DType dtype) {
  return std::make_unique<TokenMeanKernel>(inputs, dtype);
}

std::unique_ptr<Kernel> make_token_select(const Layer& layer, const std::vector<Shape>& inputs,
                                          DType dtype) {
  return std::make_unique<TokenSelectKernel>(layer, inputs, dtype);
}

}  // namespace ipusim::models::detail
