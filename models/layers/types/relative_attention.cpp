// relative_attention: multi-head self-attention with relative positions as Conformer's encoder
// runs it (WeNet's RelPositionMultiHeadedAttention, which Graphcore's Conformer keeps): over
// [sequence, hidden] with an optional padding mask, each head h scores query i against key j as
//   ((q_i + u_h) · k_j + (q_i + v_h) · p_j) / sqrt(d),
// p = PE Wpos the sinusoidal position table [sequence, hidden] projected without bias, u and v
// learned per head ([heads, d], d = hidden / heads). As WeNet, no relative shift is applied: the
// table has one row per position. With "shared_kv", keys and values come from one projection,
// as Graphcore's Conformer writes it (linear_kv, speech/conformer/pytorch/src/layers/attention.py
// at graphcore/examples v3.0.0).

#include <array>
#include <cmath>

#include "models/kernels/kernels_internal.hpp"
#include "models/layers/types/transformer_family.hpp"
#include "sim/core/checked.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {
namespace {

struct RelativeAttentionFields {
  std::int64_t heads = 0;
  double rate = 0;
  bool shared_kv = false;
};

const std::array kRelativeAttentionKeys = {
    positive_int_key<&RelativeAttentionFields::heads>("heads",
                                                      "heads; must divide the input's last axis"),
    dropout_rate_key<&RelativeAttentionFields::rate>("dropout", 0,
                                                     "the rate of the probabilities' dropout"),
    bool_key<&RelativeAttentionFields::shared_kv>(
        "shared_kv", false, "keys and values from one projection (Graphcore's Conformer)"),
};

void read_relative_attention(const core::ConfigNode& layer, LayerParams& params) {
  read_keys(layer, kRelativeAttentionKeys, params);
}

const RelativeAttentionFields& relative_fields(const Layer& layer) {
  return own_fields<RelativeAttentionFields>(layer.params);
}

Shape relative_attention_shape(const Layer& layer, const std::vector<InputShape>& inputs) {
  const Shape& x = inputs[0].shape;
  const std::int64_t heads = relative_fields(layer).heads;
  if (x.size() != 2)
    fail_layer(layer, "needs an input of shape [sequence, hidden], but " + input_text(inputs[0]));
  if (x[1] % heads != 0 || (x[1] / heads) % 2 != 0) {
    fail_layer(layer, "has " + std::to_string(heads) +
                          " heads, which must divide hidden (the last axis) into even head "
                          "sizes, but " +
                          input_text(inputs[0]));
  }
  if (inputs.size() == 2)
    expect_sequence(layer, inputs[1], x[0], "a padding mask");
  return x;
}

// Q, K and V (K alone when shared), the context; the probabilities and their dropped-out copy.
// The projected position table is the same for every sample and is rebuilt for the backward.
LayerCost relative_attention_cost(const Layer& layer, const std::vector<Shape>& inputs,
                                  const CostSizes& size) {
  using core::checked_add;
  using core::checked_mul;
  const RelativeAttentionFields& f = relative_fields(layer);
  const std::int64_t s = inputs.front()[0];
  const std::int64_t h = inputs.front()[1];
  const std::int64_t projections = f.shared_kv ? 3 : 4;
  const std::int64_t square = checked_mul(h, h, kParamCount);
  LayerCost cost;
  cost.params =
      checked_add(checked_mul(projections, checked_add(square, h, kParamCount), kParamCount),
                  checked_add(square, 2 * h, kParamCount), kParamCount);
  cost.param_tensors = int(2 * projections + 3);  // W and b each, Wpos, u and v
  cost.flops = FlopsRule::kProducts;
  cost.seed_bytes = f.rate > 0 ? kDropoutSeedBytes : 0;
  const std::int64_t scores =
      checked_mul(f.heads, checked_mul(s, s, kAttentionMatrix), kAttentionMatrix);
  const std::int64_t kept =
      checked_add(checked_mul(projections + 1, s * h, kAttentionMatrix),
                  checked_mul(f.rate > 0 ? 2 : 1, scores, kAttentionMatrix), kAttentionMatrix);
  cost.saved_bytes = checked_mul(kept, size.d, kAttentionMatrix);
  return cost;
}

// The position projection runs once per micro-batch on the IPU; operations are per sample, so
// it is priced per sample, which overstates it by (b - 1) / b of one [s, h] x [h, h] product.
std::vector<Operation> relative_attention_operations(const Layer& layer,
                                                     const std::vector<Shape>& inputs,
                                                     const Shape& /*output*/) {
  const RelativeAttentionFields& f = relative_fields(layer);
  const double s = double(inputs.front()[0]);
  const double h = double(inputs.front()[1]);
  const double heads = double(f.heads);
  const double scores = heads * s * s;
  std::vector<Operation> ops = {
      product("qkv_projection", OpClass::kMatmul, {s, h, (f.shared_kv ? 2 : 3) * h}),
      product("position_projection", OpClass::kMatmul, {s, h, h}),
      vector_op("position_biases", OpClass::kElementwise, 2 * s * h, 1),
      product("content_scores", OpClass::kMatmul, {s, h / heads, s, heads, false}),
      product("position_scores", OpClass::kMatmul, {s, h / heads, s, heads, false}),
      vector_op("score_sum", OpClass::kElementwise, scores, 1),
      softmax_op("softmax", OpClass::kReduction, scores, 2, s),
  };
  if (f.rate > 0)
    ops.push_back(
        lowered(vector_op("attention_dropout", OpClass::kElementwise, scores, kDropoutFlops),
                VectorLowering::kDropout, s));
  ops.push_back(product("context", OpClass::kMatmul, {s, s, h / heads, heads, false}));
  ops.push_back(product("output_projection", OpClass::kMatmul, {s, h, h}));
  return ops;
}

using detail::as_matrix;
using Stride = Eigen::OuterStride<>;
using RelativeHead = Eigen::Map<detail::RowMatrix, 0, Stride>;
using ConstRelativeHead = Eigen::Map<const detail::RowMatrix, 0, Stride>;

// The sinusoidal table of Vaswani et al. as WeNet builds it: row t, columns 2i and 2i + 1 are
// sin and cos of t / 10000^(2i / hidden).
Tensor sinusoid_table(std::int64_t sequence, std::int64_t hidden) {
  Tensor table({sequence, hidden});
  for (std::int64_t t = 0; t < sequence; ++t) {
    for (std::int64_t i = 0; i < hidden; i += 2) {
      const double angle = double(t) * std::exp(-double(i) * std::log(10000.0) / double(hidden));
      table[t * hidden + i] = float(std::sin(angle));
      table[t * hidden + i + 1] = float(std::cos(angle));
    }
  }
  return table;
}

// Where each parameter sits: Wq, bq, Wk, bk, (Wv, bv,) Wo, bo, Wpos, u, v.
struct RelativeSlots {
  explicit RelativeSlots(bool shared)
      : key(2), value(shared ? 2 : 4), out(shared ? 4 : 6), pos(out + 2), u(pos + 1), v(pos + 2) {}
  std::size_t key, value, out, pos, u, v;
};

enum RelativeSaved : std::size_t { kRelX, kRelQ, kRelK, kRelV };

class RelativeAttentionKernel final : public Kernel {
 public:
  RelativeAttentionKernel(const Layer& layer, const std::vector<Shape>& inputs, DType dtype,
                          std::uint64_t seed)
      : Kernel(layer.type, dtype, inputs, inputs.at(0)),
        fields_(relative_fields(layer)),
        slots_(fields_.shared_kv),
        s_(inputs.at(0).at(0)),
        hidden_(inputs.at(0).at(1)),
        head_(hidden_ / fields_.heads),
        table_(sinusoid_table(s_, hidden_)),
        seed_(derive_seed(seed, layer.id)) {
    IPUSIM_CHECK(inputs.size() <= 2 && hidden_ % fields_.heads == 0);
  }

