#pragma once
// Shared pieces of the kernel implementations: models/kernels/kernels_*.cpp, and the layer types
// under models/layers/types/ that hold their own kernel.

#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include <Eigen/Core>

#include "models/kernels/kernel_factories.hpp"
#include "models/kernels/kernels.hpp"
#include "models/layers/window.hpp"

namespace ipusim::models::detail {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixMap = Eigen::Map<RowMatrix>;
using ConstMatrixMap = Eigen::Map<const RowMatrix>;

inline MatrixMap as_matrix(float* data, std::int64_t rows, std::int64_t cols) {
  return MatrixMap(data, rows, cols);
}
inline ConstMatrixMap as_matrix(const float* data, std::int64_t rows, std::int64_t cols) {
  return ConstMatrixMap(data, rows, cols);
}

Shape with_batch(std::int64_t batch, const Shape& sample_shape);

// Applies the activation in place, turning pre-activations into outputs.
void activate(Activation activation, std::span<float> values);
// Multiplies `gradient` by the activation's derivative, given what dense/conv2d saved for it:
// the output for relu and tanh, the pre-activation for gelu.
void activation_backward(Activation activation, std::span<float> gradient,
                         std::span<const float> saved);
// Whether dense/conv2d keep a second tensor (output or pre-activation) for the activation.
bool activation_saves_tensor(Activation activation);

float gelu(float x);
// An activation applied element by element, as a layer type's file states it: forward
// y = forward(x); backward dx = dy · derivative(kept), `kept` the input or the output (what the
// derivative reads, and all the kernel keeps). A zero derivative gives a zero gradient.
struct Pointwise {
  float (*forward)(float x);
  double (*derivative)(float kept);
  bool keeps_input;
};
std::unique_ptr<Kernel> make_pointwise(const Layer& layer, const std::vector<Shape>& inputs,
                                       DType dtype, Pointwise rule);

// The logistic sigmoid in double, 1 / (1 + e^-x): sigmoid's, swish's and glu's gate.
inline double logistic(float x) {
  return 1.0 / (1.0 + std::exp(-static_cast<double>(x)));
}
float gelu_derivative(float x);

// Dropout masks: the seed of a micro-batch's mask is keyed by (layer seed, micro-batch,
// repeat); the mask zeroes each element with probability `rate`, drawing in element order,
// and scales the kept ones by 1 / (1 - rate), then rounds to `dtype`.
std::uint64_t dropout_seed(std::uint64_t layer_seed, const ForwardContext& context);
std::array<std::uint32_t, 2> seed_words(std::uint64_t seed);
std::uint64_t seed_value(const std::array<std::uint32_t, 2>& words);
void apply_dropout_mask(std::span<float> values, double rate, std::uint64_t seed, DType dtype);

// Matrix pieces shared by dense and the transformer kernels. Gradients are rounded to `dtype`
// before they reach the accumulator.
void add_bias(Tensor& values, const Tensor& bias);
// out = x W (+ b), x of [rows, in] and W of [in, cols]; `out` must have rows x cols elements.
void linear(const Tensor& x, const Tensor& weights, const Tensor* bias, Tensor& out);
// Sums the gradient's rows (in row order) into the bias accumulator.
void accumulate_bias_gradient(const Tensor& gradient, std::int64_t width, DType dtype,
                              GradientAccumulator& accumulator);
// Adds `a^T b` ([k x m]^T [k x n]) into the weight accumulator.
void accumulate_weight_gradient(const float* a, const float* b, std::int64_t k, std::int64_t m,
                                std::int64_t n, DType dtype, GradientAccumulator& accumulator);
// dx (+)= g W^T for g of [rows, cols] and W of [in, cols]; not rounded.
void add_input_gradient(const Tensor& g, const Tensor& weights, Tensor& dx);

// Layer norm over rows of `width` (see the top of models/kernels/kernels.hpp): y = gamma x̂ + beta.
void layer_norm_forward(const float* x, std::int64_t rows, std::int64_t width, const float* gamma,
                        const float* beta, double epsilon, float* y);
// Writes dx from the input x and dy, and adds dgamma and dbeta (sums over rows in row order).
void layer_norm_backward(const float* x, const float* dy, std::int64_t rows, std::int64_t width,
                         const float* gamma, double epsilon, float* dx, float* dgamma,
                         float* dbeta);

// Pieces of BERT's layers (kernels_transformer.cpp): a per-feature parameter (a layer norm's
// scale or bias); the layer norm of rows of x's last axis, rounded to `dtype`; its input
// gradient, adding its scale and bias gradients to `gradients` (two); a + b, rounded.
ParameterSpec feature_vector(ParameterSpec::Role role, std::int64_t width);
Tensor normalized(const Tensor& x, const Tensor& gamma, const Tensor& beta, DType dtype,
                  double epsilon);
Tensor normalized_gradient(const Tensor& x, const Tensor& dy, const Tensor& gamma, DType dtype,
                           std::span<GradientAccumulator> gradients, double epsilon);
Tensor rounded_sum(const Tensor& a, const Tensor& b, DType dtype);

// Softmax of each row of `width` (sums in double): y may alias x.
void softmax_rows(const float* x, std::int64_t rows, std::int64_t width, float* y);
// dx = y (dy - sum(dy y)) for each row; dx may alias dy.
void softmax_rows_backward(const float* y, const float* dy, std::int64_t rows, std::int64_t width,
                           float* dx);

// Multi-head self-attention over samples of [sequence, hidden], as the attention and
// transformer_encoder kernels run it. Parameters, in order: Wq, bq, Wk, bk, Wv, bv, Wo, bo, each
// W of [hidden, hidden] applied as x W + b. Head k reads columns k·d .. (k+1)·d - 1 of Q, K and V
// and writes those of the context (d = hidden / heads); scores are Q Kᵀ / sqrt(d), plus
// kMaskedScore x (1 - mask) per key when a padding mask is given. A causal core lets query i
// attend to keys j <= i only: the others score -inf, as PyTorch's additive causal mask gives, so
// their probabilities are exactly 0 (and so are their gradients). With a dropout rate the
// probabilities are dropped out with the mask of `seed`, drawn over [batch, heads, s, s] in
// order. forward keeps X, Q, K, V, P, the dropped-out P (with a rate only) and the context.
class AttentionCore {
 public:
  AttentionCore(std::int64_t sequence, std::int64_t hidden, std::int64_t heads, double rate,
                bool causal, DType dtype);

