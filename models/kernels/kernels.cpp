#include "models/kernels/kernels.hpp"

#include <cmath>
#include <numbers>

#include "models/kernels/eigen_blocking.hpp"
#include "models/kernels/kernels_internal.hpp"
#include "models/layers/layer_types.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {

std::int64_t SavedState::saved_bytes() const {
  std::int64_t bytes = 0;
  for (const Tensor& tensor : tensors)
    bytes += tensor.elements() * dtype_bytes(dtype);
  bytes += static_cast<std::int64_t>(indices.size() * sizeof(std::int32_t));
  bytes += static_cast<std::int64_t>(seeds.size()) * kDropoutSeedBytes;
  return bytes;
}

bool has_kernel(LayerType type) {
  return type != LayerType::kInput;
}

std::unique_ptr<Kernel> make_kernel(const Layer& layer, const std::vector<Shape>& input_shapes,
                                    DType dtype, std::uint64_t seed) {
  pin_eigen_blocking();
  IPUSIM_CHECK(has_kernel(layer.type));
  std::unique_ptr<Kernel> kernel =
      layer_type_row(layer.type).kernel(layer, input_shapes, dtype, seed);
  kernel->stash_ = stash_bytes(layer, input_shapes, kernel->output_shape(), dtype);
  return kernel;
}

namespace detail {

Shape with_batch(std::int64_t batch, const Shape& sample_shape) {
  Shape shape{batch};
  shape.insert(shape.end(), sample_shape.begin(), sample_shape.end());
  return shape;
}

float gelu(float x) {
  return static_cast<float>(0.5 * x * (1.0 + std::erf(x * std::numbers::sqrt2 / 2.0)));
}

// GELU's tanh approximation: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
constexpr double kGeluTanhScale = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kGeluTanhCubic = 0.044715;

float gelu_tanh(float x) {
  const double t = std::tanh(kGeluTanhScale * (x + kGeluTanhCubic * x * x * x));
  return static_cast<float>(0.5 * x * (1.0 + t));
}

float gelu_tanh_derivative(float x) {
  const double t = std::tanh(kGeluTanhScale * (x + kGeluTanhCubic * x * x * x));
  const double inner = kGeluTanhScale * (1.0 + 3.0 * kGeluTanhCubic * x * x);
  return static_cast<float>(0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * inner);
}

float gelu_derivative(float x) {
  const double cdf = 0.5 * (1.0 + std::erf(x * std::numbers::sqrt2 / 2.0));
  const double pdf = std::exp(-0.5 * x * x) * std::numbers::inv_sqrtpi / std::numbers::sqrt2;
  return static_cast<float>(cdf + x * pdf);
}

bool activation_saves_tensor(Activation activation) {
  return activation != Activation::kNone;
}

void activate(Activation activation, std::span<float> values) {
  switch (activation) {
    case Activation::kNone:
      return;
    case Activation::kRelu:
      for (float& v : values)
        v = v > 0.0f ? v : 0.0f;
      return;
    case Activation::kGelu:
      for (float& v : values)
        v = gelu(v);
      return;
    case Activation::kTanh:
      for (float& v : values)
        v = std::tanh(v);
      return;
    case Activation::kGeluTanh:
      for (float& v : values)
        v = gelu_tanh(v);
      return;
  }
}

void activation_backward(Activation activation, std::span<float> gradient,
                         std::span<const float> saved) {
  IPUSIM_CHECK(activation == Activation::kNone || gradient.size() == saved.size());
  switch (activation) {
    case Activation::kNone:
      return;
    case Activation::kRelu:
      for (std::size_t i = 0; i < gradient.size(); ++i)
        gradient[i] = saved[i] > 0.0f ? gradient[i] : 0.0f;
      return;
    case Activation::kGelu:
      for (std::size_t i = 0; i < gradient.size(); ++i)
        gradient[i] *= gelu_derivative(saved[i]);
      return;
    case Activation::kTanh:
      for (std::size_t i = 0; i < gradient.size(); ++i)
        gradient[i] *= 1.0f - saved[i] * saved[i];
      return;
    case Activation::kGeluTanh:
      for (std::size_t i = 0; i < gradient.size(); ++i)
        gradient[i] *= gelu_tanh_derivative(saved[i]);
      return;
  }
}

std::uint64_t dropout_seed(std::uint64_t layer_seed, const ForwardContext& context) {
  return derive_seed(derive_seed(layer_seed, static_cast<std::uint64_t>(context.microbatch)),
                     static_cast<std::uint64_t>(context.repeat));
}

std::array<std::uint32_t, 2> seed_words(std::uint64_t seed) {
  return {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)};
}

std::uint64_t seed_value(const std::array<std::uint32_t, 2>& words) {
  return words[0] | (static_cast<std::uint64_t>(words[1]) << 32);
}

void apply_dropout_mask(std::span<float> values, double rate, std::uint64_t seed, DType dtype) {
  const auto scale = static_cast<float>(1.0 / (1.0 - rate));
  Rng rng(seed);
  for (float& value : values)
    value = rng.uniform() >= rate ? value * scale : 0.0f;
  round_to_dtype(values, dtype);
}

}  // namespace detail
}  // namespace ipusim::models
