// The layers over a sequence of tokens that ViT and GPT models need: token_mean and token_select,
// which reduce [S, H...] samples to [H...]; position_table, which adds a learned tensor of the
// sample's shape; class_token, which prepends a learned token to [S, H].

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

// A parameter's gradient summed over the micro-batch: the first sum.elements() values of each
// sample's `stride`, added into `sum` in sample order, then rounded to `dtype`.
void add_samples(const float* gradient, std::int64_t batch, std::int64_t stride, Tensor& sum,
                 DType dtype) {
  for (std::int64_t n = 0; n < batch; ++n) {
    for (std::int64_t i = 0; i < sum.elements(); ++i)
      sum[i] += gradient[n * stride + i];
  }
  round_to_dtype(sum, dtype);
}

// x + table for samples of any shape, the table of the sample's shape. Backward passes the
// gradient through to x and sums it over the micro-batch for the table; it keeps nothing.
class PositionTableKernel final : public Kernel {
 public:
  PositionTableKernel(const std::vector<Shape>& inputs, DType dtype)
      : Kernel(LayerType::kPositionTable, dtype, inputs, inputs.at(0)) {
    IPUSIM_CHECK(inputs.size() == 1);
  }

  std::vector<ParameterSpec> parameters() const override {
    const std::int64_t width = output_shape().back();
    return {{ParameterSpec::Role::kTable, output_shape(), width, width}};
  }

  ForwardResult forward(const std::vector<const Tensor*>& inputs, std::span<const Tensor> params,
                        const ForwardContext& /*context*/) const override {
    IPUSIM_CHECK(inputs.size() == 1 && inputs[0]->sample_shape() == input_shapes()[0]);
    Tensor y = *inputs[0];
    const std::int64_t per_sample = y.sample_elements();
    for (std::int64_t i = 0; i < y.elements(); ++i)
      y[i] += params[0][i % per_sample];
    round_to_dtype(y, dtype());
    return {std::move(y), {}, {}};
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& /*saved*/,
                               std::span<const Tensor> /*params*/,
                               std::span<GradientAccumulator> gradients) const override {
    Tensor table(output_shape());
    add_samples(output_gradient.data(), output_gradient.batch(), table.elements(), table, dtype());
    gradients[0].add(table.values());
    return {output_gradient};
  }
};

// [S, H] samples with a learned [H] token before their first: [S + 1, H]. Backward gives x the
// gradient of its own rows and the token the sum over the micro-batch of the first row's; it
// keeps nothing.
class ClassTokenKernel final : public Kernel {
 public:
  ClassTokenKernel(const std::vector<Shape>& inputs, DType dtype)
      : Kernel(LayerType::kClassToken, dtype, inputs, {inputs.at(0).at(0) + 1, inputs[0].at(1)}),
        width_(inputs[0][1]) {
    IPUSIM_CHECK(inputs.size() == 1 && inputs[0].size() == 2);
  }

  std::vector<ParameterSpec> parameters() const override {
    return {{ParameterSpec::Role::kToken, {width_}, width_, width_}};
  }

  ForwardResult forward(const std::vector<const Tensor*>& inputs, std::span<const Tensor> params,
                        const ForwardContext& /*context*/) const override {
    IPUSIM_CHECK(inputs.size() == 1 && inputs[0]->sample_shape() == input_shapes()[0]);
    const Tensor& x = *inputs[0];
    Tensor y(with_batch(x.batch(), output_shape()));
    const std::int64_t in = x.sample_elements();
    for (std::int64_t n = 0; n < x.batch(); ++n) {
      float* out = y.data() + n * (in + width_);
      std::copy(params[0].data(), params[0].data() + width_, out);
      std::copy(x.data() + n * in, x.data() + (n + 1) * in, out + width_);
    }
    return {std::move(y), {}, {}};
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& /*saved*/,
                               std::span<const Tensor> /*params*/,
                               std::span<GradientAccumulator> gradients) const override {
    const std::int64_t batch = output_gradient.batch();
    Tensor dx(with_batch(batch, input_shapes()[0]));
    const std::int64_t in = dx.sample_elements();
    for (std::int64_t n = 0; n < batch; ++n) {
      const float* rows = output_gradient.data() + n * (in + width_) + width_;
      std::copy(rows, rows + in, dx.data() + n * in);
    }
    Tensor token({width_});
    add_samples(output_gradient.data(), batch, in + width_, token, dtype());
    gradients[0].add(token.values());
    return {std::move(dx)};
  }

 private:
  std::int64_t width_;
};

}  // namespace

std::unique_ptr<Kernel> make_position_table(const std::vector<Shape>& inputs, DType dtype) {
  return std::make_unique<PositionTableKernel>(inputs, dtype);
}

std::unique_ptr<Kernel> make_class_token(const std::vector<Shape>& inputs, DType dtype) {
  return std::make_unique<ClassTokenKernel>(inputs, dtype);
}

std::unique_ptr<Kernel> make_token_mean(const std::vector<Shape>& inputs, DType dtype) {
  return std::make_unique<TokenMeanKernel>(inputs, dtype);
}

std::unique_ptr<Kernel> make_token_select(const Layer& layer, const std::vector<Shape>& inputs,
                                          DType dtype) {
  return std::make_unique<TokenSelectKernel>(layer, inputs, dtype);
}

}  // namespace ipusim::models::detail