  std::vector<ParameterSpec> parameters() const;

  // Appends what backward needs to `saved` and returns the output. Without `seed` (inference)
  // nothing is dropped out.
  Tensor forward(const Tensor& x, const Tensor* mask, std::span<const Tensor> params,
                 std::optional<std::uint64_t> seed, std::vector<Tensor>& saved) const;
  // `saved` holds what forward appended; returns the input gradient (rounded).
  Tensor backward(const Tensor& output_gradient, std::span<const Tensor> saved,
                  std::span<const Tensor> params, std::uint64_t seed,
                  std::span<GradientAccumulator> gradients) const;

  std::size_t saved_tensors() const { return rate_ > 0 ? 7 : 6; }
  bool drops_out() const { return rate_ > 0; }

 private:
  void scores(const Tensor& q, const Tensor& k, const Tensor* mask, Tensor& p) const;
  // Through the Q, K and V projections: their weight and bias gradients, and the input's.
  Tensor projections_backward(const Tensor& x, std::vector<Tensor>& d_qkv,
                              std::span<const Tensor> params,
                              std::span<GradientAccumulator> gradients) const;

  std::int64_t sequence_;
  std::int64_t hidden_;
  std::int64_t heads_;
  std::int64_t head_size_;
  double rate_;
  bool causal_;
  DType dtype_;
};

}  // namespace ipusim::models::detail
