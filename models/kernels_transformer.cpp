// embedding and transformer_encoder: BERT's input embeddings and its post-LN encoder layer,
// composed of the attention, layer norm, dense, gelu and dropout pieces of the other kernels.

// GCC 12 warns inside its own AVX-512 intrinsics when Eigen's GEMM is inlined (see
// kernels_linear.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <cmath>
#include <sstream>

#include "models/kernels_internal.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models::detail {
namespace {

ParameterSpec feature_vector(ParameterSpec::Role role, std::int64_t width) {
  return {role, {width}, width, width};
}

// The layer norm of rows of x's last axis, rounded to `dtype`.
Tensor normalized(const Tensor& x, const Tensor& gamma, const Tensor& beta, DType dtype,
                  double epsilon = kBertLayerNormEpsilon) {
  const std::int64_t width = gamma.elements();
  Tensor y(x.shape());
  layer_norm_forward(x.data(), x.elements() / width, width, gamma.data(), beta.data(), epsilon,
                     y.data());
  round_to_dtype(y, dtype);
  return y;
}

// The layer norm's input gradient; adds its scale and bias gradients to `gradients` (two).
Tensor normalized_gradient(const Tensor& x, const Tensor& dy, const Tensor& gamma, DType dtype,
                           std::span<GradientAccumulator> gradients,
                           double epsilon = kBertLayerNormEpsilon) {
  const std::int64_t width = gamma.elements();
  Tensor dx(x.shape());
  Tensor dgamma({width});
  Tensor dbeta({width});
  layer_norm_backward(x.data(), dy.data(), x.elements() / width, width, gamma.data(), epsilon,
                      dx.data(), dgamma.data(), dbeta.data());
  for (Tensor* tensor : {&dx, &dgamma, &dbeta})
    round_to_dtype(*tensor, dtype);
  gradients[0].add(dgamma.values());
  gradients[1].add(dbeta.values());
  return dx;
}

// a + b, rounded.
Tensor sum(const Tensor& a, const Tensor& b, DType dtype) {
  Tensor out = a;
  for (std::int64_t i = 0; i < out.elements(); ++i)
    out[i] += b[i];
  round_to_dtype(out, dtype);
  return out;
}

// BERT's embeddings: word[id] + position[i] + type[t] for the token at position i, then a
// layer norm (epsilon 1e-12 unless set). Parameters: the word table [vocab_size, hidden], the
// position table [max_positions, hidden] unless "positions" is false, the type table
// [token_types, hidden] when token_types > 0, and the layer norm's scale and bias unless
// "layer_norm" is false (which, without positions, leaves a plain lookup). Token types come
// from the second input; without it every token has type 0, as BERT's token_type_ids default.
// The tables' gradients are scatter-adds in row order (sample by sample, position by
// position), so repeated tokens sum deterministically.
class EmbeddingKernel final : public Kernel {
 public:
  EmbeddingKernel(const Layer& layer, const std::vector<Shape>& inputs, DType dtype)
      : Kernel(LayerType::kEmbedding, dtype, inputs,
               {layer.params.sequence_length, layer.params.hidden}),
        layer_(layer),
        p_(layer.params) {
    IPUSIM_CHECK(!inputs.empty() && inputs.size() <= (p_.token_types > 0 ? 2u : 1u));
    for (const Shape& shape : inputs)
      IPUSIM_CHECK(shape == Shape{p_.sequence_length});
  }

  std::vector<ParameterSpec> parameters() const override {
    std::vector<ParameterSpec> specs{table(p_.vocab_size)};
    if (p_.positions)
      specs.push_back(table(p_.max_positions));
    if (p_.token_types > 0)
      specs.push_back(table(p_.token_types));
    if (p_.normalized) {
      specs.push_back(feature_vector(ParameterSpec::Role::kScale, p_.hidden));
      specs.push_back(feature_vector(ParameterSpec::Role::kBias, p_.hidden));
    }
    return specs;
  }

  std::int64_t saved_bytes_per_sample() const override {
    const std::int64_t sum = p_.normalized ? p_.sequence_length * p_.hidden : 0;
    return sum * dtype_bytes(dtype()) +
           4 * p_.sequence_length * static_cast<std::int64_t>(input_shapes().size());
  }

