// dense and conv2d: a matrix product (conv2d through im2col), a bias and an activation.

// GCC 12 warns inside its own AVX-512 intrinsics (_mm512_undefined_ps) when Eigen's GEMM is
// inlined; the value is never read (GCC bug 105593). Clang has no such warning.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <algorithm>

#include "models/kernels/kernels_internal.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models::detail {
namespace {

// Rounds the pre-activation, applies the activation and keeps what its derivative needs.
ForwardResult finish_forward(Activation activation, DType dtype, const Tensor& input,
                             Tensor pre_activation) {
  round_to_dtype(pre_activation, dtype);
  SavedState saved;
  saved.dtype = dtype;
  saved.tensors.push_back(input);
  if (activation == Activation::kGelu || activation == Activation::kGeluTanh)
    saved.tensors.push_back(pre_activation);
  activate(activation, pre_activation.values());
  round_to_dtype(pre_activation, dtype);
  if (activation == Activation::kRelu || activation == Activation::kTanh)
    saved.tensors.push_back(pre_activation);
  return {std::move(pre_activation), std::move(saved), {}};
}

// The gradient at the pre-activation: `output_gradient` itself without an activation, else
// `scratch` holding it times the activation's derivative.
const Tensor& pre_activation_gradient(Activation activation, DType dtype,
                                      const Tensor& output_gradient, const SavedState& saved,
                                      Tensor& scratch) {
  if (!activation_saves_tensor(activation))
    return output_gradient;
  IPUSIM_CHECK(saved.tensors.size() == 2);
  scratch = output_gradient;
  activation_backward(activation, scratch.values(), saved.tensors[1].values());
  round_to_dtype(scratch, dtype);
  return scratch;
}

// A dense layer on the last axis: y = act(x W + b), W of shape [in, units]. A layer tied to an
// embedding takes the word matrix E of shape [units, in] (vocabulary by hidden) as its first
// parameter instead and computes y = act(x E^T + b); its gradient g^T x has E's shape.
class DenseKernel final : public Kernel {
 public:
  DenseKernel(const Layer& layer, const std::vector<Shape>& inputs, DType dtype)
      : Kernel(LayerType::kDense, dtype, inputs, output_shape_of(layer, inputs)),
        in_(inputs.at(0).back()),
        units_(layer.params.units),
        bias_(layer.params.bias),
        tied_(!layer.tied_to.empty()),
        activation_(layer.params.activation) {}

  std::vector<ParameterSpec> parameters() const override {
    std::vector<ParameterSpec> specs{
        tied_ ? ParameterSpec{ParameterSpec::Role::kEmbedding, {units_, in_}, units_, in_}
              : ParameterSpec{ParameterSpec::Role::kWeight, {in_, units_}, in_, units_}};
    if (bias_)
      specs.push_back({ParameterSpec::Role::kBias, {units_}, in_, units_});
    return specs;
  }

  ForwardResult forward(const std::vector<const Tensor*>& inputs, std::span<const Tensor> params,
                        const ForwardContext& /*context*/) const override {
    IPUSIM_CHECK(inputs.size() == 1 && inputs[0]->sample_shape() == input_shapes()[0]);
    const Tensor& x = *inputs[0];
    const std::int64_t rows = x.elements() / in_;
    Tensor z(with_batch(x.batch(), output_shape()));
    if (tied_) {
      as_matrix(z.data(), rows, units_).noalias() =
          as_matrix(x.data(), rows, in_) * as_matrix(params[0].data(), units_, in_).transpose();
    } else {
      as_matrix(z.data(), rows, units_).noalias() =
          as_matrix(x.data(), rows, in_) * as_matrix(params[0].data(), in_, units_);
    }
    if (bias_)
      add_bias(z, params[1]);
    return finish_forward(activation_, dtype(), x, std::move(z));
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& saved,
                               std::span<const Tensor> params,
                               std::span<GradientAccumulator> gradients) const override {
    const Tensor& x = saved.tensors.at(0);
    Tensor scratch;
    const Tensor& g =
        pre_activation_gradient(activation_, dtype(), output_gradient, saved, scratch);
    const std::int64_t rows = x.elements() / in_;
    Tensor dx(x.shape());
    if (tied_) {
      // dE = g^T x: the weight gradient of E^T, with the roles of x and g swapped.
      accumulate_weight_gradient(g.data(), x.data(), rows, units_, in_, dtype(), gradients[0]);
      as_matrix(dx.data(), rows, in_).noalias() =
          as_matrix(g.data(), rows, units_) * as_matrix(params[0].data(), units_, in_);
    } else {
      accumulate_weight_gradient(x.data(), g.data(), rows, in_, units_, dtype(), gradients[0]);
      as_matrix(dx.data(), rows, in_).noalias() =
          as_matrix(g.data(), rows, units_) * as_matrix(params[0].data(), in_, units_).transpose();
    }
    if (bias_)
      accumulate_bias_gradient(g, units_, dtype(), gradients[1]);
    round_to_dtype(dx, dtype());
    return {std::move(dx)};
  }