  std::vector<ParameterSpec> parameters() const override {
    const ParameterSpec square{ParameterSpec::Role::kWeight, {hidden_, hidden_}, hidden_, hidden_};
    const ParameterSpec bias{ParameterSpec::Role::kBias, {hidden_}, hidden_, hidden_};
    const ParameterSpec per_head{
        ParameterSpec::Role::kWeight, {fields_.heads, head_}, head_, fields_.heads};
    std::vector<ParameterSpec> specs;
    for (std::size_t i = 0; i < slots_.out / 2 + 1; ++i) {
      specs.push_back(square);
      specs.push_back(bias);
    }
    specs.push_back(square);
    specs.push_back(per_head);
    specs.push_back(per_head);
    return specs;
  }

  ForwardResult forward(const std::vector<const Tensor*>& inputs, std::span<const Tensor> params,
                        const ForwardContext& context) const override {
    const Tensor& x = *inputs.at(0);
    IPUSIM_CHECK(inputs.size() == input_shapes().size() && x.sample_shape() == input_shapes()[0]);
    SavedState saved;
    saved.dtype = dtype();
    const std::uint64_t seed = detail::dropout_seed(seed_, context);
    if (fields_.rate > 0)
      saved.seeds.push_back(detail::seed_words(seed));
    saved.tensors.push_back(x);
    saved.tensors.push_back(project(x, params[0], &params[1]));
    saved.tensors.push_back(project(x, params[slots_.key], &params[slots_.key + 1]));
    if (!fields_.shared_kv)
      saved.tensors.push_back(project(x, params[slots_.value], &params[slots_.value + 1]));
    const Tensor& q = saved.tensors[kRelQ];
    const Tensor& k = saved.tensors[kRelK];
    const Tensor& v = saved.tensors[fields_.shared_kv ? kRelK : kRelV];
    Tensor p =
        probabilities(q, k, positions(params), inputs.size() == 2 ? inputs[1] : nullptr, params);
    Tensor dropped = p;
    if (fields_.rate > 0 && !context.inference)
      detail::apply_dropout_mask(dropped.values(), fields_.rate, seed, dtype());
    Tensor context_values = weighted_sum(dropped, v);
    Tensor y = project(context_values, params[slots_.out], &params[slots_.out + 1]);
    saved.tensors.push_back(std::move(p));
    if (fields_.rate > 0)
      saved.tensors.push_back(std::move(dropped));
    saved.tensors.push_back(std::move(context_values));
    return {std::move(y), std::move(saved), {}};
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& saved,
                               std::span<const Tensor> params,
                               std::span<GradientAccumulator> gradients) const override;

