// conv2d_transpose: the transposed 2-D convolution over [height, width, channels] (Keras'
// Conv2DTranspose, PyTorch's ConvTranspose2d), the input gradient of the conv2d it transposes,
// then a bias and an activation. Each input pixel adds its channels times the kernel's tap into
// the output at (input x stride - pad before + tap); the output holds
// (in - 1) x stride - pad before - pad after + kernel (+ output_padding) rows and columns, as
// PyTorch gives them. "same" is Keras': in x stride, the padding max(kernel - stride, 0) split
// with the odd row at the end (TensorFlow's conv_transpose). The kernel is
// [kh, kw, filters, channels], Keras' layout, which is the transposed conv2d's own.

#include <algorithm>
#include <array>

#include "models/kernels/kernels_internal.hpp"
#include "models/layers/types/type_support.hpp"
#include "sim/core/checked.hpp"

namespace ipusim::models {
namespace {

struct Conv2dTransposeFields {
  std::int64_t output_pad_h = 0;  // rows added at the bottom (PyTorch's output_padding)
  std::int64_t output_pad_w = 0;  // columns added at the right
};

const std::array kConv2dTransposeKeys = {
    positive_int_key<&LayerParams::filters>("filters", "output channels"),
    pair_key<&LayerParams::kernel_h, &LayerParams::kernel_w>("kernel", "the window: N or [h, w]"),
    pair_key<&LayerParams::stride_h, &LayerParams::stride_w>("stride", 1,
                                                             "the input's step: N or [h, w]"),
    padding_key(
        "same: Keras', in x stride outputs per axis; a list: PyTorch's, cropped from each side",
        key_readers::padding),
    own_key("output_padding", KeyKind::kInt, "0",
            "N or [h, w]: rows and columns added at the end (PyTorch's), from 0 to the stride "
            "less 1, with a padding list"),
    kActivationKey,
    kBiasKey,
};

// output_padding: N or [h, w], from 0 to the stride less one, with explicit pads (PyTorch's).
void read_conv2d_transpose(const core::ConfigNode& layer, LayerParams& params) {
  read_keys(layer, kConv2dTransposeKeys, params);
  Conv2dTransposeFields& own = own_fields_to_set<Conv2dTransposeFields>(params);
  const auto value = layer.find("output_padding");
  if (!value)
    return;
  if (params.padding.same)
    value->fail("expected no output_padding with padding \"same\", which sets the output size");
  if (value->is_array() && value->size() != 2)
    value->fail("expected [height, width], found a list of " + std::to_string(value->size()));
  own.output_pad_h = value->is_array() ? value->at(std::size_t{0}).as_int(0, core::kMaxCount)
                                       : value->as_int(0, core::kMaxCount);
  own.output_pad_w =
      value->is_array() ? value->at(std::size_t{1}).as_int(0, core::kMaxCount) : own.output_pad_h;
  if (own.output_pad_h >= params.stride_h || own.output_pad_w >= params.stride_w) {
    value->fail("expected an output padding below the stride [" + std::to_string(params.stride_h) +
                ", " + std::to_string(params.stride_w) + "], found [" +
                std::to_string(own.output_pad_h) + ", " + std::to_string(own.output_pad_w) + "]");
  }
}

// Where one axis's input pixels land: pixel i, tap t at output i x stride - before + t.
struct Conv2dTransposeAxis {
  std::int64_t in = 0;
  std::int64_t kernel = 0;
  std::int64_t stride = 1;
  std::int64_t before = 0;
  std::int64_t out = 0;  // may be below 1 for pads too large; shape inference refuses those
};

Conv2dTransposeAxis conv2d_transpose_axis(const Layer& layer, ImageAxis axis, std::int64_t in) {
  const LayerParams& p = layer.params;
  const Conv2dTransposeFields& own = own_fields<Conv2dTransposeFields>(p);
  const bool rows = axis == ImageAxis::kHeight;
  Conv2dTransposeAxis a{in, rows ? p.kernel_h : p.kernel_w, rows ? p.stride_h : p.stride_w, 0, 0};
  std::int64_t pads = rows ? p.padding.top + p.padding.bottom : p.padding.left + p.padding.right;
  std::int64_t extra = rows ? own.output_pad_h : own.output_pad_w;
  a.before = rows ? p.padding.top : p.padding.left;
  if (p.padding.same) {
    pads = std::max<std::int64_t>(a.kernel - a.stride, 0);
    a.before = pads / 2;
    extra = std::max<std::int64_t>(a.stride - a.kernel, 0);
  }
  a.out = (in - 1) * a.stride + a.kernel - pads + extra;
  return a;
}

Shape conv2d_transpose_shape(const Layer& layer, const std::vector<InputShape>& inputs) {
  const InputShape& input = only_input(inputs);
  expect_image(layer, input);
  const auto rows = conv2d_transpose_axis(layer, ImageAxis::kHeight, input.shape[0]);
  const auto cols = conv2d_transpose_axis(layer, ImageAxis::kWidth, input.shape[1]);
  if (rows.out < 1 || cols.out < 1) {
    fail_layer(layer, "has padding " + padding_text(layer.params.padding) +
                          " that leaves an output of " + std::to_string(rows.out) + "x" +
                          std::to_string(cols.out) + ": " + input_text(input));
  }
  return {rows.out, cols.out, layer.params.filters};
}

LayerCost conv2d_transpose_cost(const Layer& layer, const std::vector<Shape>& inputs,
                                const CostSizes& size) {
  const LayerParams& p = layer.params;
  const std::int64_t weights =
      core::checked_mul(core::checked_mul(core::checked_mul(p.kernel_h, p.kernel_w, kParamCount),
                                          inputs.front()[2], kParamCount),
                        p.filters, kParamCount);
  return linear_cost(layer, size, weights, p.filters);
}

// The conv2d it transposes, run backward: a product per input pixel of its channels and each
// tap's [channels, filters], on the AMP as that conv2d's input gradient is.
std::vector<Operation> conv2d_transpose_operations(const Layer& layer,
                                                   const std::vector<Shape>& inputs,
                                                   const Shape& output) {
  const LayerParams& p = layer.params;
  const Shape& input = inputs.front();
  const double out = double(element_count(output));
  std::vector<Operation> ops = {convolution_op({.positions = double(input[0]) * double(input[1]),
                                                .taps = double(p.kernel_h) * double(p.kernel_w),
                                                .in_channels = input[2],
                                                .filters = p.filters,
                                                .groups = 1,
                                                .in = double(element_count(input)),
                                                .out = out,
                                                .out_height = input[0],
                                                .out_width = input[1],
                                                .in_height = output[0],
                                                .in_width = output[1],
                                                .kernel_height = p.kernel_h,
                                                .kernel_width = p.kernel_w})};
  if (p.bias)
    ops.push_back(lowered(vector_op("bias_add", OpClass::kElementwise, out, kBiasFlops),
                          VectorLowering::kBiasAdd, double(p.filters)));
  add_activation(ops, p.activation, out);
  return ops;
}

// Scatters each input pixel through the kernel; sums run in a fixed order (pixel, tap, filter,
// channel), so results are reproducible.
class Conv2dTransposeKernel final : public Kernel {
 public:
  Conv2dTransposeKernel(const Layer& layer, const std::vector<Shape>& inputs, DType dtype)
      : Kernel(layer.type, dtype, inputs,
               {conv2d_transpose_axis(layer, ImageAxis::kHeight, inputs.at(0).at(0)).out,
                conv2d_transpose_axis(layer, ImageAxis::kWidth, inputs[0].at(1)).out,
                layer.params.filters}),
        rows_(conv2d_transpose_axis(layer, ImageAxis::kHeight, inputs[0][0])),
        cols_(conv2d_transpose_axis(layer, ImageAxis::kWidth, inputs[0][1])),
        channels_(inputs[0].at(2)),
        filters_(layer.params.filters),
        bias_(layer.params.bias),
        activation_(layer.params.activation) {}

