#pragma once
// What the layer type files (models/layers/types/) share: the rows of types that have nothing
// to read, cost or lower; shape checks several types make; and the builders of operations
// (models/layers/operations.hpp) they lower with.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/kernels/kernel_factories.hpp"
#include "models/kernels/kernels.hpp"
#include "models/layers/layer_type_def.hpp"
#include "models/layers/window.hpp"

namespace ipusim::models {

// What an overflow names: "its parameter count does not fit in 64 bits".
inline constexpr const char* kParamCount = "parameter count";
inline constexpr const char* kAttentionMatrix = "attention matrix (heads x sequence_length^2)";

// FLOPs per element the report counts for vector work. GELU and tanh evaluate a transcendental
// and a few multiply-adds.
// The most pieces an operation may be serialised into: it keeps compute-set counts in range, and
// a factor anywhere near it is no longer a plan.
inline constexpr std::int64_t kMaxSerialization = std::int64_t{1} << 20;

inline constexpr double kBiasFlops = 1;
inline constexpr double kReluFlops = 1;
inline constexpr double kTanhFlops = 4;
inline constexpr double kGeluFlops = 8;
inline constexpr double kDropoutFlops = 1;  // the multiply by the mask; the draw is integer work

// Row functions of a type without keys; of one that computes nothing (a view, or a concat,
// which copies at most): no cost but its shapes' and no operations; of one whose output has its
// input's shape.
void read_no_keys(const core::ConfigNode& layer, LayerParams& params);
LayerCost no_cost(const Layer& layer, const std::vector<Shape>& inputs, const CostSizes& size);
std::vector<Operation> no_operations(const Layer& layer, const std::vector<Shape>& inputs,
                                     const Shape& output);
Shape same_shape(const Layer& layer, const std::vector<InputShape>& inputs);

// A cost whose FLOPs are its operations', keeping `saved_bytes` per sample.
LayerCost operations_cost(std::int64_t saved_bytes);
// layer_norm's and batch_norm's: a scale and a bias per channel (the last axis); the kernel
// keeps the input and recomputes the statistics in backward.
LayerCost normalization_cost(const Layer& layer, const std::vector<Shape>& inputs,
                             const CostSizes& size);
// Dense's and conv2d's: `weights` and a bias of `biases` (when it has one), keeping the input and,
// unless the activation is none, the output.
LayerCost linear_cost(const Layer& layer, const CostSizes& size, std::int64_t weights,
                      std::int64_t biases);

// Shape inference's errors: "layer 'fc1' (dense) <message>", at the layer.
[[noreturn]] void fail_layer(const Layer& layer, const std::string& message);
// The input of a layer that takes one; the layer graph has checked the count.
const InputShape& only_input(const std::vector<InputShape>& inputs);
// An image is [height, width, channels].
void expect_image(const Layer& layer, const InputShape& input);
// The output of the layer's window (`what`: a kernel, a pool window) stepping over its one image
// input by its stride, with its padding (models/layers/window.hpp), giving `channels` channels
// (0: as many as the input). The window must fit the padded image.
Shape windowed_shape(const Layer& layer, const std::vector<InputShape>& inputs,
                     const std::string& what, std::int64_t channels);
// "[1, 1, 1, 1]": the pads as a config lists them, top, left, bottom, right.
std::string padding_text(const Padding& padding);

// The keys maxpool2d and avgpool2d share, and their reading: the stride defaults to the pool
// (as in Keras and PyTorch), and each pad may be at most half the window, as PyTorch requires,
// so that every window holds a pixel of the image.
inline const LayerKey kPoolKey =
    pair_key<&LayerParams::pool_h, &LayerParams::pool_w>("pool", 2, "the window: N or [h, w]");
inline const LayerKey kPoolStrideKey =
    own_key("stride", KeyKind::kPair, "the pool", "the window's step: N or [h, w]");
inline const LayerKey kCeilModeKey = bool_key<&LayerParams::ceil_mode>(
    "ceil_mode", false, "rounds the output size up (PyTorch's); the last window starts inside");
void read_pool(const core::ConfigNode& layer, LayerParams& params);
// A sequence of tokens, [tokens, features...]: two axes or more.
void expect_tokens(const Layer& layer, const InputShape& input);
// The layer's "axis" (concat, slice) as an index into inputs of `rank` axes.
std::size_t axis_index(const Layer& layer, std::size_t rank);
// An embedding's token ids and token types, and an attention's padding mask: one value per
// position of the sequence.
void expect_sequence(const Layer& layer, const InputShape& input, std::int64_t sequence,
                     const std::string& what);

// Products of [rows, inner] x [inner, cols], `count` times per sample. With weights, the right
// operand is a weight matrix read once per micro-batch; otherwise it is another activation.
struct Product {
  double rows = 0;
  double inner = 0;
  double cols = 0;
  double count = 1;
  bool weights = true;
};
Operation product(std::string name, OpClass op_class, const Product& p);
// Vector work over `elements` per sample; the backward reads the output gradient and what
// the forward saved.
Operation vector_op(std::string name, OpClass op_class, double elements, double flops_per_element,
                    int forward_sets = 1, int backward_sets = 1);
// `op`, vector work over its forward's elements, lowered as `lowering` over rows of `width`
// elements a sample; `batch_widens`: the micro-batch lengthens the rows instead of adding rows.
Operation lowered(Operation op, VectorLowering lowering, double width, bool batch_widens = false);
// A layer or batch norm over `elements` in rows of `width` (kLayerNormFlops and more when fused
// with a residual add): two compute sets a pass, and twice the forward's FLOPs backward.
Operation normalization_op(std::string name, double elements, double flops_per_element,
                           double width, VectorLowering lowering = VectorLowering::kLayerNorm,
                           bool batch_widens = false);
// A softmax over `elements` in rows of `width`: kSoftmaxFlops an element forward,
// kSoftmaxBackwardFlops backward, in one compute set.
Operation softmax_op(std::string name, OpClass op_class, double elements, int forward_sets,
                     double width);
// A convolution per sample: `positions` outputs, each a window of `taps` pixels of
// `in_channels`, split into `groups` groups, giving `filters` channels; `in` and `out` are the
// input's and output's elements.
struct Convolution {
  double positions = 0;
  double taps = 0;
  std::int64_t in_channels = 0;
  std::int64_t filters = 0;
  std::int64_t groups = 1;
  double in = 0;
  double out = 0;
  // Its geometry as poplin plans it: the output and input fields (rows x columns; 0: a single
  // row of `positions`), the kernel (0: a single row of `taps`) and the stride.
  std::int64_t out_height = 1;
  std::int64_t out_width = 0;
  std::int64_t in_height = 1;
  std::int64_t in_width = 0;
  std::int64_t kernel_height = 1;
  std::int64_t kernel_width = 0;
  std::int64_t stride = 1;
};
// The input channels per group that fill the AMP's input: poplin's weightsPerConvUnit for half,
// its conv unit chain length (4) x convInputLoadElems (4) (graphcore/poplibs
// lib/poplin/ConvVertexType.cpp, getConvVertexAMPCandidates).
inline constexpr std::int64_t kAmpInputChannels = 16;
// Its operation: on the AMP units when every group has kAmpInputChannels input channels or more
// (a dense convolution always), else multiply-adds on the vector units (see type_support.cpp).
Operation convolution_op(const Convolution& conv);
// A grouped convolution's groups must divide its input channels and its filters.
void expect_groups(const Layer& layer, std::int64_t in_channels);
// A dilated kernel's span (window_span) must be at most core::kMaxCount inputs.
void expect_span(const Layer& layer, std::int64_t span);

// Dense's and conv2d's activation over `elements`, if any.
void add_activation(std::vector<Operation>& ops, Activation activation, double elements);

}  // namespace ipusim::models