 private:
  static Shape output_shape_of(const Layer& layer, const std::vector<Shape>& inputs) {
    IPUSIM_CHECK(inputs.size() == 1 && !inputs[0].empty() && layer.params.units > 0);
    Shape shape = inputs[0];
    shape.back() = layer.params.units;
    return shape;
  }

  std::int64_t in_;
  std::int64_t units_;
  bool bias_;
  bool tied_;
  Activation activation_;
};

// A 2-D convolution over [H, W, C] samples with a [kh, kw, C / groups, filters] kernel (Keras
// layout; group g takes channels g C / groups on and gives filters g filters / groups on; tap
// (ky, kx) of a dilated kernel reads the pixel ky x dilation_h rows and kx x dilation_w columns
// on), computed as im2col patches times the kernel viewed as [kh*kw*C/groups, filters], block by
// block of output positions, a group at a time. The block size depends only on the layer, so
// results are reproducible.
class Conv2dKernel final : public Kernel {
 public:
  Conv2dKernel(const Layer& layer, const std::vector<Shape>& inputs, DType dtype)
      : Kernel(LayerType::kConv2d, dtype, inputs, output_shape_of(layer, inputs)),
        rows_(layer_window(layer, ImageAxis::kHeight, inputs[0][0])),
        cols_(layer_window(layer, ImageAxis::kWidth, inputs[0][1])),
        channels_(inputs[0][2]),
        filters_(layer.params.filters),
        groups_(layer.params.groups),
        bias_(layer.params.bias),
        activation_(layer.params.activation) {
    IPUSIM_CHECK(groups_ > 0 && channels_ % groups_ == 0 && filters_ % groups_ == 0);
  }

  std::vector<ParameterSpec> parameters() const override {
    const std::int64_t taps = rows_.kernel * cols_.kernel;
    std::vector<ParameterSpec> specs{{ParameterSpec::Role::kWeight,
                                      {rows_.kernel, cols_.kernel, group_channels(), filters_},
                                      taps * group_channels(),
                                      taps * filters_}};
    if (bias_) {
      specs.push_back(
          {ParameterSpec::Role::kBias, {filters_}, taps * group_channels(), taps * filters_});
    }
    return specs;
  }

  ForwardResult forward(const std::vector<const Tensor*>& inputs, std::span<const Tensor> params,
                        const ForwardContext& /*context*/) const override {
    IPUSIM_CHECK(inputs.size() == 1 && inputs[0]->sample_shape() == input_shapes()[0]);
    const Tensor& x = *inputs[0];
    Tensor z(with_batch(x.batch(), output_shape()));
    Tensor patches({block_positions(), patch_size()});
    for_each_block(x.batch(), [&](std::int64_t first, std::int64_t count) {
      for (std::int64_t group = 0; group < groups_; ++group) {
        im2col(x, first, count, group, patches);
        const auto block = as_matrix(patches.data(), count, patch_size());
        if (groups_ == 1) {
          as_matrix(z.data() + first * filters_, count, filters_).noalias() =
              block * as_matrix(params[0].data(), patch_size(), filters_);
        } else {
          group_columns(z.data() + first * filters_, count, group).noalias() =
              block * group_columns(params[0].data(), patch_size(), group);
        }
      }
    });
    if (bias_)
      add_bias(z, params[1]);
    return finish_forward(activation_, dtype(), x, std::move(z));
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& saved,
                               std::span<const Tensor> params,
                               std::span<GradientAccumulator> gradients) const override {
    const Tensor& x = saved.tensors.at(0);
    Tensor scratch;
    const Tensor& g =
        pre_activation_gradient(activation_, dtype(), output_gradient, saved, scratch);
    Tensor weight_gradient({patch_size(), filters_});
    Tensor dx(x.shape());
    Tensor patches({block_positions(), patch_size()});
    Tensor patch_gradient({block_positions(), patch_size()});
    for_each_block(x.batch(), [&](std::int64_t first, std::int64_t count) {
      for (std::int64_t group = 0; group < groups_; ++group) {
        im2col(x, first, count, group, patches);
        if (groups_ == 1)
          dense_block_backward(g, params[0], first, count, patches, weight_gradient,
                               patch_gradient);
        else
          group_block_backward(g, params[0], first, count, group, patches, weight_gradient,
                               patch_gradient);
        col2im(patch_gradient, first, count, group, dx);
      }
    });
    round_to_dtype(weight_gradient, dtype());
    gradients[0].add(weight_gradient.values());
    if (bias_)
      accumulate_bias_gradient(g, filters_, dtype(), gradients[1]);
    round_to_dtype(dx, dtype());
    return {std::move(dx)};
  }

