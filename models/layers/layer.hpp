#pragma once
// One layer of a model as the config describes it, after its own fields are validated.
// Shapes are per sample (no batch dimension); the layer graph fills in the inferred shapes.

#include <any>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/error.hpp"

namespace ipusim::models {

using Shape = std::vector<std::int64_t>;

// A layer type is its row's position in the registry (layer_types.cpp). The types code singles
// out by value are named here, in the registry's order; a type added since has no name here and
// is looked up by its config name (layer_type_from_name).
enum class LayerType {
  kInput,
  kFlatten,
  kReshape,
  kDense,
  kConv2d,
  kMaxPool2d,
  kGlobalAveragePool2d,  // the mean of each channel over height and width: [H, W, C] -> [C]
  kDropout,
  kRelu,
  kGelu,
  kAdd,
  kConcat,
  kSlice,  // a contiguous range of one per-sample axis (a view in Poplar)
  kSoftmaxCrossEntropy,
  kEmbedding,           // token (and position, type) embeddings, with a layer norm by default
  kTransformerEncoder,  // one BERT-style encoder layer (post-LN)
  kLayerNorm,           // over the last per-sample axis
  kBatchNorm,           // over every axis but the last, with running statistics
  kSoftmax,             // over the last per-sample axis
  kTanh,
  kAttention,  // multi-head self-attention over [sequence, hidden]
  // The two halves of a transformer_encoder, which Graphcore's BERT places on different
  // pipeline stages (att_ffn_placement): attention, dropout, add and layer norm; then dense,
  // gelu, dense, dropout, add and layer norm.
  kTransformerAttention,
  kTransformerFeedForward,
  kAvgPool2d,      // the mean of each window of [height, width, channels], per channel
  kTokenMean,      // the mean over the first per-sample axis: [S, H...] -> [H...]
  kTokenSelect,    // one position of the first per-sample axis: [S, H...] -> [H...]
  kPositionTable,  // a learned tensor of the input's shape added to it (ViT's pos_embedding)
  kClassToken,     // a learned [H] token prepended to [S, H]: [S + 1, H] (ViT's class token)
};

// kGeluTanh: GELU's tanh approximation, PyTorch's nn.GELU(approximate='tanh') (GPT-2's).
enum class Activation { kNone, kRelu, kGelu, kTanh, kGeluTanh };

// gelu's "approximate": none (the exact erf form) or tanh.
enum class GeluForm { kExact, kTanh };

// What a dropout keeps between its forward and backward, per micro-batch: poprand's seed, a pair
// of uint32 (graphcore/poplibs include/poprand/RandomGen.hpp), from which the mask is redrawn.
inline constexpr std::int64_t kDropoutSeedBytes = 8;

// Defaults: layer_norm's epsilon is PyTorch's (nn.LayerNorm); batch_norm's epsilon and momentum
// are Keras' (BatchNormalization). embedding and transformer_encoder normalise with BERT's
// layer_norm_eps and drop out at its hidden and attention dropout probability.
inline constexpr double kLayerNormEpsilon = 1e-5;
inline constexpr double kBatchNormEpsilon = 1e-3;
inline constexpr double kBatchNormMomentum = 0.99;
inline constexpr double kBertLayerNormEpsilon = 1e-12;
inline constexpr double kBertDropout = 0.1;

// What an attention layer adds to the score of a padded key, as BERT does (its extended
// attention mask is (1 - mask) x -10000).
inline constexpr float kMaskedScore = -10000.0f;

// How a conv2d or pool window is padded along height and width. "same" is TensorFlow's rule,
// which depends on the input: ceil(size / stride) outputs per axis, the padding split with the
// odd row or column at the end. Otherwise the four pads are explicit, as PyTorch's `padding` and
// ONNX's `pads` give them; "valid" is all four 0.
struct Padding {
  bool same = false;
  std::int64_t top = 0;  // rows before the image (0 with "same")
  std::int64_t left = 0;
  std::int64_t bottom = 0;  // rows after it
  std::int64_t right = 0;

