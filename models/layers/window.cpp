#include "models/layers/window.hpp"

#include <algorithm>

#include "sim/core/config_node.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {
namespace {

// Division of a non-negative numerator, rounded up.
std::int64_t ceil_div(std::int64_t numerator, std::int64_t denominator) {
  return (numerator + denominator - 1) / denominator;
}

// A conv2d's dilation along `axis`; pools' windows are undilated.
std::int64_t window_dilation(const Layer& layer, ImageAxis axis) {
  if (layer.type != LayerType::kConv2d)
    return 1;
  return axis == ImageAxis::kHeight ? layer.params.dilation_h : layer.params.dilation_w;
}

}  // namespace

WindowAxis window_axis(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                       std::int64_t before, std::int64_t after, bool ceil_mode,
                       std::int64_t dilation) {
  IPUSIM_CHECK(kernel > 0 && stride > 0 && before >= 0 && after >= 0 && dilation > 0);
  WindowAxis axis{in, kernel, stride, before, after, 0, dilation};
  const std::int64_t span = in + before + after - axis.span();
  IPUSIM_CHECK(span >= 0);
  if (!ceil_mode) {
    axis.out = span / stride + 1;
    return axis;
  }
  axis.out = ceil_div(span, stride) + 1;
  // The last window must start inside the input or its leading padding.
  if ((axis.out - 1) * stride >= in + before)
    --axis.out;
  return axis;
}

std::int64_t window_size(const Layer& layer, ImageAxis axis) {
  const LayerParams& p = layer.params;
  const bool conv = layer.type == LayerType::kConv2d;
  if (axis == ImageAxis::kHeight)
    return conv ? p.kernel_h : p.pool_h;
  return conv ? p.kernel_w : p.pool_w;
}

std::int64_t window_span(const Layer& layer, ImageAxis axis) {
  const std::int64_t size = window_size(layer, axis);
  const std::int64_t dilation = window_dilation(layer, axis);
  if (size - 1 > core::kMaxCount / dilation)
    return core::kMaxCount + 1;
  return (size - 1) * dilation + 1;
}

WindowAxis layer_window(const Layer& layer, ImageAxis axis, std::int64_t in) {
  const LayerParams& p = layer.params;
  const bool rows = axis == ImageAxis::kHeight;
  const std::int64_t kernel = window_size(layer, axis);
  const std::int64_t dilation = window_dilation(layer, axis);
  const std::int64_t stride = rows ? p.stride_h : p.stride_w;
  std::int64_t before = rows ? p.padding.top : p.padding.left;
  std::int64_t after = rows ? p.padding.bottom : p.padding.right;
  if (p.padding.same) {
    // TensorFlow's: ceil(in / stride) outputs, the odd padding row or column at the end.
    const std::int64_t out = ceil_div(in, stride);
    const std::int64_t span = window_span(layer, axis);
    const std::int64_t total = std::max<std::int64_t>((out - 1) * stride + span - in, 0);
    before = total / 2;
    after = total - before;
  }
  return window_axis(in, kernel, stride, before, after, p.ceil_mode, dilation);
}

}  // namespace ipusim::models