 private:
  Tensor project(const Tensor& x, const Tensor& weights, const Tensor* bias) const {
    Tensor out(x.shape());
    detail::linear(x, weights, bias, out);
    round_to_dtype(out, dtype());
    return out;
  }

  Tensor positions(std::span<const Tensor> params) const {
    return project(table_, params[slots_.pos], nullptr);
  }

  // q + u or q + v: head h's columns shifted by row h of the bias.
  Tensor shifted(const Tensor& q, const Tensor& bias) const {
    Tensor out = q;
    for (std::int64_t row = 0; row < q.elements() / hidden_; ++row) {
      for (std::int64_t c = 0; c < hidden_; ++c)
        out[row * hidden_ + c] += bias[c];
    }
    round_to_dtype(out, dtype());
    return out;
  }

  ConstRelativeHead head(const Tensor& t, std::int64_t at) const {
    return ConstRelativeHead(t.data() + at, s_, head_, Stride(hidden_));
  }
  RelativeHead head(Tensor& t, std::int64_t at) const {
    return RelativeHead(t.data() + at, s_, head_, Stride(hidden_));
  }
  std::int64_t offset(std::int64_t b, std::int64_t h) const { return b * s_ * hidden_ + h * head_; }
  std::int64_t block(std::int64_t b, std::int64_t h) const {
    return (b * fields_.heads + h) * s_ * s_;
  }
  float scale() const { return float(1.0 / std::sqrt(double(head_))); }

  Tensor probabilities(const Tensor& q, const Tensor& k, const Tensor& pos, const Tensor* mask,
                       std::span<const Tensor> params) const;
  Tensor weighted_sum(const Tensor& p, const Tensor& v) const;
  // The scores' gradient, from the output's: through the output projection, the weighted sum
  // (adding V's gradient into `dv`), dropout and the softmax, scaled.
  Tensor score_gradient(const Tensor& dy, const SavedState& saved, std::span<const Tensor> params,
                        std::span<GradientAccumulator> gradients, Tensor& dv) const;