  std::vector<ParameterSpec> parameters() const override {
    const std::int64_t taps = rows_.kernel * cols_.kernel;
    std::vector<ParameterSpec> specs{{ParameterSpec::Role::kWeight,
                                      {rows_.kernel, cols_.kernel, filters_, channels_},
                                      taps * filters_,
                                      taps * channels_}};
    if (bias_)
      specs.push_back({ParameterSpec::Role::kBias, {filters_}, taps * filters_, taps * channels_});
    return specs;
  }

  ForwardResult forward(const std::vector<const Tensor*>& inputs, std::span<const Tensor> params,
                        const ForwardContext& /*context*/) const override {
    IPUSIM_CHECK(inputs.size() == 1 && inputs[0]->sample_shape() == input_shapes()[0]);
    const Tensor& x = *inputs[0];
    const float* w = params[0].data();
    Tensor z(detail::with_batch(x.batch(), output_shape()));
    for_each_tap(x.batch(), [&](std::int64_t pixel, std::int64_t out, std::int64_t tap) {
      const float* in = x.data() + pixel * channels_;
      const float* weights = w + tap * filters_ * channels_;
      float* y = z.data() + out * filters_;
      for (std::int64_t f = 0; f < filters_; ++f) {
        float sum = 0.0f;
        for (std::int64_t c = 0; c < channels_; ++c)
          sum += weights[f * channels_ + c] * in[c];
        y[f] += sum;
      }
    });
    if (bias_)
      detail::add_bias(z, params[1]);
    return finish(x, std::move(z));
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& saved,
                               std::span<const Tensor> params,
                               std::span<GradientAccumulator> gradients) const override {
    const Tensor& x = saved.tensors.at(0);
    const Tensor g = pre_activation_gradient(output_gradient, saved);
    const float* w = params[0].data();
    Tensor dw(params[0].shape());
    Tensor dx(x.shape());
    for_each_tap(x.batch(), [&](std::int64_t pixel, std::int64_t out, std::int64_t tap) {
      const float* in = x.data() + pixel * channels_;
      const float* dy = g.data() + out * filters_;
      const float* weights = w + tap * filters_ * channels_;
      float* dweights = dw.data() + tap * filters_ * channels_;
      float* din = dx.data() + pixel * channels_;
      for (std::int64_t f = 0; f < filters_; ++f) {
        for (std::int64_t c = 0; c < channels_; ++c) {
          din[c] += dy[f] * weights[f * channels_ + c];
          dweights[f * channels_ + c] += dy[f] * in[c];
        }
      }
    });
    round_to_dtype(dw, dtype());
    gradients[0].add(dw.values());
    if (bias_)
      detail::accumulate_bias_gradient(g, filters_, dtype(), gradients[1]);
    round_to_dtype(dx, dtype());
    return {std::move(dx)};
  }