  ForwardResult forward(const std::vector<const Tensor*>& inputs, std::span<const Tensor> params,
                        const ForwardContext& /*context*/) const override {
    IPUSIM_CHECK(inputs.size() == input_shapes().size());
    SavedState saved;
    saved.dtype = dtype();
    read_ids(*inputs[0], p_.vocab_size, "token id", "the vocabulary", saved.indices);
    if (inputs.size() == 2)
      read_ids(*inputs[1], p_.token_types, "token type", "its token types", saved.indices);
    const std::int64_t rows = inputs[0]->elements();
    Tensor embedded({inputs[0]->batch(), p_.sequence_length, p_.hidden});
    for (std::int64_t r = 0; r < rows; ++r) {
      float* out = embedded.data() + r * p_.hidden;
      add_row(out, params[0], saved.indices[std::size_t(r)]);
      if (p_.positions)
        add_row(out, params[1], r % p_.sequence_length);
      if (p_.token_types > 0)
        add_row(out, params[type_table()], type_of(saved, r));
    }
    round_to_dtype(embedded, dtype());
    if (!p_.normalized)
      return {std::move(embedded), std::move(saved), {}};
    const std::size_t norm = tables();
    Tensor y = normalized(embedded, params[norm], params[norm + 1], dtype(), p_.epsilon);
    saved.tensors.push_back(std::move(embedded));
    return {std::move(y), std::move(saved), {}};
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& saved,
                               std::span<const Tensor> params,
                               std::span<GradientAccumulator> gradients) const override {
    const std::size_t norm = tables();
    const Tensor d_embedded =
        p_.normalized ? normalized_gradient(saved.tensors.at(0), output_gradient, params[norm],
                                            dtype(), gradients.subspan(norm), p_.epsilon)
                      : output_gradient;
    const std::int64_t rows = d_embedded.elements() / p_.hidden;
    std::vector<Tensor> tables;
    for (std::size_t t = 0; t < norm; ++t)
      tables.emplace_back(params[t].shape());
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* row = d_embedded.data() + r * p_.hidden;
      scatter_add(tables[0], saved.indices[std::size_t(r)], row);
      if (p_.positions)
        scatter_add(tables[1], r % p_.sequence_length, row);
      if (p_.token_types > 0)
        scatter_add(tables[type_table()], type_of(saved, r), row);
    }
    for (std::size_t t = 0; t < norm; ++t) {
      round_to_dtype(tables[t], dtype());
      gradients[t].add(tables[t].values());
    }
    std::vector<Tensor> none;  // token ids and types take no gradient
    for (const Shape& shape : input_shapes())
      none.emplace_back(with_batch(output_gradient.batch(), shape));
    return none;
  }

 private:
  ParameterSpec table(std::int64_t rows) const {
    return {ParameterSpec::Role::kEmbedding, {rows, p_.hidden}, rows, p_.hidden};
  }

  // How many tables come before the layer norm's parameters; where the type table is.
  std::size_t tables() const { return 1 + (p_.positions ? 1 : 0) + (p_.token_types > 0 ? 1 : 0); }
  std::size_t type_table() const { return p_.positions ? 2 : 1; }

  void add_row(float* out, const Tensor& table, std::int64_t index) const {
    const float* row = table.data() + index * p_.hidden;
    for (std::int64_t j = 0; j < p_.hidden; ++j)
      out[j] += row[j];
  }

  std::int64_t type_of(const SavedState& saved, std::int64_t row) const {
    const auto rows = static_cast<std::int64_t>(saved.indices.size()) / std::int64_t(2);
    return input_shapes().size() == 2 ? saved.indices[std::size_t(rows + row)] : 0;
  }

  void scatter_add(Tensor& table, std::int64_t index, const float* row) const {
    float* into = table.data() + index * p_.hidden;
    for (std::int64_t j = 0; j < p_.hidden; ++j)
      into[j] += row[j];
  }

