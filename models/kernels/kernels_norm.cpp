// Normalisation over rows: layer_norm, batch_norm and softmax, with the row helpers the
// transformer kernels share.

#include <algorithm>
#include <cmath>

#include "models/kernels/kernels_internal.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models::detail {
namespace {

// The end of a norm's backward: its gradients rounded to the dtype, the scale's and the bias's
// added to their accumulators, the input gradient returned.
std::vector<Tensor> finish_backward(Tensor dx, Tensor& dgamma, Tensor& dbeta, DType dtype,
                                    std::span<GradientAccumulator> gradients) {
  round_to_dtype(dx, dtype);
  round_to_dtype(dgamma, dtype);
  round_to_dtype(dbeta, dtype);
  gradients[0].add(dgamma.values());
  gradients[1].add(dbeta.values());
  return {std::move(dx)};
}

// The mean and 1 / sqrt(variance + epsilon) of `count` values `stride` apart, in double and in
// element order; the variance is the biased one (divided by count).
struct Moments {
  double mean = 0;
  double variance = 0;
  double inverse_deviation = 0;
};

Moments moments(const float* x, std::int64_t count, std::int64_t stride, double epsilon) {
  Moments m;
  for (std::int64_t i = 0; i < count; ++i)
    m.mean += x[i * stride];
  m.mean /= static_cast<double>(count);
  for (std::int64_t i = 0; i < count; ++i) {
    const double centred = x[i * stride] - m.mean;
    m.variance += centred * centred;
  }
  m.variance /= static_cast<double>(count);
  m.inverse_deviation = 1.0 / std::sqrt(m.variance + epsilon);
  return m;
}

// The backward of x̂ = (x - mean) / deviation over `count` values `stride` apart, given
// gh = dy·gamma: dx = (gh - mean(gh) - x̂ mean(gh x̂)) / deviation.
void normalized_backward(const float* x, const float* dy, float gamma, const Moments& m,
                         std::int64_t count, std::int64_t stride, float* dx) {
  double sum = 0;
  double sum_x_hat = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    const double gh = static_cast<double>(dy[i * stride]) * gamma;
    sum += gh;
    sum_x_hat += gh * (x[i * stride] - m.mean) * m.inverse_deviation;
  }
  const double n = static_cast<double>(count);
  for (std::int64_t i = 0; i < count; ++i) {
    const double x_hat = (x[i * stride] - m.mean) * m.inverse_deviation;
    const double gh = static_cast<double>(dy[i * stride]) * gamma;
    dx[i * stride] =
        static_cast<float>(m.inverse_deviation * (gh - sum / n - x_hat * sum_x_hat / n));
  }
}

// layer_norm over the last axis, scale (gamma, ones) and bias (beta, zeros) per feature. Keeps
// its input.
class LayerNormKernel final : public Kernel {
 public:
  LayerNormKernel(const Layer& layer, const std::vector<Shape>& inputs, DType dtype)
      : Kernel(LayerType::kLayerNorm, dtype, inputs, inputs.at(0)),
        width_(inputs.at(0).back()),
        epsilon_(layer.params.epsilon) {
    IPUSIM_CHECK(inputs.size() == 1 && epsilon_ > 0);
  }

  std::vector<ParameterSpec> parameters() const override {
    return {{ParameterSpec::Role::kScale, {width_}, width_, width_},
            {ParameterSpec::Role::kBias, {width_}, width_, width_}};
  }

  ForwardResult forward(const std::vector<const Tensor*>& inputs, std::span<const Tensor> params,
                        const ForwardContext& /*context*/) const override {
    IPUSIM_CHECK(inputs.size() == 1 && inputs[0]->sample_shape() == input_shapes()[0]);
    const Tensor& x = *inputs[0];
    Tensor y(x.shape());
    layer_norm_forward(x.data(), x.elements() / width_, width_, params[0].data(), params[1].data(),
                       epsilon_, y.data());
    round_to_dtype(y, dtype());
    SavedState saved;
    saved.dtype = dtype();
    saved.tensors.push_back(x);
    return {std::move(y), std::move(saved), {}};
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& saved,
                               std::span<const Tensor> params,
                               std::span<GradientAccumulator> gradients) const override {
    const Tensor& x = saved.tensors.at(0);
    Tensor dx(x.shape());
    Tensor dgamma({width_});
    Tensor dbeta({width_});
    layer_norm_backward(x.data(), output_gradient.data(), x.elements() / width_, width_,
                        params[0].data(), epsilon_, dx.data(), dgamma.data(), dbeta.data());
    return finish_backward(std::move(dx), dgamma, dbeta, dtype(), gradients);
  }