 private:
  using GroupMap = Eigen::Map<RowMatrix, 0, Eigen::OuterStride<>>;
  using ConstGroupMap = Eigen::Map<const RowMatrix, 0, Eigen::OuterStride<>>;

  static Shape output_shape_of(const Layer& layer, const std::vector<Shape>& inputs) {
    IPUSIM_CHECK(inputs.size() == 1 && inputs[0].size() == 3 && layer.params.filters > 0);
    const LayerParams& p = layer.params;
    return {layer_window(layer, ImageAxis::kHeight, inputs[0][0]).out,
            layer_window(layer, ImageAxis::kWidth, inputs[0][1]).out, p.filters};
  }

  std::int64_t group_channels() const { return channels_ / groups_; }
  std::int64_t group_filters() const { return filters_ / groups_; }
  std::int64_t patch_size() const { return rows_.kernel * cols_.kernel * group_channels(); }

  // The columns of `group` in rows of `filters_` values (outputs, weights and their gradients).
  GroupMap group_columns(float* data, std::int64_t rows, std::int64_t group) const {
    return {data + group * group_filters(), rows, group_filters(), Eigen::OuterStride<>(filters_)};
  }
  ConstGroupMap group_columns(const float* data, std::int64_t rows, std::int64_t group) const {
    return {data + group * group_filters(), rows, group_filters(), Eigen::OuterStride<>(filters_)};
  }

  // A block's weight gradient (added) and patch gradient of a dense convolution.
  void dense_block_backward(const Tensor& g, const Tensor& weights, std::int64_t first,
                            std::int64_t count, const Tensor& patches, Tensor& weight_gradient,
                            Tensor& patch_gradient) const {
    const auto g_block = as_matrix(g.data() + first * filters_, count, filters_);
    as_matrix(weight_gradient.data(), patch_size(), filters_).noalias() +=
        as_matrix(patches.data(), count, patch_size()).transpose() * g_block;
    as_matrix(patch_gradient.data(), count, patch_size()).noalias() =
        g_block * as_matrix(weights.data(), patch_size(), filters_).transpose();
  }

  // The same for one group's columns.
  void group_block_backward(const Tensor& g, const Tensor& weights, std::int64_t first,
                            std::int64_t count, std::int64_t group, const Tensor& patches,
                            Tensor& weight_gradient, Tensor& patch_gradient) const {
    const auto g_block = group_columns(g.data() + first * filters_, count, group);
    group_columns(weight_gradient.data(), patch_size(), group).noalias() +=
        as_matrix(patches.data(), count, patch_size()).transpose() * g_block;
    as_matrix(patch_gradient.data(), count, patch_size()).noalias() =
        g_block * group_columns(weights.data(), patch_size(), group).transpose();
  }

  // Output positions per im2col block: about 1 MiB of patches, so that a block and its
  // gradient stay in L2 cache instead of streaming the whole patch matrix through memory.
  std::int64_t block_positions() const {
    return std::max<std::int64_t>(16, (std::int64_t{1} << 18) / patch_size());
  }

  // Calls visit(first, count) over the batch's output positions in fixed blocks, in order.
  template <typename Visit>
  void for_each_block(std::int64_t batch, Visit visit) const {
    const std::int64_t positions = batch * rows_.out * cols_.out;
    for (std::int64_t first = 0; first < positions; first += block_positions())
      visit(first, std::min(block_positions(), positions - first));
  }

