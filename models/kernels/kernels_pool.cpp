// maxpool2d: the maximum over each window, remembering where it was for the backward pass;
// avgpool2d: the mean of each window; global_average_pool2d: the mean of each channel over the
// image.

#include <algorithm>
#include <limits>

#include "models/kernels/kernels_internal.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models::detail {
namespace {

Shape pooled_shape(const Layer& layer, const std::vector<Shape>& inputs) {
  IPUSIM_CHECK(inputs.size() == 1 && inputs[0].size() == 3);
  return {layer_window(layer, ImageAxis::kHeight, inputs[0][0]).out,
          layer_window(layer, ImageAxis::kWidth, inputs[0][1]).out, inputs[0][2]};
}

// Max pooling over [H, W, C] samples. Padding never wins: windows only look at pixels inside the
// image (a pool's pads are at most half its window, so each window holds one). Ties go to the
// first pixel in row-major order.
class MaxPool2dKernel final : public Kernel {
 public:
  MaxPool2dKernel(const Layer& layer, const std::vector<Shape>& inputs, DType dtype)
      : Kernel(LayerType::kMaxPool2d, dtype, inputs, pooled_shape(layer, inputs)),
        rows_(layer_window(layer, ImageAxis::kHeight, inputs[0][0])),
        cols_(layer_window(layer, ImageAxis::kWidth, inputs[0][1])),
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
          IPUSIM_CHECK(best_index >= 0);
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

// One window along one axis of an average pool: the pixels it covers inside the image
// [first, last), and how many it counts towards the divisor.
struct PoolSpan {
  std::int64_t first = 0;
  std::int64_t last = 0;
  std::int64_t counted = 0;
};

// PyTorch's AvgPool2d (aten/src/ATen/native/cpu/AvgPoolKernel.cpp): with count_include_pad a
// window counts the padding it covers, clipped to the padded input (a ceil_mode window that runs
// past it counts only up to its end); without, the pixels inside the image alone.
std::vector<PoolSpan> pool_spans(const WindowAxis& axis, bool count_include_pad) {
  std::vector<PoolSpan> spans;
  for (std::int64_t o = 0; o < axis.out; ++o) {
    const std::int64_t start = o * axis.stride - axis.pad_before;
    const std::int64_t end = std::min(start + axis.kernel, axis.in + axis.pad_after);
    PoolSpan span{std::max<std::int64_t>(start, 0), std::min(end, axis.in), 0};
    span.counted = count_include_pad ? end - start : span.last - span.first;
    IPUSIM_CHECK(span.last > span.first);
    spans.push_back(span);
  }
  return spans;
}

// Average pooling over [H, W, C] samples: each window's sum (in double, pixel by pixel in
// row-major order) divided by the count pool_spans gives. Backward gives each pixel of a window
// the window's gradient over that count; it needs only the shapes, so nothing is kept.
class AvgPool2dKernel final : public Kernel {
 public:
  AvgPool2dKernel(const Layer& layer, const std::vector<Shape>& inputs, DType dtype)
      : Kernel(LayerType::kAvgPool2d, dtype, inputs, pooled_shape(layer, inputs)),
        rows_(pool_spans(layer_window(layer, ImageAxis::kHeight, inputs[0][0]),
                         layer.params.count_include_pad)),
        cols_(pool_spans(layer_window(layer, ImageAxis::kWidth, inputs[0][1]),
                         layer.params.count_include_pad)),
        width_(inputs[0][1]),
        channels_(inputs[0][2]) {}

  ForwardResult forward(const std::vector<const Tensor*>& inputs,
                        std::span<const Tensor> /*params*/,
                        const ForwardContext& /*context*/) const override {
    IPUSIM_CHECK(inputs.size() == 1 && inputs[0]->sample_shape() == input_shapes()[0]);
    const Tensor& x = *inputs[0];
    Tensor y(with_batch(x.batch(), output_shape()));
    std::vector<double> sums(static_cast<std::size_t>(channels_));
    float* out = y.data();
    for (std::int64_t n = 0; n < x.batch(); ++n) {
      const float* sample = x.data() + n * x.sample_elements();
      for (const PoolSpan& row : rows_) {
        for (const PoolSpan& col : cols_) {
          std::fill(sums.begin(), sums.end(), 0.0);
          for_each_pixel(row, col, [&](std::int64_t pixel) {
            for (std::int64_t c = 0; c < channels_; ++c)
              sums[std::size_t(c)] += sample[pixel + c];
          });
          const double count = double(row.counted * col.counted);
          for (std::int64_t c = 0; c < channels_; ++c)
            *out++ = static_cast<float>(sums[std::size_t(c)] / count);
        }
      }
    }
    round_to_dtype(y, dtype());
    return {std::move(y), {}, {}};
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& /*saved*/,
                               std::span<const Tensor> /*params*/,
                               std::span<GradientAccumulator> /*gradients*/) const override {
    const std::int64_t batch = output_gradient.batch();
    Tensor dx(with_batch(batch, input_shapes()[0]));
    const float* dy = output_gradient.data();
    for (std::int64_t n = 0; n < batch; ++n) {
      float* sample = dx.data() + n * dx.sample_elements();
      for (const PoolSpan& row : rows_) {
        for (const PoolSpan& col : cols_) {
          const double count = double(row.counted * col.counted);
          for_each_pixel(row, col, [&](std::int64_t pixel) {
            for (std::int64_t c = 0; c < channels_; ++c)
              sample[pixel + c] += static_cast<float>(dy[c] / count);
          });
          dy += channels_;
        }
      }
    }
    round_to_dtype(dx, dtype());
    return {std::move(dx)};
  }

 private:
  // Calls visit(offset of the pixel's first channel in the sample) in row-major order.
  template <typename Visit>
  void for_each_pixel(const PoolSpan& row, const PoolSpan& col, Visit visit) const {
    for (std::int64_t iy = row.first; iy < row.last; ++iy) {
      for (std::int64_t ix = col.first; ix < col.last; ++ix)
        visit((iy * width_ + ix) * channels_);
    }
  }

  std::vector<PoolSpan> rows_;
  std::vector<PoolSpan> cols_;
  std::int64_t width_;
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

std::unique_ptr<Kernel> make_avgpool2d(const Layer& layer, const std::vector<Shape>& inputs,
                                       DType dtype) {
  return std::make_unique<AvgPool2dKernel>(layer, inputs, dtype);
}

std::unique_ptr<Kernel> make_maxpool2d(const Layer& layer, const std::vector<Shape>& inputs,
                                       DType dtype) {
  return std::make_unique<MaxPool2dKernel>(layer, inputs, dtype);
}

}  // namespace ipusim::models::detail