  // Appends the ids of `values` to `ids`, checking that each is an integer in [0, count).
  void read_ids(const Tensor& values, std::int64_t count, const std::string& what,
                const std::string& range, std::vector<std::int32_t>& ids) const {
    for (std::int64_t i = 0; i < values.elements(); ++i) {
      const float value = values[i];
      const bool integral = std::isfinite(value) && std::floor(value) == value;
      if (integral && value >= 0 && value < static_cast<float>(count)) {
        ids.push_back(static_cast<std::int32_t>(value));
        continue;
      }
      std::ostringstream text;
      text << "layer '" << layer_.id << "' (embedding) reads " << what << " " << value
           << " (sample " << i / p_.sequence_length << ", position " << i % p_.sequence_length
           << "), which is "
           << (integral ? "outside " + range + " [0, " + std::to_string(count) + ")"
                        : std::string("not an integer"));
      throw core::ConfigError(layer_.file, layer_.pointer, text.str());
    }
  }

  Layer layer_;
  LayerParams p_;
};

// One BERT encoder layer, post-LN: y1 = LN(x + dropout(attention(x))), out = LN(y1 +
// dropout(gelu(y1 W1 + b1) W2 + b2)), layer norms with epsilon 1e-12. Parameters: the
// attention's eight (see AttentionCore), the first layer norm's scale and bias, W1 [hidden,
// ffn], b1, W2 [ffn, hidden], b2, the second layer norm's scale and bias. Its three dropouts
// (attention probabilities, attention output, FFN output) share the rate and draw from seeds
// keyed by (layer, which dropout, micro-batch, repeat). An optional second input is the padding
// mask.
class TransformerEncoderKernel final : public Kernel {
 public:
  TransformerEncoderKernel(const Layer& layer, const std::vector<Shape>& inputs, DType dtype,
                           std::uint64_t seed)
      : Kernel(LayerType::kTransformerEncoder, dtype, inputs, inputs.at(0)),
        attention_(layer.params.sequence_length, layer.params.hidden, layer.params.heads,
                   layer.params.rate, dtype),
        hidden_(layer.params.hidden),
        ffn_(layer.params.ffn),
        rate_(layer.params.rate),
        seed_(derive_seed(seed, layer.id)) {
    IPUSIM_CHECK(inputs.size() <= 2 &&
                 inputs[0] == (Shape{layer.params.sequence_length, layer.params.hidden}));
  }

  std::vector<ParameterSpec> parameters() const override {
    std::vector<ParameterSpec> specs = attention_.parameters();
    specs.push_back(feature_vector(ParameterSpec::Role::kScale, hidden_));
    specs.push_back(feature_vector(ParameterSpec::Role::kBias, hidden_));
    specs.push_back({ParameterSpec::Role::kWeight, {hidden_, ffn_}, hidden_, ffn_});
    specs.push_back(feature_vector(ParameterSpec::Role::kBias, ffn_));
    specs.push_back({ParameterSpec::Role::kWeight, {ffn_, hidden_}, ffn_, hidden_});
    specs.push_back(feature_vector(ParameterSpec::Role::kBias, hidden_));
    specs.push_back(feature_vector(ParameterSpec::Role::kScale, hidden_));
    specs.push_back(feature_vector(ParameterSpec::Role::kBias, hidden_));
    return specs;
  }

  std::int64_t saved_bytes_per_sample() const override {
    const std::int64_t s = input_shapes()[0][0];
    return attention_.saved_bytes_per_sample() +
           (3 * s * hidden_ + 2 * s * ffn_) * dtype_bytes(dtype());
  }
  std::int64_t saved_bytes_per_micro_batch() const override {
    return rate_ > 0 ? 3 * kDropoutSeedBytes : 0;
  }