 private:
  // Calls visit(input pixel, output pixel, tap) for every tap of every input pixel (over the
  // batch, in order) that lands inside the output.
  template <typename Visit>
  void for_each_tap(std::int64_t batch, Visit visit) const {
    for (std::int64_t n = 0; n < batch; ++n) {
      for (std::int64_t iy = 0; iy < rows_.in; ++iy) {
        for (std::int64_t ix = 0; ix < cols_.in; ++ix) {
          const std::int64_t pixel = (n * rows_.in + iy) * cols_.in + ix;
          for (std::int64_t ky = 0; ky < rows_.kernel; ++ky) {
            const std::int64_t oy = iy * rows_.stride - rows_.before + ky;
            for (std::int64_t kx = 0; kx < cols_.kernel && oy >= 0 && oy < rows_.out; ++kx) {
              const std::int64_t ox = ix * cols_.stride - cols_.before + kx;
              if (ox >= 0 && ox < cols_.out)
                visit(pixel, (n * rows_.out + oy) * cols_.out + ox, ky * cols_.kernel + kx);
            }
          }
        }
      }
    }
  }

  // Keeps the input (for the kernel's gradient) and what the activation's derivative needs, as
  // conv2d does: the pre-activation for gelu, the output for relu and tanh.
  ForwardResult finish(const Tensor& x, Tensor z) const {
    round_to_dtype(z, dtype());
    SavedState saved;
    saved.dtype = dtype();
    saved.tensors.push_back(x);
    if (activation_ == Activation::kGelu || activation_ == Activation::kGeluTanh)
      saved.tensors.push_back(z);
    detail::activate(activation_, z.values());
    round_to_dtype(z, dtype());
    if (activation_ == Activation::kRelu || activation_ == Activation::kTanh)
      saved.tensors.push_back(z);
    return {std::move(z), std::move(saved), {}};
  }

  Tensor pre_activation_gradient(const Tensor& output_gradient, const SavedState& saved) const {
    Tensor g = output_gradient;
    if (detail::activation_saves_tensor(activation_)) {
      detail::activation_backward(activation_, g.values(), saved.tensors.at(1).values());
      round_to_dtype(g, dtype());
    }
    return g;
  }

  Conv2dTransposeAxis rows_;
  Conv2dTransposeAxis cols_;
  std::int64_t channels_;
  std::int64_t filters_;
  bool bias_;
  Activation activation_;
};

std::unique_ptr<Kernel> conv2d_transpose_kernel(const Layer& layer,
                                                const std::vector<Shape>& inputs, DType dtype,
                                                std::uint64_t /*seed*/) {
  return std::make_unique<Conv2dTransposeKernel>(layer, inputs, dtype);
}

}  // namespace

LayerTypeDef conv2d_transpose_type() {
  return {.name = "conv2d_transpose",
          .keys = kConv2dTransposeKeys,
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_conv2d_transpose,
          .shape = conv2d_transpose_shape,
          .cost = conv2d_transpose_cost,
          .lower = conv2d_transpose_operations,
          .kernel = conv2d_transpose_kernel};
}

}  // namespace ipusim::models
