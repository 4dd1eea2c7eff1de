#pragma once
// The cost model's figures for one layer: parameters, FLOPs, and bytes held and moved. All
// activation figures are per sample (the caller multiplies by the micro-batch size); weights
// are given apart because they do not scale with the batch. What differs by type (LayerCost:
// parameters, FLOPs or their rule, saved bytes, seeds, which traffic it has) is in the cost
// function of its row, in its file under models/layers/types/; the rest follows from the shapes
// here. The rules below are the ones those files keep.
//
// FLOPs count a multiply-add as two and come from one place: each pass of each operation
// (models/layers/operations.hpp) carries its FLOPs, and a layer's are the sum over its
// operations, so that the layer and its lowering cannot disagree. Dense: 2·in·units per row
// (+units for the bias, + the activation's per element); conv2d
// 2·Hout·Wout·kh·kw·(Cin/groups)·Cout (+Hout·Wout·Cout for the bias). Attention and the transformer
// layers sum their matrix products alone (the operations on the AMP units), as Narayanan et al.
// 2021 count a model's FLOPs: a transformer encoder 8·s·h² + 4·s·h·ffn + 4·s²·h (Q, K, V and output
// projections, the FFN, QKᵀ and the attention-weighted sum: 24·s·h² + 4·s²·h when ffn = 4h),
// attention alone 8·s·h² + 4·s²·h; their softmax, dropout and layer norms are operations but not
// model FLOPs. Backward is the gradient with respect to the input plus that with respect to the
// weights, so twice the forward products; every layer computes its input gradient, even the first.
//
// The vector operations count a few FLOPs an element (E of the output, I of the input); they are
// bound by memory traffic, which bytes_moved_* give for a roofline floor. maxpool2d: a compare an
// element of each window, and backward an add a window into its argmax (E); avgpool2d: an add an
// element of each window (the division folded in), and as many back; global average pool: the
// sums and a division per channel (I + E), backward a share per pixel (I), and token_mean alike
// over the tokens; position_table: an add an element each way, as a bias; class_token: none
// forward (a copy, as concat) and an add a feature back, the token's gradient; dropout: the
// multiply by the mask each way (E; the draw is integer work); softmax 5·E and 3·E back
// (y·(dy − Σ dy·y)); the loss 5·I and I back (the probability less the one-hot label); layer_norm
// and batch_norm 8·E and twice that back, where the statistics are recomputed; embedding: an add
// a position or type row and its layer norm, backward a scatter-add into each table it read.
//
// saved_bytes is the rule the numeric kernels keep to, as stash_bytes gives it them (E = element
// count, d = dtype bytes): dense/conv2d E(in)·d, plus E(out)·d unless the activation is none; relu,
// tanh and softmax E(out)·d; gelu, layer_norm and batch_norm E(in)·d; maxpool2d E(out)·4 (int32
// argmax); softmax_cross_entropy E(in)·d probabilities + 4 per label (one label per row of
// logits); dropout, input, flatten, reshape, add, concat, token_select, position_table,
// class_token, avgpool2d, global_average_pool2d and token_mean (whose backward needs only the
// input's shape) nothing. An
// embedding keeps its layer norm's input s·h·d and 4 bytes per token id (and per token type, when
// given). Attention keeps, as Korthikanti et al. 2022 count it without the dropout masks, its
// input, Q, K, V and the context (5·s·h) and the probabilities before and after dropout
// (2·heads·s², one copy without dropout), times d. A transformer encoder keeps its attention's
// share plus both layer norms' inputs, the FFN's input and the GELU's input and output: (8·s·h +
// 2·s·ffn + 2·heads·s²)·d, which is Korthikanti's (16·s·h + 2·heads·s²)·d when ffn = 4·h.
//
// An encoder's halves (transformer_attention, transformer_feed_forward) split every figure of
// it: parameters 4·h² + 4·h + 2·h and 2·h·ffn + ffn + h + 2·h, forward FLOPs 8·s·h² + 4·s²·h
// and 4·s·h·ffn, saved bytes (the attention's share + s·h)·d and (2·s·h + 2·s·ffn)·d, dropout
// seeds two and one, operations the encoder's first seven and last four. The attention half's
// output is not among the live activations (live_bytes 0), as the encoder's inner tensors are
// not, so that a stage of halves costs what the stage of their encoders does; its
// activation_bytes still size the copy when a split falls between the halves.
//
// Dropout keeps no mask: Graphcore's IPU dropout (poprand::dropout, TF's rand_ops.dropout,
// PopART's DropoutGradOp) keeps the 2 x uint32 seed and draws the mask again in backward and in
// recomputation. So each dropout costs 8 bytes per micro-batch (seed_bytes), stashed in every
// recomputation mode; an attention layer with dropout has one, a transformer encoder three
// (attention, attention output, FFN output), none when its rate is 0.

#include <cstdint>
#include <vector>

#include "models/layers/dtype.hpp"
#include "models/layers/layer.hpp"
#include "models/layers/operations.hpp"

namespace ipusim::models {

// What the memory and time models know of one layer.
struct LayerInfo {
  Shape output;                           // per sample; [] for the loss
  std::int64_t params = 0;                // trainable scalars
  int param_tensors = 0;                  // the tensors holding them, a tied one counted once
  std::int64_t weight_elements = 0;       // same as params
  double forward_flops = 0;               // per sample
  double backward_flops = 0;              // per sample: input gradient + weight gradient
  std::int64_t activation_bytes = 0;      // per sample: E(output)·d
  std::int64_t live_bytes = 0;            // per sample: what the layer adds to its stage's
                                          // running activations (its output; see layer_info)
  std::int64_t saved_bytes = 0;           // per sample: what backward needs, as the kernels keep it
  std::int64_t seed_bytes = 0;            // per micro-batch: dropout seeds, which recomputation
                                          // cannot recreate
  std::int64_t bytes_moved_forward = 0;   // per sample: inputs read + output written
  std::int64_t bytes_moved_backward = 0;  // per sample: output gradient and saved bytes read,
                                          // input gradients written
  std::int64_t weight_bytes = 0;          // params·d, once per layer
  std::vector<Operation> operations;      // what the layer lowers to (models/layers/operations.hpp)
  // Every input is the model's data, which autodiff computes no gradient for.
  bool reads_only_data = false;
};

// `inputs` are the shapes of the layer's inputs, in order; `output` its inferred shape.
LayerInfo layer_info(const Layer& layer, const std::vector<Shape>& inputs, const Shape& output,
                     DType dtype);

// What a layer keeps from its forward pass for its backward: LayerInfo's saved_bytes and
// seed_bytes, alone. The numeric kernels state these (Kernel::saved_bytes_per_sample), so the
// memory model and what the kernels keep follow one rule.
struct StashBytes {
  std::int64_t per_sample = 0;
  std::int64_t per_micro_batch = 0;  // dropout seeds
};
StashBytes stash_bytes(const Layer& layer, const std::vector<Shape>& inputs, const Shape& output,
                       DType dtype);

}  // namespace ipusim::models