  // Calls visit(patch_pointer, pixel_pointer_or_null) for every tap of output positions
  // first .. first + count - 1 (flattened over batch, rows and columns), the pixel pointing at
  // the group's first channel; null marks padding.
  template <typename Patch, typename Image, typename Visit>
  void for_each_tap(std::int64_t first, std::int64_t count, std::int64_t group, Patch* patches,
                    Image* image, Visit visit) const {
    const std::int64_t row_stride = cols_.in * channels_;
    const std::int64_t image_stride = rows_.in * row_stride;
    const std::int64_t per_image = rows_.out * cols_.out;
    image += group * group_channels();
    for (std::int64_t p = first; p < first + count; ++p) {
      const std::int64_t n = p / per_image;
      const std::int64_t oy = p % per_image / cols_.out;
      const std::int64_t ox = p % cols_.out;
      for (std::int64_t ky = 0; ky < rows_.kernel; ++ky) {
        const std::int64_t iy = oy * rows_.stride - rows_.pad_before + ky * rows_.dilation;
        for (std::int64_t kx = 0; kx < cols_.kernel; ++kx, patches += group_channels()) {
          const std::int64_t ix = ox * cols_.stride - cols_.pad_before + kx * cols_.dilation;
          const bool inside = iy >= 0 && iy < rows_.in && ix >= 0 && ix < cols_.in;
          visit(patches,
                inside ? image + n * image_stride + iy * row_stride + ix * channels_ : nullptr);
        }
      }
    }
  }

  void im2col(const Tensor& x, std::int64_t first, std::int64_t count, std::int64_t group,
              Tensor& patches) const {
    const std::int64_t width = group_channels();
    for_each_tap(first, count, group, patches.data(), x.data(),
                 [width](float* patch, const float* pixel) {
                   if (pixel != nullptr)
                     std::copy(pixel, pixel + width, patch);
                   else
                     std::fill(patch, patch + width, 0.0f);
                 });
  }

  void col2im(const Tensor& patches, std::int64_t first, std::int64_t count, std::int64_t group,
              Tensor& dx) const {
    const std::int64_t width = group_channels();
    for_each_tap(first, count, group, patches.data(), dx.data(),
                 [width](const float* patch, float* pixel) {
                   if (pixel == nullptr)
                     return;
                   for (std::int64_t c = 0; c < width; ++c)
                     pixel[c] += patch[c];
                 });
  }

  WindowAxis rows_;
  WindowAxis cols_;
  std::int64_t channels_;
  std::int64_t filters_;
  std::int64_t groups_;
  bool bias_;
  Activation activation_;
};

}  // namespace

void add_bias(Tensor& values, const Tensor& bias) {
  const std::int64_t width = bias.elements();
  float* out = values.data();
  for (std::int64_t row = 0; row < values.elements() / width; ++row, out += width) {
    for (std::int64_t j = 0; j < width; ++j)
      out[j] += bias[j];
  }
}

void accumulate_bias_gradient(const Tensor& gradient, std::int64_t width, DType dtype,
                              GradientAccumulator& accumulator) {
  Tensor bias_gradient({width});
  const float* row = gradient.data();
  for (std::int64_t r = 0; r < gradient.elements() / width; ++r, row += width) {
    for (std::int64_t j = 0; j < width; ++j)
      bias_gradient[j] += row[j];
  }
  round_to_dtype(bias_gradient, dtype);
  accumulator.add(bias_gradient.values());
}

void accumulate_weight_gradient(const float* a, const float* b, std::int64_t k, std::int64_t m,
                                std::int64_t n, DType dtype, GradientAccumulator& accumulator) {
  Tensor weight_gradient({m, n});
  as_matrix(weight_gradient.data(), m, n).noalias() =
      as_matrix(a, k, m).transpose() * as_matrix(b, k, n);
  round_to_dtype(weight_gradient, dtype);
  accumulator.add(weight_gradient.values());
}

void linear(const Tensor& x, const Tensor& weights, const Tensor* bias, Tensor& out) {
  const std::int64_t in = weights.dim(0);
  const std::int64_t cols = weights.dim(1);
  const std::int64_t rows = x.elements() / in;
  IPUSIM_CHECK(out.elements() == rows * cols);
  as_matrix(out.data(), rows, cols).noalias() =
      as_matrix(x.data(), rows, in) * as_matrix(weights.data(), in, cols);
  if (bias != nullptr)
    add_bias(out, *bias);
}

void add_input_gradient(const Tensor& g, const Tensor& weights, Tensor& dx) {
  const std::int64_t in = weights.dim(0);
  const std::int64_t cols = weights.dim(1);
  const std::int64_t rows = g.elements() / cols;
  as_matrix(dx.data(), rows, in).noalias() +=
      as_matrix(g.data(), rows, cols) * as_matrix(weights.data(), in, cols).transpose();
}

std::unique_ptr<Kernel> make_dense(const Layer& layer, const std::vector<Shape>& inputs,
                                   DType dtype) {
  return std::make_unique<DenseKernel>(layer, inputs, dtype);
}

std::unique_ptr<Kernel> make_conv2d(const Layer& layer, const std::vector<Shape>& inputs,
                                    DType dtype) {
  return std::make_unique<Conv2dKernel>(layer, inputs, dtype);
}

}  // namespace ipusim::models::detail