 private:
  std::int64_t width_;
  double epsilon_;
};

// batch_norm in training mode: each channel (the last axis) is normalised with the mean and
// variance over the micro-batch and every other axis, then scaled and shifted. The forward
// returns those statistics; the running ones follow Keras: running = momentum x running +
// (1 - momentum) x batch, with the batch's biased variance, rounded to the dtype. Inference
// normalises with the running statistics.
class BatchNormKernel final : public Kernel {
 public:
  BatchNormKernel(const Layer& layer, const std::vector<Shape>& inputs, DType dtype)
      : Kernel(LayerType::kBatchNorm, dtype, inputs, inputs.at(0)),
        channels_(inputs.at(0).back()),
        epsilon_(layer.params.epsilon),
        momentum_(layer.params.momentum) {
    IPUSIM_CHECK(inputs.size() == 1 && epsilon_ > 0);
  }

  std::vector<ParameterSpec> parameters() const override {
    return {{ParameterSpec::Role::kScale, {channels_}, channels_, channels_},
            {ParameterSpec::Role::kBias, {channels_}, channels_, channels_}};
  }

  std::vector<Tensor> initial_running_statistics() const override {
    return {Tensor({channels_}, 0.0f), Tensor({channels_}, 1.0f)};
  }

  void update_running_statistics(std::span<Tensor> running,
                                 std::span<const Tensor> statistics) const override {
    IPUSIM_CHECK(running.size() == 2 && statistics.size() == 2);
    for (std::size_t k = 0; k < 2; ++k) {
      for (std::int64_t c = 0; c < channels_; ++c) {
        running[k][c] =
            static_cast<float>(momentum_ * running[k][c] + (1.0 - momentum_) * statistics[k][c]);
      }
      round_to_dtype(running[k], dtype());
    }
  }

  ForwardResult forward(const std::vector<const Tensor*>& inputs, std::span<const Tensor> params,
                        const ForwardContext& context) const override {
    IPUSIM_CHECK(inputs.size() == 1 && inputs[0]->sample_shape() == input_shapes()[0]);
    const Tensor& x = *inputs[0];
    const std::int64_t rows = x.elements() / channels_;
    Tensor y(x.shape());
    ForwardResult result;
    result.statistics = {Tensor({channels_}), Tensor({channels_})};
    for (std::int64_t c = 0; c < channels_; ++c) {
      Moments m = moments(x.data() + c, rows, channels_, epsilon_);
      if (context.inference) {
        IPUSIM_CHECK(context.running.size() == 2);
        m = {context.running[0][c], context.running[1][c],
             1.0 / std::sqrt(double(context.running[1][c]) + epsilon_)};
      }
      result.statistics[0][c] = static_cast<float>(m.mean);
      result.statistics[1][c] = static_cast<float>(m.variance);
      for (std::int64_t r = 0; r < rows; ++r) {
        const double x_hat = (x[r * channels_ + c] - m.mean) * m.inverse_deviation;
        y[r * channels_ + c] = static_cast<float>(x_hat * params[0][c] + params[1][c]);
      }
    }
    round_to_dtype(y, dtype());
    result.output = std::move(y);
    result.saved.dtype = dtype();
    result.saved.tensors.push_back(x);
    return result;
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& saved,
                               std::span<const Tensor> params,
                               std::span<GradientAccumulator> gradients) const override {
    const Tensor& x = saved.tensors.at(0);
    const std::int64_t rows = x.elements() / channels_;
    Tensor dx(x.shape());
    Tensor dgamma({channels_});
    Tensor dbeta({channels_});
    for (std::int64_t c = 0; c < channels_; ++c) {
      const Moments m = moments(x.data() + c, rows, channels_, epsilon_);
      normalized_backward(x.data() + c, output_gradient.data() + c, params[0][c], m, rows,
                          channels_, dx.data() + c);
      double scale_sum = 0;
      double bias_sum = 0;
      for (std::int64_t r = 0; r < rows; ++r) {
        const double dy = output_gradient[r * channels_ + c];
        scale_sum += dy * (x[r * channels_ + c] - m.mean) * m.inverse_deviation;
        bias_sum += dy;
      }
      dgamma[c] = static_cast<float>(scale_sum);
      dbeta[c] = static_cast<float>(bias_sum);
    }
    return finish_backward(std::move(dx), dgamma, dbeta, dtype(), gradients);
  }

