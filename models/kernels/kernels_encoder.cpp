// transformer_encoder and its two halves, transformer_attention and transformer_feed_forward:
// BERT's post-LN encoder layer, composed of the attention, layer norm, dense, gelu and dropout
// pieces of the other kernels. The encoder's kernel is its attention block followed by its
// feed-forward block, so a model of halves computes what the model of encoders does, bit for
// bit, when each half is keyed like its encoder (its dropout seeds derive from the layer id).

// GCC 12 warns inside its own AVX-512 intrinsics when Eigen's GEMM is inlined (see
// kernels_linear.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "models/kernels/kernels_internal.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models::detail {
namespace {

// The seeds of an encoder's three dropout masks, numbered as the encoder draws them: the
// attention probabilities', the attention block output's, the feed-forward output's. A half
// draws its own of the three, so it keeps the encoder's masks.
using DropoutSeeds = std::array<std::uint64_t, 3>;
constexpr std::size_t kProbabilitiesDropout = 0;
constexpr std::size_t kAttentionOutputDropout = 1;
constexpr std::size_t kFeedForwardDropout = 2;

void drop_with(Tensor& values, double rate, std::uint64_t seed, DType dtype) {
  if (rate > 0)
    apply_dropout_mask(values.values(), rate, seed, dtype);
}

// y = LN(x + dropout(attention(x))). Parameters: the attention's eight (see AttentionCore),
// then the layer norm's scale and bias. Keeps the attention's tensors and the layer norm's
// input.
class AttentionBlock {
 public:
  static constexpr std::size_t kParameters = 10;

  AttentionBlock(const LayerParams& p, DType dtype)
      : attention_(p.sequence_length, p.hidden, p.heads, p.rate, p.causal, dtype),
        hidden_(p.hidden),
        rate_(p.rate),
        dtype_(dtype) {}

  std::vector<ParameterSpec> parameters() const {
    std::vector<ParameterSpec> specs = attention_.parameters();
    specs.push_back(feature_vector(ParameterSpec::Role::kScale, hidden_));
    specs.push_back(feature_vector(ParameterSpec::Role::kBias, hidden_));
    return specs;
  }

  std::size_t saved_tensors() const { return attention_.saved_tensors() + 1; }

  // Without `seeds` (inference) nothing is dropped out.
  Tensor forward(const Tensor& x, const Tensor* mask, std::span<const Tensor> params,
                 const std::optional<DropoutSeeds>& seeds, std::vector<Tensor>& saved) const {
    Tensor attended = attention_.forward(
        x, mask, params.first(8),
        seeds ? std::optional((*seeds)[kProbabilitiesDropout]) : std::nullopt, saved);
    if (seeds)
      drop_with(attended, rate_, (*seeds)[kAttentionOutputDropout], dtype_);
    Tensor first = rounded_sum(x, attended, dtype_);
    Tensor y = normalized(first, params[8], params[9], dtype_, kBertLayerNormEpsilon);
    saved.push_back(std::move(first));
    return y;
  }

  Tensor backward(const Tensor& output_gradient, std::span<const Tensor> saved,
                  std::span<const Tensor> params, const DropoutSeeds& seeds,
                  std::span<GradientAccumulator> gradients) const {
    const std::size_t n = attention_.saved_tensors();
    const Tensor d_first = normalized_gradient(saved[n], output_gradient, params[8], dtype_,
                                               gradients.subspan(8, 2), kBertLayerNormEpsilon);
    Tensor d_attended = d_first;
    drop_with(d_attended, rate_, seeds[kAttentionOutputDropout], dtype_);
    return rounded_sum(attention_.backward(d_attended, saved.first(n), params.first(8),
                                           seeds[kProbabilitiesDropout], gradients.first(8)),
                       d_first, dtype_);
  }

 private:
  AttentionCore attention_;
  std::int64_t hidden_;
  double rate_;
  DType dtype_;
};

// y = LN(x + dropout(gelu(x W1 + b1) W2 + b2)). Parameters: W1 [hidden, ffn], b1, W2 [ffn,
// hidden], b2, the layer norm's scale and bias. Keeps its input, the GELU's input and output,
// and the layer norm's input.
class FeedForwardBlock {
 public:
  static constexpr std::size_t kParameters = 6;

