#pragma once
// Numeric kernels: the forward and backward pass of every layer type that has one, on real
// fp32 tensors (batch first, channels last). A Kernel is built once per layer from its
// validated fields and per-sample input shapes; it holds no parameters and no activations, so
// the pipeline and the reference can share one and feed it their own tensors.
//
// Determinism: every kernel runs on one thread, sums in a fixed order and gives bit-identical
// results for identical inputs of the same shape (Eigen's GEMM blocking depends on the matrix
// sizes, so results are reproducible for a given micro-batch size, not across sizes).
// fp16 is emulated as described in models/tensor.hpp.
//
// Activations: gelu is the exact erf form (PyTorch's default, Keras' approximate=False),
// 0.5 x (1 + erf(x / sqrt 2)).

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "models/dtype.hpp"
#include "models/init.hpp"
#include "models/layer.hpp"
#include "models/optimizer.hpp"
#include "models/tensor.hpp"

namespace ipusim::models {

// What a forward pass keeps for its backward pass. saved_bytes() is what the memory model
// (models/layer_info.hpp) charges for the stash; per sample it is, with E the element count and
// d the bytes of the dtype (4 for fp32, 2 for fp16, whose values the tensors hold exactly):
//   dense, conv2d: input E x d, plus the output E x d for relu/tanh or the pre-activation E x d
//     for gelu; relu: output E x d; gelu: input E x d; maxpool2d: output E x 4 (int32 argmax);
//   softmax_cross_entropy: logits E x d (probabilities) + 4 per row of logits (int32 label);
//   flatten, reshape, add, concat: nothing. Dropout keeps the 8-byte seed of its mask per
//   micro-batch, not per sample, as Graphcore's IPU dropout does.
struct SavedState {
  DType dtype = DType::kFp32;  // of `tensors`
  std::vector<Tensor> tensors;
  std::vector<std::int32_t> indices;                 // maxpool2d argmax, loss labels
  std::optional<std::array<std::uint32_t, 2>> seed;  // dropout: the seed its mask is drawn from
  std::int64_t saved_bytes() const;
};

// Which micro-batch a forward pass belongs to. Dropout keys its mask by (layer seed,
// microbatch, repeat), so a recomputation or the reference draws the same mask; `repeat`
// numbers the passes over the same micro-batch index (the training step).
struct ForwardContext {
  std::int64_t microbatch = 0;
  std::int64_t repeat = 0;
  std::span<const int> labels;  // one per row of logits (per sample), read by the loss
};

// A forward pass's output and what its backward pass will need.
struct ForwardResult {
  Tensor output;
  SavedState saved;
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
  // The rule of SavedState: per sample, plus a part per micro-batch (dropout's seed).
  virtual std::int64_t saved_bytes_per_sample() const = 0;
  virtual std::int64_t saved_bytes_per_micro_batch() const { return 0; }

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
};

// False for input and the cost-only layers (embedding, transformer_encoder).
bool has_kernel(LayerType type);

// Builds the kernel of `layer` given the per-sample shapes of its inputs. `seed` is the run
// seed (dropout derives its mask stream from it and the layer id). Shapes must already be
// validated by the layer graph: an inconsistency here is an internal error.
std::unique_ptr<Kernel> make_kernel(const Layer& layer, const std::vector<Shape>& input_shapes,
                                    DType dtype, std::uint64_t seed);

}  // namespace ipusim::models