  ForwardResult forward(const std::vector<const Tensor*>& inputs, std::span<const Tensor> params,
                        const ForwardContext& context) const override {
    IPUSIM_CHECK(inputs.size() == input_shapes().size() &&
                 inputs[0]->sample_shape() == input_shapes()[0]);
    const Tensor& x = *inputs[0];
    SavedState saved;
    saved.dtype = dtype();
    const auto seeds = dropout_seeds(context);
    if (rate_ > 0) {
      for (const std::uint64_t seed : seeds)
        saved.seeds.push_back(seed_words(seed));
    }
    const bool training = !context.inference;
    Tensor attended =
        attention_.forward(x, inputs.size() == 2 ? inputs[1] : nullptr, params.first(8),
                           training ? std::optional(seeds[0]) : std::nullopt, saved.tensors);
    if (training)
      drop(attended, seeds[1]);
    Tensor first = sum(x, attended, dtype());
    Tensor y1 = normalized(first, params[8], params[9], dtype());
    Tensor z({x.batch(), input_shapes()[0][0], ffn_});
    linear(y1, params[10], &params[11], z);
    round_to_dtype(z, dtype());
    Tensor g = z;
    activate(Activation::kGelu, g.values());
    round_to_dtype(g, dtype());
    Tensor f(x.shape());
    linear(g, params[12], &params[13], f);
    round_to_dtype(f, dtype());
    if (training)
      drop(f, seeds[2]);
    Tensor second = sum(y1, f, dtype());
    Tensor y = normalized(second, params[14], params[15], dtype());
    for (Tensor* kept : {&first, &y1, &z, &g, &second})
      saved.tensors.push_back(std::move(*kept));
    return {std::move(y), std::move(saved), {}};
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& saved,
                               std::span<const Tensor> params,
                               std::span<GradientAccumulator> gradients) const override {
    const std::size_t n = attention_.saved_tensors();
    const std::span<const Tensor> kept(saved.tensors);
    const Tensor& first = kept[n];
    const Tensor& y1 = kept[n + 1];
    const Tensor& z = kept[n + 2];
    const Tensor& g = kept[n + 3];
    const std::int64_t rows = first.elements() / hidden_;
    std::array<std::uint64_t, 3> seeds{};
    for (std::size_t k = 0; k < saved.seeds.size(); ++k)
      seeds[k] = seed_value(saved.seeds[k]);
    const Tensor d_second = normalized_gradient(kept[n + 4], output_gradient, params[14], dtype(),
                                                gradients.subspan(14));
    Tensor d_f = d_second;
    drop(d_f, seeds[2]);
    accumulate_weight_gradient(g.data(), d_f.data(), rows, ffn_, hidden_, dtype(), gradients[12]);
    accumulate_bias_gradient(d_f, hidden_, dtype(), gradients[13]);
    Tensor d_z(z.shape());
    add_input_gradient(d_f, params[12], d_z);
    round_to_dtype(d_z, dtype());
    activation_backward(Activation::kGelu, d_z.values(), z.values());
    round_to_dtype(d_z, dtype());
    accumulate_weight_gradient(y1.data(), d_z.data(), rows, hidden_, ffn_, dtype(), gradients[10]);
    accumulate_bias_gradient(d_z, ffn_, dtype(), gradients[11]);
    Tensor d_y1 = d_second;
    add_input_gradient(d_z, params[10], d_y1);
    round_to_dtype(d_y1, dtype());
    const Tensor d_first =
        normalized_gradient(first, d_y1, params[8], dtype(), gradients.subspan(8, 2));
    Tensor d_attended = d_first;
    drop(d_attended, seeds[1]);
    std::vector<Tensor> result;
    result.push_back(sum(attention_.backward(d_attended, kept.first(n), params.first(8), seeds[0],
                                             gradients.first(8)),
                         d_first, dtype()));
    if (input_shapes().size() == 2)  // the mask takes no gradient
      result.emplace_back(with_batch(output_gradient.batch(), input_shapes()[1]));
    return result;
  }

 private:
  std::array<std::uint64_t, 3> dropout_seeds(const ForwardContext& context) const {
    std::array<std::uint64_t, 3> seeds{};
    for (std::size_t k = 0; k < seeds.size(); ++k)
      seeds[k] = dropout_seed(derive_seed(seed_, k), context);
    return seeds;
  }

  void drop(Tensor& values, std::uint64_t seed) const {
    if (rate_ > 0)
      apply_dropout_mask(values.values(), rate_, seed, dtype());
  }

  AttentionCore attention_;
  std::int64_t hidden_;
  std::int64_t ffn_;
  double rate_;
  std::uint64_t seed_;
};

}  // namespace

std::unique_ptr<Kernel> make_embedding(const Layer& layer, const std::vector<Shape>& inputs,
                                       DType dtype) {
  return std::make_unique<EmbeddingKernel>(layer, inputs, dtype);
}

std::unique_ptr<Kernel> make_transformer_encoder(const Layer& layer,
                                                 const std::vector<Shape>& inputs, DType dtype,
                                                 std::uint64_t seed) {
  return std::make_unique<TransformerEncoderKernel>(layer, inputs, dtype, seed);
}

}  // namespace ipusim::models::detail