  FeedForwardBlock(const LayerParams& p, DType dtype)
      : hidden_(p.hidden), ffn_(p.ffn), rate_(p.rate), dtype_(dtype) {}

  std::vector<ParameterSpec> parameters() const {
    return {{ParameterSpec::Role::kWeight, {hidden_, ffn_}, hidden_, ffn_},
            feature_vector(ParameterSpec::Role::kBias, ffn_),
            {ParameterSpec::Role::kWeight, {ffn_, hidden_}, ffn_, hidden_},
            feature_vector(ParameterSpec::Role::kBias, hidden_),
            feature_vector(ParameterSpec::Role::kScale, hidden_),
            feature_vector(ParameterSpec::Role::kBias, hidden_)};
  }

  Tensor forward(const Tensor& x, std::span<const Tensor> params,
                 const std::optional<DropoutSeeds>& seeds, std::vector<Tensor>& saved) const {
    Tensor z({x.batch(), x.dim(1), ffn_});
    linear(x, params[0], &params[1], z);
    round_to_dtype(z, dtype_);
    Tensor g = z;
    activate(Activation::kGelu, g.values());
    round_to_dtype(g, dtype_);
    Tensor f(x.shape());
    linear(g, params[2], &params[3], f);
    round_to_dtype(f, dtype_);
    if (seeds)
      drop_with(f, rate_, (*seeds)[kFeedForwardDropout], dtype_);
    Tensor second = rounded_sum(x, f, dtype_);
    Tensor y = normalized(second, params[4], params[5], dtype_, kBertLayerNormEpsilon);
    saved.push_back(x);
    for (Tensor* kept : {&z, &g, &second})
      saved.push_back(std::move(*kept));
    return y;
  }

  Tensor backward(const Tensor& output_gradient, std::span<const Tensor> saved,
                  std::span<const Tensor> params, const DropoutSeeds& seeds,
                  std::span<GradientAccumulator> gradients) const {
    const Tensor& x = saved[0];
    const Tensor& z = saved[1];
    const Tensor& g = saved[2];
    const std::int64_t rows = x.elements() / hidden_;
    const Tensor d_second = normalized_gradient(saved[3], output_gradient, params[4], dtype_,
                                                gradients.subspan(4), kBertLayerNormEpsilon);
    Tensor d_f = d_second;
    drop_with(d_f, rate_, seeds[kFeedForwardDropout], dtype_);
    accumulate_weight_gradient(g.data(), d_f.data(), rows, ffn_, hidden_, dtype_, gradients[2]);
    accumulate_bias_gradient(d_f, hidden_, dtype_, gradients[3]);
    Tensor d_z(z.shape());
    add_input_gradient(d_f, params[2], d_z);
    round_to_dtype(d_z, dtype_);
    activation_backward(Activation::kGelu, d_z.values(), z.values());
    round_to_dtype(d_z, dtype_);
    accumulate_weight_gradient(x.data(), d_z.data(), rows, hidden_, ffn_, dtype_, gradients[0]);
    accumulate_bias_gradient(d_z, ffn_, dtype_, gradients[1]);
    Tensor d_x = d_second;
    add_input_gradient(d_z, params[0], d_x);
    round_to_dtype(d_x, dtype_);
    return d_x;
  }

