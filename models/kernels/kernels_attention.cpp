// attention: multi-head self-attention (AttentionCore, shared with transformer_encoder).

// GCC 12 warns inside its own AVX-512 intrinsics when Eigen's GEMM is inlined (see
// kernels_linear.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <cmath>
#include <limits>

#include "models/kernels/kernels_internal.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models::detail {
namespace {

using Stride = Eigen::OuterStride<>;
using HeadMap = Eigen::Map<RowMatrix, 0, Stride>;
using ConstHeadMap = Eigen::Map<const RowMatrix, 0, Stride>;

enum Saved : std::size_t { kX, kQ, kK, kV, kP };

ParameterSpec square_weight(std::int64_t hidden) {
  return {ParameterSpec::Role::kWeight, {hidden, hidden}, hidden, hidden};
}

// attention over [sequence, hidden] samples, with an optional padding mask as second input.
class AttentionKernel final : public Kernel {
 public:
  AttentionKernel(const Layer& layer, const std::vector<Shape>& inputs, DType dtype,
                  std::uint64_t seed)
      : Kernel(LayerType::kAttention, dtype, inputs, inputs.at(0)),
        core_(inputs.at(0).at(0), inputs.at(0).at(1), layer.params.heads, layer.params.rate,
              layer.params.causal, dtype),
        seed_(derive_seed(seed, layer.id)) {
    IPUSIM_CHECK(inputs.size() <= 2);
  }

  std::vector<ParameterSpec> parameters() const override { return core_.parameters(); }

  ForwardResult forward(const std::vector<const Tensor*>& inputs, std::span<const Tensor> params,
                        const ForwardContext& context) const override {
    IPUSIM_CHECK(inputs.size() == input_shapes().size() &&
                 inputs[0]->sample_shape() == input_shapes()[0]);
    const std::uint64_t seed = dropout_seed(seed_, context);
    SavedState saved;
    saved.dtype = dtype();
    if (core_.drops_out())
      saved.seeds.push_back(seed_words(seed));
    Tensor y = core_.forward(*inputs[0], inputs.size() == 2 ? inputs[1] : nullptr, params,
                             context.inference ? std::nullopt : std::optional(seed), saved.tensors);
    return {std::move(y), std::move(saved), {}};
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& saved,
                               std::span<const Tensor> params,
                               std::span<GradientAccumulator> gradients) const override {
    const std::uint64_t seed = core_.drops_out() ? seed_value(saved.seeds.at(0)) : 0;
    std::vector<Tensor> result;
    result.push_back(core_.backward(output_gradient, saved.tensors, params, seed, gradients));
    if (input_shapes().size() == 2)  // the mask takes no gradient
      result.emplace_back(with_batch(output_gradient.batch(), input_shapes()[1]));
    return result;
  }

 private:
  AttentionCore core_;
  std::uint64_t seed_;
};

}  // namespace

AttentionCore::AttentionCore(std::int64_t sequence, std::int64_t hidden, std::int64_t heads,
                             double rate, bool causal, DType dtype)
    : sequence_(sequence),
      hidden_(hidden),
      heads_(heads),
      head_size_(hidden / heads),
      rate_(rate),
      causal_(causal),
      dtype_(dtype) {
  IPUSIM_CHECK(heads > 0 && hidden % heads == 0 && rate >= 0 && rate < 1);
}

std::vector<ParameterSpec> AttentionCore::parameters() const {
  std::vector<ParameterSpec> specs;
  for (int i = 0; i < 4; ++i) {
    specs.push_back(square_weight(hidden_));
    specs.push_back({ParameterSpec::Role::kBias, {hidden_}, hidden_, hidden_});
  }
  return specs;
}

// Writes the softmax of each head's scaled (and masked) scores into `p`, [batch, heads, s, s].
void AttentionCore::scores(const Tensor& q, const Tensor& k, const Tensor* mask, Tensor& p) const {
  const std::int64_t s = sequence_;
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_size_)));
  for (std::int64_t b = 0; b < q.batch(); ++b) {
    for (std::int64_t h = 0; h < heads_; ++h) {
      const std::int64_t at = b * s * hidden_ + h * head_size_;
      MatrixMap block = as_matrix(p.data() + (b * heads_ + h) * s * s, s, s);
      block.noalias() = ConstHeadMap(q.data() + at, s, head_size_, Stride(hidden_)) *
                        ConstHeadMap(k.data() + at, s, head_size_, Stride(hidden_)).transpose();
      block *= scale;
      if (mask != nullptr) {
        for (std::int64_t j = 0; j < s; ++j)
          block.col(j).array() += (1.0f - (*mask)[b * s + j]) * kMaskedScore;
      }
      if (causal_) {
        for (std::int64_t i = 0; i + 1 < s; ++i)
          block.row(i).tail(s - 1 - i).setConstant(-std::numeric_limits<float>::infinity());
      }
    }
  }
  softmax_rows(p.data(), p.elements() / s, s, p.data());
  round_to_dtype(p, dtype_);
}

