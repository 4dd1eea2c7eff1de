#pragma once
// Numeric kernels: the forward and backward pass of every layer type that has one, on real
// fp32 tensors (batch first, channels last). A Kernel is built once per layer from its
// validated fields and per-sample input shapes; it holds no parameters, no activations and no
// running statistics, so the pipeline and the reference can share one and feed it their own
// tensors.
//
// Determinism: every kernel runs on one thread, sums in a fixed order and gives bit-identical
// results for identical inputs of the same shape (Eigen's GEMM blocking depends on the matrix
// sizes, so results are reproducible for a given micro-batch size, not across sizes).
// fp16 is emulated as described in models/kernels/tensor.hpp.
//
// Activations: gelu is the exact erf form (PyTorch's default, Keras' approximate=False),
// 0.5 x (1 + erf(x / sqrt 2)).
//
// Normalisation: layer_norm, batch_norm and the layer norms inside embedding and
// transformer_encoder compute each mean and (biased) variance in double, in element order;
// their backward recomputes them from the saved input. batch_norm keeps running statistics
// outside the kernel (ParameterStore): a forward returns the micro-batch's statistics, which the
// caller folds in with update_running_statistics, once per micro-batch, never when recomputing.
//
// Transformers: attention takes [sequence, hidden] samples and an optional padding mask
// ([sequence], 1 keeps a key, 0 adds kMaskedScore to its scores), and when causal gives each
// query's later keys a probability of exactly 0; embedding takes token ids
// (and optionally token types) as integer-valued floats and throws core::ConfigError at the
// layer when one is not an integer or out of range. transformer_encoder is BERT's post-LN layer:
// attention, dropout, add, layer norm, dense + gelu, dense, dropout, add, layer norm;
// transformer_attention is its first four steps and transformer_feed_forward the rest.

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "models/kernels/init.hpp"
#include "models/kernels/optimizer.hpp"
#include "models/kernels/tensor.hpp"
#include "models/layers/dtype.hpp"
#include "models/layers/layer.hpp"
#include "models/layers/layer_info.hpp"

namespace ipusim::models {

// What a forward pass keeps for its backward pass. Its saved_bytes() after a forward over a
// micro-batch of n samples is n x Kernel::saved_bytes_per_sample() + saved_bytes_per_micro_batch(),
// the figures of models/layers/layer_info.hpp's stash_bytes, which the memory model charges for the
// stash; the kernel tests hold every kernel to them. Dropout keeps the 8-byte seed of its mask
// per micro-batch, not per sample, as Graphcore's IPU dropout does; attention with dropout one,
// a transformer encoder three (its attention half two, its feed-forward half one).
struct SavedState {
  DType dtype = DType::kFp32;  // of `tensors`
  std::vector<Tensor> tensors;
  std::vector<std::int32_t> indices;  // maxpool2d argmax, loss labels, token ids and types
  std::vector<std::array<std::uint32_t, 2>> seeds;  // the seeds dropout masks are drawn from
  std::int64_t saved_bytes() const;
};

// Which micro-batch a forward pass belongs to. Dropout keys its mask by (layer seed,
// microbatch, repeat), so a recomputation or the reference draws the same mask; `repeat`
// numbers the passes over the same micro-batch index (the training step).
struct ForwardContext {
  ForwardContext(std::int64_t microbatch_index = 0, std::int64_t repeat_index = 0,
                 std::span<const int> row_labels = {})
      : microbatch(microbatch_index), repeat(repeat_index), labels(row_labels) {}

  std::int64_t microbatch = 0;
  std::int64_t repeat = 0;
  std::span<const int> labels;  // one per row of logits (per sample), read by the loss
  // Inference (test accuracy): batch_norm normalises with `running`, its running statistics,
  // instead of the micro-batch's own.
  bool inference = false;
  std::span<const Tensor> running;
};

// A forward pass's output and what its backward pass will need.
struct ForwardResult {
  Tensor output;
  SavedState saved;
  std::vector<Tensor> statistics;  // batch_norm: the micro-batch's mean and variance
};

// The numeric kernel of one layer. The loss (softmax_cross_entropy) outputs a tensor of shape
// {1}: the mean loss over the micro-batch; its backward takes the loss gradient in that shape.
class Kernel {
 public:
  virtual ~Kernel() = default;

  LayerType type() const { return type_; }
  DType dtype() const { return dtype_; }
  const std::vector<Shape>& input_shapes() const { return input_shapes_; }
  // Per sample; {} for the loss.
  const Shape& output_shape() const { return output_shape_; }

  // The parameter tensors `forward` and `backward` take, in order (weights then bias).
  virtual std::vector<ParameterSpec> parameters() const { return {}; }
  // Non-trainable state: batch_norm's running mean (zeros) and variance (ones).
  virtual std::vector<Tensor> initial_running_statistics() const { return {}; }
  // Folds a training forward's `statistics` into `running`.
  virtual void update_running_statistics(std::span<Tensor> /*running*/,
                                         std::span<const Tensor> /*statistics*/) const {}
  // What SavedState holds: per sample, plus a part per micro-batch (dropout's seed). make_kernel
  // sets them from the layer's stash_bytes, so the kernels and the memory model share one rule.
  std::int64_t saved_bytes_per_sample() const { return stash_.per_sample; }
  std::int64_t saved_bytes_per_micro_batch() const { return stash_.per_micro_batch; }

  virtual ForwardResult forward(const std::vector<const Tensor*>& inputs,
                                std::span<const Tensor> parameters,
                                const ForwardContext& context) const = 0;
  // Returns one gradient per input and adds this micro-batch's parameter gradients to
  // `gradients` (one accumulator per parameter tensor).
  virtual std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& saved,
                                       std::span<const Tensor> parameters,
                                       std::span<GradientAccumulator> gradients) const = 0;

 protected:
  Kernel(LayerType type, DType dtype, std::vector<Shape> input_shapes, Shape output_shape)
      : type_(type),
        dtype_(dtype),
        input_shapes_(std::move(input_shapes)),
        output_shape_(std::move(output_shape)) {}

 private:
  LayerType type_;
  DType dtype_;
  std::vector<Shape> input_shapes_;
  Shape output_shape_;
  StashBytes stash_;

  friend std::unique_ptr<Kernel> make_kernel(const Layer& layer,
                                             const std::vector<Shape>& input_shapes, DType dtype,
                                             std::uint64_t seed);
};

// False for input layers only: every other type has a kernel.
bool has_kernel(LayerType type);

// Builds the kernel of `layer` given the per-sample shapes of its inputs. `seed` is the run
// seed (dropout derives its mask stream from it and the layer id). Shapes must already be
// validated by the layer graph: an inconsistency here is an internal error.
std::unique_ptr<Kernel> make_kernel(const Layer& layer, const std::vector<Shape>& input_shapes,
                                    DType dtype, std::uint64_t seed);

}  // namespace ipusim::models
