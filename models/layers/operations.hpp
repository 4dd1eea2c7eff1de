#pragma once
// The operations a layer lowers to, as Poplar would run them and PopVision's Operations Summary
// lists them: matrix products on the AMP units, elementwise and non-linear work and reductions on
// the vector units, gathers and copies bound by memory. The geometry here is per sample and
// independent of the hardware; sim/machine/op_cost turns it into cycles on an IPU.
//
// Each pass of an operation is one or more compute sets. A matrix product's backward is two
// products (input and weight gradients, or both operands' gradients) of the forward's size.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/layers/layer.hpp"

namespace ipusim::models {

// The classes PopVision separates, each run by one unit of a tile.
enum class OpClass { kMatmul, kConv, kElementwise, kNonLinear, kReduction, kGather, kCopy };

inline constexpr std::array kOpClasses = {
    OpClass::kMatmul,    OpClass::kConv,   OpClass::kElementwise, OpClass::kNonLinear,
    OpClass::kReduction, OpClass::kGather, OpClass::kCopy};

std::string_view to_string(OpClass op_class);  // "matmul", "non_linear", ...
int index(OpClass op_class);

// FLOPs per element of the normalisations. A layer or batch norm takes mean, variance,
// normalise, scale and shift, about two each, and twice that backward, where it recomputes the
// statistics and takes the gradients of its input, scale and shift. A softmax takes max,
// subtract, exp, sum and normalise; its backward y·(dy − Σ dy·y) three.
inline constexpr double kLayerNormFlops = 8;
inline constexpr double kSoftmaxFlops = 5;
inline constexpr double kSoftmaxBackwardFlops = 3;

// Matmul and conv run on the AMP units and count their work in FLOPs; the vector classes count
// elements; gather and copy count elements moved through tile memory.
bool on_amp(OpClass op_class);

// One pass (forward or backward) of an operation, per sample unless said otherwise.
struct OpPass {
  double work = 0;                // FLOPs on the AMP units, elements otherwise
  double exchanged_elements = 0;  // activations brought to the tiles that compute
  double weight_elements = 0;     // per micro-batch: weights brought to those tiles
  int compute_sets = 0;           // 0: the pass does no work (a gradient passes through)
  // FLOPs, for the reports (a multiply-add is two): the work on the AMP units, so many per
  // element on the vector units. The layer figures of layer_info.hpp sum them.
  double flops = 0;
};

// A product as poplin plans it, per sample: a convolution with `groups` groups (a matmul's count
// of independent products), an output field of out_height x out_width positions (a matmul's rows
// as its width), a kernel and stride, and channels per group (a matmul's inner and cols).
// `weights`: the right operand is one weight shared by the micro-batch, so the micro-batch adds
// positions; otherwise each sample's products are their own groups.
struct ProductGeometry {
  std::int64_t groups = 1;
  std::int64_t out_height = 1;
  std::int64_t out_width = 1;
  std::int64_t in_height = 1;
  std::int64_t in_width = 1;
  std::int64_t kernel_height = 1;
  std::int64_t kernel_width = 1;
  std::int64_t stride = 1;
  std::int64_t in_chans = 1;
  std::int64_t out_chans = 1;
  bool weights = true;
  // Run as so many products over slices of the output channels, one after another (a dense
  // layer's serialization_factor).
  std::int64_t slices = 1;
};

// The compute sets a vector operation lowers to (sim/pricing/vector_lowering.hpp prices them).
enum class VectorLowering {
  kNone,
  kLayerNorm,
  kGroupNorm,
  kSoftmax,
  kSwish,
  kGelu,
  kRelu,
  kTanh,
  kDropout,
  kScale,
  kMaskAdd,
  kAdd,
  kBiasAdd,
};

struct Operation {
  std::string name;  // e.g. "qkv_projection"
  OpClass op_class = OpClass::kMatmul;
  OpPass forward;
  OpPass backward;
  // The shape its lowering is planned at: a product's, or a vector operation's row width (per
  // sample; norms and softmax reduce along it), its rows the forward's elements over it.
  std::optional<ProductGeometry> product = std::nullopt;
  VectorLowering lowering = VectorLowering::kNone;
  double vector_width = 0;
  bool vector_batch_widens = false;  // the micro-batch lengthens the rows (a batch norm's)
  // Temporaries: tensors the operation allocates while either pass runs and frees when it ends,
  // in elements of the compute dtype; per sample, and per micro-batch (a rearranged copy of its
  // weights). Only what a source names is counted: the loss's one-hot labels and a tied matmul's
  // rearranged weights (see softmax_cross_entropy.cpp and dense.cpp); a pass serialised k ways
  // holds a k-th of them at a time.
  double temporary_elements = 0;
  double temporary_weight_elements = 0;
};

// The operations of `layer` with inputs `inputs` (per sample) producing `output`.
std::vector<Operation> lower_layer(const Layer& layer, const std::vector<Shape>& inputs,
                                   const Shape& output);

}  // namespace ipusim::models
