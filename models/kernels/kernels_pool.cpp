// maxpool2d: the maximum over each window, remembering where it was for the backward pass;
// global_average_pool2d: the mean of each channel over the image.

#include <algorithm>
#include <limits>

#include "models/kernels/kernels_internal.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models::detail {
namespace {

// Max pooling over [H, W, C] samples. Padding ("same") never wins: windows only look at pixels
// inside the image. Ties go to the first pixel in row-major order.
class MaxPool2dKernel final : public Kernel {
 public:
  MaxPool2dKernel(const Layer& layer, const std::vector<Shape>& inputs, DType dtype)
      : Kernel(LayerType::kMaxPool2d, dtype, inputs, output_shape_of(layer, inputs)),
        rows_(window_axis(inputs[0][0], layer.params.pool_h, layer.params.stride_h,
                          layer.params.padding)),
        cols_(window_axis(inputs[0][1], layer.params.pool_w, layer.params.stride_w,
                          layer.params.padding)),
        channels_(inputs[0][2]) {}

  ForwardResult forward(const std::vector<const Tensor*>& inputs,
                        std::span<const Tensor> /*params*/,
                        const ForwardContext& /*context*/) const override {
    IPUSIM_CHECK(inputs.size() == 1 && inputs[0]->sample_shape() == input_shapes()[0]);
    const Tensor& x = *inputs[0];
    Tensor y(with_batch(x.batch(), output_shape()));
    SavedState saved;
    saved.indices.resize(static_cast<std::size_t>(y.elements()));
    const std::int64_t in_per_sample = x.sample_elements();
    const std::int64_t out_per_sample = y.sample_elements();
    for (std::int64_t n = 0; n < x.batch(); ++n) {
      pool_sample(x.data() + n * in_per_sample, y.data() + n * out_per_sample,
                  saved.indices.data() + n * out_per_sample);
    }
    round_to_dtype(y, dtype());
    return {std::move(y), std::move(saved), {}};
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& saved,
                               std::span<const Tensor> /*params*/,
                               std::span<GradientAccumulator> /*gradients*/) const override {
    const std::int64_t batch = output_gradient.batch();
    Tensor dx(with_batch(batch, input_shapes()[0]));
    const std::int64_t in_per_sample = dx.sample_elements();
    const std::int64_t out_per_sample = output_gradient.sample_elements();
    for (std::int64_t n = 0; n < batch; ++n) {
      float* sample = dx.data() + n * in_per_sample;
      for (std::int64_t i = n * out_per_sample; i < (n + 1) * out_per_sample; ++i)
        sample[saved.indices[static_cast<std::size_t>(i)]] += output_gradient[i];
    }
    round_to_dtype(dx, dtype());
    return {std::move(dx)};
  }

 private:
  static Shape output_shape_of(const Layer& layer, const std::vector<Shape>& inputs) {
    IPUSIM_CHECK(inputs.size() == 1 && inputs[0].size() == 3);
    const LayerParams& p = layer.params;
    return {window_axis(inputs[0][0], p.pool_h, p.stride_h, p.padding).out,
            window_axis(inputs[0][1], p.pool_w, p.stride_w, p.padding).out, inputs[0][2]};
  }

  // Pools one sample; `argmax` receives the index of each maximum within the sample.
  void pool_sample(const float* x, float* y, std::int32_t* argmax) const {
    for (std::int64_t oy = 0; oy < rows_.out; ++oy) {
      for (std::int64_t ox = 0; ox < cols_.out; ++ox) {
        for (std::int64_t c = 0; c < channels_; ++c, ++y, ++argmax) {
          float best = -std::numeric_limits<float>::infinity();
          std::int64_t best_index = -1;
          for (std::int64_t ky = 0; ky < rows_.kernel; ++ky) {
            const std::int64_t iy = oy * rows_.stride - rows_.pad_before + ky;
            for (std::int64_t kx = 0; kx < cols_.kernel; ++kx) {
              const std::int64_t ix = ox * cols_.stride - cols_.pad_before + kx;
              if (iy < 0 || iy >= rows_.in || ix < 0 || ix >= cols_.in)
                continue;
              const std::int64_t index = (iy * cols_.in + ix) * channels_ + c;
              if (best_index < 0 || x[index] > best) {
                best = x[index];
                best_index = index;
              }
            }
          }
          *y = best;
          *argmax = static_cast<std::int32_t>(best_index);
        }
      }
    }
  }

