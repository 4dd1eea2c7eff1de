// ONNX's ConvTranspose as conv2d_transpose, and the clipped activations: Clip(x, 0, 6)
// (PyTorch's ReLU6) as relu6, HardSigmoid and HardSwish (MobileNetV3's) as hard_sigmoid and
// hard_swish
// (models/import/onnx_converter.hpp).

#include <algorithm>
#include <cmath>
#include <optional>

#include "models/import/onnx_converter.hpp"
#include "models/import/onnx_tensors.hpp"

namespace ipusim::models::onnx_detail {
namespace {

// The most elements a transposed convolution's output sample may hold (per sample, as the
// activations of the rest of the model are bounded).
constexpr long double kMaxOutputElements = 1099511627776.0L;  // 2^40

bool all_from(const std::vector<std::int64_t>& v, std::size_t n, std::int64_t low) {
  return v.size() == n && std::all_of(v.begin(), v.end(), [&](std::int64_t x) { return x >= low; });
}

// [filters, H, W] of a transposed convolution of image `in` [C, H, W], in long double: strides
// near 2^63 overflow 64 bits. nullopt past kMaxOutputElements, which is no model.
std::optional<Shape> transposed_output(const Shape& in, std::int64_t filters,
                                       const std::vector<std::int64_t>& kernel,
                                       const std::vector<std::int64_t>& strides,
                                       const std::vector<std::int64_t>& pads,
                                       const std::vector<std::int64_t>& extra) {
  long double elements = (long double)filters;
  Shape out = {filters, 0, 0};
  for (std::size_t a = 0; a < 2; ++a) {
    const long double side = (long double)(in[a + 1] - 1) * (long double)strides[a] -
                             (long double)pads[a] - (long double)pads[a + 2] +
                             (long double)kernel[a] + (long double)extra[a];
    elements *= std::max(side, 1.0L);
    if (elements > kMaxOutputElements)
      return std::nullopt;
    out[a + 1] = std::int64_t(side);
  }
  return out;
}

}  // namespace

// ONNX's kernel [C, filters, kh, kw] becomes conv2d_transpose's [kh, kw, filters, C], a Conv
// kernel's permutation (onnx_conv_kernel_tensor): the taps keep their order, as both add input
// pixel i's tap t at output i x stride - pad + t.
void OnnxConverter::conv_transpose(const onnx::NodeProto& node) {
  const Activation* in = value(node);
  const auto* w = initializer(node, 1);
  if (!in || !w || !in->channels_first || in->onnx_shape.size() != 3) {
    if (in)
      problem(node, "only a transposed convolution of an image by an initializer kernel");
    return;
  }
  const Shape shape(w->dims().begin(), w->dims().end());
  Tensor kernel =
      shape.size() == 4 ? onnx_conv_kernel_tensor(*w, path_) : onnx_float_tensor(*w, path_);
  std::string why = kernel_problem(node, shape, in->onnx_shape[0], 0);
  if (why.empty() && int_attribute(node, "group", 1) != 1)
    why = "group " + std::to_string(int_attribute(node, "group", 1)) +
          " (ipusim's conv2d_transpose is ungrouped)";
  if (!why.empty())
    return problem(node, why);
  const std::vector<std::int64_t> k = {shape[2], shape[3]};
  const auto shape_attribute = ints_attribute(node, "kernel_shape");
  const Window window = window_of(node, k);
  auto extra = ints_attribute(node, "output_padding");
  if (extra.empty())
    extra = {0, 0};
  const std::string auto_pad = string_attribute(node, "auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID")
    why = "auto_pad " + auto_pad + " (ipusim reads a transposed convolution's explicit pads)";
  else if (!ints_attribute(node, "output_shape").empty())
    why = "an output_shape (ipusim reads pads and output_padding, as PyTorch exports them)";
  else if (!shape_attribute.empty() && shape_attribute != k)
    why = "kernel_shape " + shape_text(shape_attribute) + " for a kernel of shape " +
          shape_text(shape);
  else if (!all_from(window.strides, 2, 1) || !all_from(window.pads, 4, 0))
    why = "strides " + shape_text(window.strides) + " and pads " + shape_text(window.pads) +
          " (expected two strides from 1 and four pads from 0)";
  else if (!all_from(extra, 2, 0) || extra[0] >= window.strides[0] || extra[1] >= window.strides[1])
    why = "output_padding " + shape_text(extra) + " (expected two, each below its stride)";
  if (!why.empty())
    return problem(node, why);
  const Shape& s = in->onnx_shape;
  const auto out = transposed_output(s, shape[1], k, window.strides, window.pads, extra);
  if (!out)
    return problem(node, "strides " + shape_text(window.strides) + " that give an image of " +
                             "more than 2^40 elements from one of shape " + shape_text(s));
  if ((*out)[1] < 1 || (*out)[2] < 1)
    return problem(node, "pads " + shape_text(window.pads) + " that leave an output of " +
                             shape_text(*out) + " from an image of shape " + shape_text(s));
  json layer = {{"id", id_of(node)},
                {"type", "conv2d_transpose"},
                {"filters", shape[1]},
                {"kernel", k},
                {"stride", window.strides},
                {"padding", window.padding()},
                {"bias", initializer(node, 2) != nullptr}};
  if (extra != std::vector<std::int64_t>{0, 0})
    layer["output_padding"] = extra;
  std::vector<Tensor> weights{std::move(kernel)};
  if (const auto* bias = initializer(node, 2))
    weights.push_back(onnx_float_tensor(*bias, path_));
  add_layer(std::move(layer), node.output(0), {"", *out, true}, {in->layer}, std::move(weights));
}

// Clip's bounds are inputs from opset 11, attributes before; PyTorch's ReLU6 writes 0 and 6.
void OnnxConverter::clip(const onnx::NodeProto& node) {
  const Activation* in = value(node);
  if (!in)
    return;
  const auto bound = [&](int input, const char* name, double fallback) {
    if (node.input_size() > input && !node.input(input).empty()) {
      const auto values = index_.constant_values(node.input(input));
      return values.size() == 1 ? values[0] : -1.0;  // not a constant: never a ReLU6's
    }
    return double(float_attribute(node, name, float(fallback)));
  };
  if (bound(1, "min", -1) != 0 || bound(2, "max", -1) != 6)
    return problem(node, "a Clip other than to [0, 6] (PyTorch's ReLU6, ipusim's relu6)");
  add_layer({{"id", id_of(node)}, {"type", "relu6"}}, node.output(0), *in, {in->layer});
}

// PyTorch's Hardsigmoid writes alpha 1/6 and beta 1/2 (ONNX's defaults are 0.2 and 0.5); before
// opset 14 its Hardswish is x times that HardSigmoid of x, one hard_swish layer here.
void OnnxConverter::hard_sigmoid(const onnx::NodeProto& node) {
  const float alpha = float_attribute(node, "alpha", 0.2f);
  const float beta = float_attribute(node, "beta", 0.5f);
  if (std::abs(double(alpha) - 1.0 / 6.0) > 1e-6 || beta != 0.5f)
    return problem(node, "a HardSigmoid with alpha " + std::to_string(alpha) + " and beta " +
                             std::to_string(beta) +
                             " (ipusim's hard_sigmoid is PyTorch's: alpha 1/6, beta 0.5)");
  gate_or_activation(node, "hard_sigmoid", "hard_swish");
}

void OnnxConverter::hard_swish(const onnx::NodeProto& node) {
  const Activation* in = value(node);
  if (!in)
    return;
  add_layer({{"id", id_of(node)}, {"type", "hard_swish"}}, node.output(0), *in, {in->layer});
}

}  // namespace ipusim::models::onnx_detail
