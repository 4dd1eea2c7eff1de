#pragma once
// Where the windows of a conv2d or pool layer fall along one image axis, from the input size,
// the window, the stride, the padding and the rounding of the output size. Shape inference and
// the kernels both place windows by it, so a layer's shape and its kernel cannot disagree.
//
// out = floor((in + before + after - window) / stride) + 1, PyTorch's and TensorFlow's floor
// rule. With ceil_mode (PyTorch's pools), out = ceil((in + before + after - window) / stride) + 1,
// less one when the last window would start at or after in + before, past the input and its
// leading padding (aten/src/ATen/native/Pool.h, pooling_output_shape_pad_lr): the last window
// may run past the padded input, and then sees only what is inside it.
//
// A dilated kernel (conv2d, conv1d) takes every `dilation`-th input, so its window spans
// (kernel - 1) x dilation + 1 inputs, and that span stands for the window in the rules above, as
// in PyTorch's and TensorFlow's output sizes.

#include <cstdint>

#include "models/layers/layer.hpp"

namespace ipusim::models {

struct WindowAxis {
  std::int64_t in = 0;
  std::int64_t kernel = 0;
  std::int64_t stride = 1;
  std::int64_t pad_before = 0;
  std::int64_t pad_after = 0;
  std::int64_t out = 0;
  std::int64_t dilation = 1;  // the step between two taps of the kernel

  // The inputs one window spans.
  std::int64_t span() const { return (kernel - 1) * dilation + 1; }
};

enum class ImageAxis { kHeight, kWidth };

// The padded input must hold one window: in + before + after >= its span.
WindowAxis window_axis(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                       std::int64_t before, std::int64_t after, bool ceil_mode,
                       std::int64_t dilation = 1);

// The axis of a conv2d's kernel or a pool's window over an input of `in` along `axis`: its
// padding resolved ("same" by TensorFlow's rule) and its ceil_mode.
WindowAxis layer_window(const Layer& layer, ImageAxis axis, std::int64_t in);

// The window's size along `axis`: conv2d's kernel, a pool's window.
std::int64_t window_size(const Layer& layer, ImageAxis axis);
// The inputs the window spans along `axis`: its size, dilated for a conv2d; more than
// core::kMaxCount when it would overflow, which shape inference refuses.
std::int64_t window_span(const Layer& layer, ImageAxis axis);

}  // namespace ipusim::models