 private:
  std::int64_t hidden_;
  std::int64_t ffn_;
  double rate_;
  DType dtype_;
};

// transformer_encoder (both blocks), transformer_attention (the first) or
// transformer_feed_forward (the second). Parameters, saved tensors and dropout seeds are the
// blocks' in order. With a dropout rate each block's masks draw from seeds keyed by (layer,
// which dropout, micro-batch, repeat). An attention block takes an optional padding mask as
// second input.
class TransformerKernel final : public Kernel {
 public:
  TransformerKernel(const Layer& layer, const std::vector<Shape>& inputs, DType dtype,
                    std::uint64_t seed)
      : Kernel(layer.type, dtype, inputs, inputs.at(0)),
        rate_(layer.params.rate),
        seed_(derive_seed(seed, layer.id)) {
    if (layer.type != LayerType::kTransformerFeedForward) {
      attention_.emplace(layer.params, dtype);
      dropouts_ = {kProbabilitiesDropout, kAttentionOutputDropout};
    }
    if (layer.type != LayerType::kTransformerAttention) {
      feed_forward_.emplace(layer.params, dtype);
      dropouts_.push_back(kFeedForwardDropout);
    }
    IPUSIM_CHECK(inputs.size() <= (attention_ ? 2u : 1u) &&
                 inputs[0] == (Shape{layer.params.sequence_length, layer.params.hidden}));
  }

  std::vector<ParameterSpec> parameters() const override {
    std::vector<ParameterSpec> specs;
    if (attention_)
      specs = attention_->parameters();
    if (feed_forward_) {
      for (ParameterSpec& spec : feed_forward_->parameters())
        specs.push_back(std::move(spec));
    }
    return specs;
  }

  ForwardResult forward(const std::vector<const Tensor*>& inputs, std::span<const Tensor> params,
                        const ForwardContext& context) const override {
    IPUSIM_CHECK(inputs.size() == input_shapes().size() &&
                 inputs[0]->sample_shape() == input_shapes()[0]);
    SavedState saved;
    saved.dtype = dtype();
    DropoutSeeds seeds{};
    for (const std::size_t k : dropouts_) {
      seeds[k] = dropout_seed(derive_seed(seed_, k), context);
      if (rate_ > 0)
        saved.seeds.push_back(seed_words(seeds[k]));
    }
    const auto drawn = context.inference ? std::nullopt : std::optional(seeds);
    Tensor attended;
    if (attention_)
      attended =
          attention_->forward(*inputs[0], inputs.size() == 2 ? inputs[1] : nullptr,
                              params.first(AttentionBlock::kParameters), drawn, saved.tensors);
    if (!feed_forward_)
      return {std::move(attended), std::move(saved), {}};
    Tensor y =
        feed_forward_->forward(attention_ ? attended : *inputs[0],
                               params.last(FeedForwardBlock::kParameters), drawn, saved.tensors);
    return {std::move(y), std::move(saved), {}};
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& saved,
                               std::span<const Tensor> params,
                               std::span<GradientAccumulator> gradients) const override {
    DropoutSeeds seeds{};
    for (std::size_t i = 0; i < saved.seeds.size(); ++i)
      seeds[dropouts_.at(i)] = seed_value(saved.seeds[i]);
    const std::span<const Tensor> kept(saved.tensors);
    const std::size_t n = attention_ ? attention_->saved_tensors() : 0;
    const std::size_t p = attention_ ? AttentionBlock::kParameters : 0;
    std::vector<Tensor> result;
    Tensor d_middle;
    if (feed_forward_)
      d_middle = feed_forward_->backward(output_gradient, kept.subspan(n), params.subspan(p), seeds,
                                         gradients.subspan(p));
    if (attention_)
      result.push_back(attention_->backward(feed_forward_ ? d_middle : output_gradient,
                                            kept.first(n), params.first(p), seeds,
                                            gradients.first(p)));
    else
      result.push_back(std::move(d_middle));
    if (input_shapes().size() == 2)  // the mask takes no gradient
      result.emplace_back(with_batch(output_gradient.batch(), input_shapes()[1]));
    return result;
  }

 private:
  std::optional<AttentionBlock> attention_;
  std::optional<FeedForwardBlock> feed_forward_;
  std::vector<std::size_t> dropouts_;  // which of the encoder's dropouts this layer draws
  double rate_;
  std::uint64_t seed_;
};

}  // namespace

std::unique_ptr<Kernel> make_transformer(const Layer& layer, const std::vector<Shape>& inputs,
                                         DType dtype, std::uint64_t seed) {
  return std::make_unique<TransformerKernel>(layer, inputs, dtype, seed);
}

}  // namespace ipusim::models::detail