Tensor AttentionCore::forward(const Tensor& x, const Tensor* mask, std::span<const Tensor> params,
                              std::optional<std::uint64_t> seed, std::vector<Tensor>& saved) const {
  const std::int64_t s = sequence_;
  const std::int64_t batch = x.batch();
  std::vector<Tensor> qkv;
  for (std::size_t i = 0; i < 3; ++i) {
    Tensor projected(x.shape());
    linear(x, params[2 * i], &params[2 * i + 1], projected);
    round_to_dtype(projected, dtype_);
    qkv.push_back(std::move(projected));
  }
  Tensor p({batch, heads_, s, s});
  scores(qkv[0], qkv[1], mask, p);
  Tensor dropped = p;
  if (drops_out() && seed)
    apply_dropout_mask(dropped.values(), rate_, *seed, dtype_);
  Tensor context(x.shape());
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t h = 0; h < heads_; ++h) {
      const std::int64_t at = b * s * hidden_ + h * head_size_;
      HeadMap(context.data() + at, s, head_size_, Stride(hidden_)).noalias() =
          as_matrix(dropped.data() + (b * heads_ + h) * s * s, s, s) *
          ConstHeadMap(qkv[2].data() + at, s, head_size_, Stride(hidden_));
    }
  }
  round_to_dtype(context, dtype_);
  Tensor y(x.shape());
  linear(context, params[6], &params[7], y);
  round_to_dtype(y, dtype_);
  saved.push_back(x);
  for (Tensor& tensor : qkv)
    saved.push_back(std::move(tensor));
  saved.push_back(std::move(p));
  if (drops_out())
    saved.push_back(std::move(dropped));
  saved.push_back(std::move(context));
  return y;
}

Tensor AttentionCore::backward(const Tensor& output_gradient, std::span<const Tensor> saved,
                               std::span<const Tensor> params, std::uint64_t seed,
                               std::span<GradientAccumulator> gradients) const {
  IPUSIM_CHECK(saved.size() == saved_tensors());
  const std::int64_t s = sequence_;
  const Tensor& x = saved[kX];
  const Tensor& p = saved[kP];
  const Tensor& dropped = saved[drops_out() ? kP + 1 : kP];
  const Tensor& context = saved.back();
  const std::int64_t batch = x.batch();
  const std::int64_t rows = batch * s;
  accumulate_weight_gradient(context.data(), output_gradient.data(), rows, hidden_, hidden_, dtype_,
                             gradients[6]);
  accumulate_bias_gradient(output_gradient, hidden_, dtype_, gradients[7]);
  Tensor d_context(x.shape());
  add_input_gradient(output_gradient, params[6], d_context);
  round_to_dtype(d_context, dtype_);
  // The probabilities' gradient and V's, head by head; then through dropout and softmax.
  Tensor d_p(p.shape());
  std::vector<Tensor> d_qkv(3, Tensor(x.shape()));
  const auto head = [&](const Tensor& t, std::int64_t at) {
    return ConstHeadMap(t.data() + at, s, head_size_, Stride(hidden_));
  };
  const auto d_head = [&](Tensor& t, std::int64_t at) {
    return HeadMap(t.data() + at, s, head_size_, Stride(hidden_));
  };
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t h = 0; h < heads_; ++h) {
      const std::int64_t at = b * s * hidden_ + h * head_size_;
      const std::int64_t block = (b * heads_ + h) * s * s;
      as_matrix(d_p.data() + block, s, s).noalias() =
          head(d_context, at) * head(saved[kV], at).transpose();
      d_head(d_qkv[2], at).noalias() =
          as_matrix(dropped.data() + block, s, s).transpose() * head(d_context, at);
    }
  }
  round_to_dtype(d_p, dtype_);
  if (drops_out())
    apply_dropout_mask(d_p.values(), rate_, seed, dtype_);
  softmax_rows_backward(p.data(), d_p.data(), d_p.elements() / s, s, d_p.data());
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_size_)));
  for (float& value : d_p.values())
    value *= scale;
  round_to_dtype(d_p, dtype_);
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t h = 0; h < heads_; ++h) {
      const std::int64_t at = b * s * hidden_ + h * head_size_;
      const auto d_scores = as_matrix(d_p.data() + (b * heads_ + h) * s * s, s, s);
      d_head(d_qkv[0], at).noalias() = d_scores * head(saved[kK], at);
      d_head(d_qkv[1], at).noalias() = d_scores.transpose() * head(saved[kQ], at);
    }
  }
  return projections_backward(x, d_qkv, params, gradients);
}

Tensor AttentionCore::projections_backward(const Tensor& x, std::vector<Tensor>& d_qkv,
                                           std::span<const Tensor> params,
                                           std::span<GradientAccumulator> gradients) const {
  const std::int64_t rows = x.batch() * sequence_;
  Tensor dx(x.shape());
  for (std::size_t i = 0; i < 3; ++i) {
    round_to_dtype(d_qkv[i], dtype_);
    accumulate_weight_gradient(x.data(), d_qkv[i].data(), rows, hidden_, hidden_, dtype_,
                               gradients[2 * i]);
    accumulate_bias_gradient(d_qkv[i], hidden_, dtype_, gradients[2 * i + 1]);
    add_input_gradient(d_qkv[i], params[2 * i], dx);
  }
  round_to_dtype(dx, dtype_);
  return dx;
}

std::unique_ptr<Kernel> make_attention(const Layer& layer, const std::vector<Shape>& inputs,
                                       DType dtype, std::uint64_t seed) {
  return std::make_unique<AttentionKernel>(layer, inputs, dtype, seed);
}

}  // namespace ipusim::models::detail
