// embedding: BERT's input embeddings; the layer norm and sum the transformer kernels
// (kernels_encoder.cpp) share with it.

// GCC 12 warns inside its own AVX-512 intrinsics when Eigen's GEMM is inlined (see
// kernels_linear.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <cmath>
#include <sstream>

#include "models/kernels/kernels_internal.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models::detail {

ParameterSpec feature_vector(ParameterSpec::Role role, std::int64_t width) {
  return {role, {width}, width, width};
}

Tensor normalized(const Tensor& x, const Tensor& gamma, const Tensor& beta, DType dtype,
                  double epsilon) {
  const std::int64_t width = gamma.elements();
  Tensor y(x.shape());
  layer_norm_forward(x.data(), x.elements() / width, width, gamma.data(), beta.data(), epsilon,
                     y.data());
  round_to_dtype(y, dtype);
  return y;
}

Tensor normalized_gradient(const Tensor& x, const Tensor& dy, const Tensor& gamma, DType dtype,
                           std::span<GradientAccumulator> gradients, double epsilon) {
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

Tensor rounded_sum(const Tensor& a, const Tensor& b, DType dtype) {
  Tensor out = a;
  for (std::int64_t i = 0; i < out.elements(); ++i)
    out[i] += b[i];
  round_to_dtype(out, dtype);
  return out;
}

namespace {

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

}  // namespace

std::unique_ptr<Kernel> make_embedding(const Layer& layer, const std::vector<Shape>& inputs,
                                       DType dtype) {
  return std::make_unique<EmbeddingKernel>(layer, inputs, dtype);
}

}  // namespace ipusim::models::detail