  RelativeAttentionFields fields_;
  RelativeSlots slots_;
  std::int64_t s_;
  std::int64_t hidden_;
  std::int64_t head_;
  Tensor table_;
  std::uint64_t seed_;
};

Tensor RelativeAttentionKernel::probabilities(const Tensor& q, const Tensor& k, const Tensor& pos,
                                              const Tensor* mask,
                                              std::span<const Tensor> params) const {
  const Tensor qu = shifted(q, params[slots_.u]);
  const Tensor qv = shifted(q, params[slots_.v]);
  Tensor p({q.batch(), fields_.heads, s_, s_});
  for (std::int64_t b = 0; b < q.batch(); ++b) {
    for (std::int64_t h = 0; h < fields_.heads; ++h) {
      auto scores = as_matrix(p.data() + block(b, h), s_, s_);
      scores.noalias() = head(qu, offset(b, h)) * head(k, offset(b, h)).transpose();
      scores.noalias() += head(qv, offset(b, h)) * head(pos, h * head_).transpose();
      scores *= scale();
      if (mask != nullptr) {
        for (std::int64_t j = 0; j < s_; ++j)
          scores.col(j).array() += (1.0f - (*mask)[b * s_ + j]) * kMaskedScore;
      }
    }
  }
  detail::softmax_rows(p.data(), p.elements() / s_, s_, p.data());
  round_to_dtype(p, dtype());
  return p;
}

Tensor RelativeAttentionKernel::weighted_sum(const Tensor& p, const Tensor& v) const {
  Tensor out(v.shape());
  for (std::int64_t b = 0; b < v.batch(); ++b) {
    for (std::int64_t h = 0; h < fields_.heads; ++h)
      head(out, offset(b, h)).noalias() =
          as_matrix(p.data() + block(b, h), s_, s_) * head(v, offset(b, h));
  }
  round_to_dtype(out, dtype());
  return out;
}

Tensor RelativeAttentionKernel::score_gradient(const Tensor& dy, const SavedState& saved,
                                               std::span<const Tensor> params,
                                               std::span<GradientAccumulator> gradients,
                                               Tensor& dv) const {
  const std::size_t probs = fields_.shared_kv ? kRelK + 1 : kRelV + 1;
  const Tensor& p = saved.tensors[probs];
  const Tensor& dropped = saved.tensors[fields_.rate > 0 ? probs + 1 : probs];
  const Tensor& context = saved.tensors.back();
  const Tensor& v = saved.tensors[fields_.shared_kv ? kRelK : kRelV];
  const std::int64_t rows = dy.elements() / hidden_;
  detail::accumulate_weight_gradient(context.data(), dy.data(), rows, hidden_, hidden_, dtype(),
                                     gradients[slots_.out]);
  detail::accumulate_bias_gradient(dy, hidden_, dtype(), gradients[slots_.out + 1]);
  Tensor d_context(dy.shape());
  detail::add_input_gradient(dy, params[slots_.out], d_context);
  round_to_dtype(d_context, dtype());
  Tensor d_p(p.shape());
  for (std::int64_t b = 0; b < dy.batch(); ++b) {
    for (std::int64_t h = 0; h < fields_.heads; ++h) {
      as_matrix(d_p.data() + block(b, h), s_, s_).noalias() =
          head(d_context, offset(b, h)) * head(v, offset(b, h)).transpose();
      head(dv, offset(b, h)).noalias() =
          as_matrix(dropped.data() + block(b, h), s_, s_).transpose() *
          head(d_context, offset(b, h));
    }
  }
  round_to_dtype(d_p, dtype());
  if (fields_.rate > 0)
    detail::apply_dropout_mask(d_p.values(), fields_.rate, detail::seed_value(saved.seeds.at(0)),
                               dtype());
  detail::softmax_rows_backward(p.data(), d_p.data(), d_p.elements() / s_, s_, d_p.data());
  for (float& value : d_p.values())
    value *= scale();
  round_to_dtype(d_p, dtype());
  return d_p;
}

std::vector<Tensor> RelativeAttentionKernel::backward(
    const Tensor& output_gradient, const SavedState& saved, std::span<const Tensor> params,
    std::span<GradientAccumulator> gradients) const {
  const Tensor& x = saved.tensors[kRelX];
  const Tensor& q = saved.tensors[kRelQ];
  const Tensor& k = saved.tensors[kRelK];
  Tensor dv(x.shape());
  const Tensor d_scores = score_gradient(output_gradient, saved, params, gradients, dv);
  const Tensor pos = positions(params);
  const Tensor qu = shifted(q, params[slots_.u]);
  const Tensor qv = shifted(q, params[slots_.v]);
  Tensor d_content_q(x.shape()), d_position_q(x.shape()), dk(x.shape()), d_pos(pos.shape());
  for (std::int64_t b = 0; b < x.batch(); ++b) {
    for (std::int64_t h = 0; h < fields_.heads; ++h) {
      const auto ds = as_matrix(d_scores.data() + block(b, h), s_, s_);
      head(d_content_q, offset(b, h)).noalias() = ds * head(k, offset(b, h));
      head(d_position_q, offset(b, h)).noalias() = ds * head(pos, h * head_);
      head(dk, offset(b, h)).noalias() = ds.transpose() * head(qu, offset(b, h));
      head(d_pos, h * head_).noalias() += ds.transpose() * head(qv, offset(b, h));
    }
  }
  for (Tensor* t : {&d_content_q, &d_position_q, &dk, &d_pos})
    round_to_dtype(*t, dtype());
  // u and v shift every row of q, so each gets its term's Q gradient summed over rows.
  detail::accumulate_bias_gradient(d_content_q, hidden_, dtype(), gradients[slots_.u]);
  detail::accumulate_bias_gradient(d_position_q, hidden_, dtype(), gradients[slots_.v]);
  detail::accumulate_weight_gradient(table_.data(), d_pos.data(), s_, hidden_, hidden_, dtype(),
                                     gradients[slots_.pos]);
  Tensor dq = detail::rounded_sum(d_content_q, d_position_q, dtype());
  if (fields_.shared_kv)
    dk = detail::rounded_sum(dk, dv, dtype());
  const std::int64_t rows = x.elements() / hidden_;
  Tensor dx(x.shape());
  std::vector<std::pair<const Tensor*, std::size_t>> projections = {{&dq, 0}, {&dk, slots_.key}};
  if (!fields_.shared_kv) {
    round_to_dtype(dv, dtype());
    projections.emplace_back(&dv, slots_.value);
  }
  for (const auto& [gradient, slot] : projections) {
    detail::accumulate_weight_gradient(x.data(), gradient->data(), rows, hidden_, hidden_, dtype(),
                                       gradients[slot]);
    detail::accumulate_bias_gradient(*gradient, hidden_, dtype(), gradients[slot + 1]);
    detail::add_input_gradient(*gradient, params[slot], dx);
  }
  round_to_dtype(dx, dtype());
  std::vector<Tensor> result;
  result.push_back(std::move(dx));
  if (input_shapes().size() == 2)  // the mask takes no gradient
    result.emplace_back(detail::with_batch(output_gradient.batch(), input_shapes()[1]));
  return result;
}

std::unique_ptr<Kernel> relative_attention_kernel(const Layer& layer,
                                                  const std::vector<Shape>& inputs, DType dtype,
                                                  std::uint64_t seed) {
  return std::make_unique<RelativeAttentionKernel>(layer, inputs, dtype, seed);
}

}  // namespace

LayerTypeDef relative_attention_type() {
  return {.name = "relative_attention",
          .keys = kRelativeAttentionKeys,
          .inputs = LayerInputs::kOneOrTwo,
          .view = false,
          .read = read_relative_attention,
          .shape = relative_attention_shape,
          .cost = relative_attention_cost,
          .lower = relative_attention_operations,
          .kernel = relative_attention_kernel};
}

}  // namespace ipusim::models