  bool operator==(const Padding&) const = default;
};
inline constexpr Padding kValidPadding{};
inline constexpr Padding kSamePadding{.same = true};

// Profiled figures that replace the cost model for a layer, per micro-batch.
struct CyclesOverride {
  std::int64_t forward = 0;
  std::int64_t backward = 0;
};

// Every type-specific field, with the defaults a config may omit. Only the fields of the
// layer's type are meaningful.
struct LayerParams {
  Shape shape;                                // input (optional), reshape (target)
  std::int64_t units = 0;                     // dense
  Activation activation = Activation::kNone;  // dense, conv2d
  bool bias = true;                           // dense, conv2d
  std::int64_t filters = 0;                   // conv2d
  std::int64_t groups = 1;                    // conv2d: channel groups (depthwise: the channels)
  std::int64_t kernel_h = 0;                  // conv2d
  std::int64_t kernel_w = 0;
  std::int64_t stride_h = 1;  // conv2d, maxpool2d, avgpool2d
  std::int64_t stride_w = 1;
  std::int64_t dilation_h = 1;  // conv2d, conv1d (dilation_w): the step between kernel taps
  std::int64_t dilation_w = 1;
  std::int64_t pool_h = 2;  // maxpool2d, avgpool2d
  std::int64_t pool_w = 2;
  Padding padding;                        // conv2d, maxpool2d, avgpool2d
  bool ceil_mode = false;                 // maxpool2d, avgpool2d: PyTorch's ceil_mode
  bool count_include_pad = true;          // avgpool2d: padding counts in the divisor
  bool causal = false;                    // attention, transformer_encoder, _attention
  std::int64_t index = 0;                 // token_select: the position (negative: from the end)
  double rate = 0.0;                      // dropout; attention, transformer_*: "dropout"
  std::int64_t axis = -1;                 // concat (default -1), slice (default 0): per-sample axis
  std::int64_t slice_start = 0;           // slice
  std::int64_t slice_size = 0;            // slice
  std::int64_t hidden = 0;                // embedding, transformer_*
  std::int64_t heads = 0;                 // transformer_encoder, _attention, attention
  std::int64_t sequence_length = 0;       // embedding, transformer_*
  std::int64_t ffn = 0;                   // transformer_encoder, _feed_forward
  std::int64_t vocab_size = 0;            // embedding
  std::int64_t max_positions = 0;         // embedding (default: sequence_length)
  std::int64_t token_types = 0;           // embedding
  bool positions = true;                  // embedding: a position table (false: a plain lookup)
  bool normalized = true;                 // embedding: a layer norm after the sum ("layer_norm")
  double epsilon = 0.0;                   // layer_norm, batch_norm, embedding
  double momentum = 0.0;                  // batch_norm
  GeluForm gelu_form = GeluForm::kExact;  // gelu
  // The fields of a type that declares them in a struct of its own file rather than here: set
  // by its key readers, read with own_fields<T>.
  std::any own;
};

// The type's own fields, which its reading set.
template <class Fields>
const Fields& own_fields(const LayerParams& params) {
  const Fields* fields = std::any_cast<Fields>(&params.own);
  IPUSIM_CHECK(fields != nullptr);
  return *fields;
}

// The type's own fields, or their defaults for a layer built in code rather than read.
template <class Fields>
const Fields& own_fields_or_defaults(const LayerParams& params) {
  static const Fields defaults{};
  return params.own.has_value() ? own_fields<Fields>(params) : defaults;
}

// The type's own fields to set, made with their defaults on first use.
template <class Fields>
Fields& own_fields_to_set(LayerParams& params) {
  if (!params.own.has_value())
    params.own = Fields{};
  Fields* fields = std::any_cast<Fields>(&params.own);
  IPUSIM_CHECK(fields != nullptr);
  return *fields;
}

struct Layer {
  std::string id;
  LayerType type = LayerType::kInput;
  std::vector<std::string> inputs;  // layer ids; empty means the model input
  LayerParams params;
  std::optional<CyclesOverride> cycles;
  bool checkpoint = false;  // a recomputation checkpoint: stashed when recomputing
  std::string tied_to;      // dense: the embedding whose word matrix it shares (transposed)
  std::string pointer;      // JSON pointer of the layer in the config, for errors
  std::string file;         // the config file that set the layer, for errors
};

}  // namespace ipusim::models