 private:
  std::int64_t channels_;
  double epsilon_;
  double momentum_;
};

// softmax over the last axis; keeps its output.
class SoftmaxKernel final : public Kernel {
 public:
  SoftmaxKernel(const std::vector<Shape>& inputs, DType dtype)
      : Kernel(LayerType::kSoftmax, dtype, inputs, inputs.at(0)), width_(inputs.at(0).back()) {
    IPUSIM_CHECK(inputs.size() == 1);
  }

  ForwardResult forward(const std::vector<const Tensor*>& inputs,
                        std::span<const Tensor> /*params*/,
                        const ForwardContext& /*context*/) const override {
    IPUSIM_CHECK(inputs.size() == 1 && inputs[0]->sample_shape() == input_shapes()[0]);
    Tensor y(inputs[0]->shape());
    softmax_rows(inputs[0]->data(), y.elements() / width_, width_, y.data());
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
    Tensor dx(y.shape());
    softmax_rows_backward(y.data(), output_gradient.data(), y.elements() / width_, width_,
                          dx.data());
    round_to_dtype(dx, dtype());
    return {std::move(dx)};
  }

 private:
  std::int64_t width_;
};

}  // namespace

void layer_norm_forward(const float* x, std::int64_t rows, std::int64_t width, const float* gamma,
                        const float* beta, double epsilon, float* y) {
  for (std::int64_t r = 0; r < rows; ++r, x += width, y += width) {
    const Moments m = moments(x, width, 1, epsilon);
    for (std::int64_t j = 0; j < width; ++j)
      y[j] = static_cast<float>((x[j] - m.mean) * m.inverse_deviation * gamma[j] + beta[j]);
  }
}

void layer_norm_backward(const float* x, const float* dy, std::int64_t rows, std::int64_t width,
                         const float* gamma, double epsilon, float* dx, float* dgamma,
                         float* dbeta) {
  std::vector<float> gh(static_cast<std::size_t>(width));
  for (std::int64_t r = 0; r < rows; ++r, x += width, dy += width, dx += width) {
    const Moments m = moments(x, width, 1, epsilon);
    for (std::int64_t j = 0; j < width; ++j) {
      gh[static_cast<std::size_t>(j)] = dy[j] * gamma[j];
      dgamma[j] += static_cast<float>(dy[j] * (x[j] - m.mean) * m.inverse_deviation);
      dbeta[j] += dy[j];
    }
    normalized_backward(x, gh.data(), 1.0f, m, width, 1, dx);
  }
}

void softmax_rows(const float* x, std::int64_t rows, std::int64_t width, float* y) {
  for (std::int64_t r = 0; r < rows; ++r, x += width, y += width) {
    const float max = *std::max_element(x, x + width);
    double sum = 0.0;
    for (std::int64_t j = 0; j < width; ++j)
      sum += std::exp(static_cast<double>(x[j]) - max);
    for (std::int64_t j = 0; j < width; ++j)
      y[j] = static_cast<float>(std::exp(static_cast<double>(x[j]) - max) / sum);
  }
}

void softmax_rows_backward(const float* y, const float* dy, std::int64_t rows, std::int64_t width,
                           float* dx) {
  for (std::int64_t r = 0; r < rows; ++r, y += width, dy += width, dx += width) {
    double dot = 0.0;
    for (std::int64_t j = 0; j < width; ++j)
      dot += static_cast<double>(dy[j]) * y[j];
    for (std::int64_t j = 0; j < width; ++j)
      dx[j] = static_cast<float>(y[j] * (dy[j] - dot));
  }
}

std::unique_ptr<Kernel> make_softmax(const std::vector<Shape>& inputs, DType dtype) {
  return std::make_unique<SoftmaxKernel>(inputs, dtype);
}

std::unique_ptr<Kernel> make_layer_norm(const Layer& layer, const std::vector<Shape>& inputs,
                                        DType dtype) {
  return std::make_unique<LayerNormKernel>(layer, inputs, dtype);
}

std::unique_ptr<Kernel> make_batch_norm(const Layer& layer, const std::vector<Shape>& inputs,
                                        DType dtype) {
  return std::make_unique<BatchNormKernel>(layer, inputs, dtype);
}

}  // namespace ipusim::models::detail