  WindowAxis rows_;
  WindowAxis cols_;
  std::int64_t channels_;
};

// The mean over [H, W] of each channel of [H, W, C] samples, giving [C]. Each channel sums in
// double in pixel order, so results do not depend on the channel count. Backward gives every
// pixel the channel's gradient divided by H x W; it needs no saved values.
class GlobalAveragePool2dKernel final : public Kernel {
 public:
  GlobalAveragePool2dKernel(const std::vector<Shape>& inputs, DType dtype)
      : Kernel(LayerType::kGlobalAveragePool2d, dtype, inputs, output_shape_of(inputs)),
        pixels_(inputs[0][0] * inputs[0][1]),
        channels_(inputs[0][2]) {}

  ForwardResult forward(const std::vector<const Tensor*>& inputs,
                        std::span<const Tensor> /*params*/,
                        const ForwardContext& /*context*/) const override {
    IPUSIM_CHECK(inputs.size() == 1 && inputs[0]->sample_shape() == input_shapes()[0]);
    const Tensor& x = *inputs[0];
    Tensor y(with_batch(x.batch(), output_shape()));
    std::vector<double> sums(static_cast<std::size_t>(channels_));
    for (std::int64_t n = 0; n < x.batch(); ++n) {
      std::fill(sums.begin(), sums.end(), 0.0);
      const float* sample = x.data() + n * pixels_ * channels_;
      for (std::int64_t p = 0; p < pixels_; ++p) {
        for (std::int64_t c = 0; c < channels_; ++c)
          sums[static_cast<std::size_t>(c)] += sample[p * channels_ + c];
      }
      for (std::int64_t c = 0; c < channels_; ++c)
        y[n * channels_ + c] =
            static_cast<float>(sums[static_cast<std::size_t>(c)] / double(pixels_));
    }
    round_to_dtype(y, dtype());
    return {std::move(y), {}, {}};
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& /*saved*/,
                               std::span<const Tensor> /*params*/,
                               std::span<GradientAccumulator> /*gradients*/) const override {
    const std::int64_t batch = output_gradient.batch();
    Tensor dx(with_batch(batch, input_shapes()[0]));
    const auto scale = static_cast<float>(1.0 / double(pixels_));
    for (std::int64_t n = 0; n < batch; ++n) {
      float* sample = dx.data() + n * pixels_ * channels_;
      for (std::int64_t p = 0; p < pixels_; ++p) {
        for (std::int64_t c = 0; c < channels_; ++c)
          sample[p * channels_ + c] = output_gradient[n * channels_ + c] * scale;
      }
    }
    round_to_dtype(dx, dtype());
    return {std::move(dx)};
  }

 private:
  static Shape output_shape_of(const std::vector<Shape>& inputs) {
    IPUSIM_CHECK(inputs.size() == 1 && inputs[0].size() == 3);
    return {inputs[0][2]};
  }

  std::int64_t pixels_;
  std::int64_t channels_;
};

}  // namespace

std::unique_ptr<Kernel> make_global_average_pool2d(const std::vector<Shape>& inputs, DType dtype) {
  return std::make_unique<GlobalAveragePool2dKernel>(inputs, dtype);
}

std::unique_ptr<Kernel> make_maxpool2d(const Layer& layer, const std::vector<Shape>& inputs,
                                       DType dtype) {
  return std::make_unique<MaxPool2dKernel>(layer, inputs, dtype);
}

}  // namespace ipusim::models::detail
