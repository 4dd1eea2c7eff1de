#pragma once
// Gradient accumulation and weight update, as Graphcore pipelines do them: every micro-batch's
// parameter gradient is added to an accumulator (in micro-batch order), and once per step the
// optimizer applies the reduced gradient. The update rules follow Keras (TF2 optimizer_v2);
// LAMB follows Graphcore's LAMBIpuOptimizer (ipu_tensorflow_addons) and PopART's Adam in its
// Lamb and LambNoBias modes; LARS follows the MLPerf ResNet-50 reference's LARSOptimizer (heavy-
// ball momentum, the trust ratio inside the velocity), which Graphcore's MLPerf ResNet-50 uses.

#include <cstdint>
#include <span>
#include <vector>

#include "models/kernels/init.hpp"
#include "models/kernels/tensor.hpp"
#include "models/layers/dtype.hpp"

namespace ipusim::models {

// Which update rule and its hyper-parameters, with Keras' defaults (the spec sets LAMB's).
struct OptimizerConfig {
  enum class Kind { kSgd, kMomentum, kAdam, kLamb, kLars };
  Kind kind = Kind::kSgd;
  double learning_rate = 0.01;
  double momentum = 0.9;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-7;  // Keras' default
  bool bias_correction = true;
  double weight_decay = 0;  // LAMB and LARS: added to the update as weight_decay x w
  double eta = 0.001;       // LARS: the trust coefficient (the reference's eeta)
  // Adam and LAMB: the moments' storage types (Graphcore's m_dtype and v_dtype, PopART's
  // accl1_type and accl2_type), rounded to after every update.
  DType m_dtype = DType::kFp32;
  DType v_dtype = DType::kFp32;
};

// Optimizer state tensors per parameter tensor: 0 for SGD, 1 for momentum and LARS, 2 for Adam
// and LAMB.
std::int64_t state_elements_per_parameter(OptimizerConfig::Kind kind);
// Bytes of optimizer state per parameter: the velocity of momentum and LARS in the weights'
// dtype (a TF optimizer's slot takes its variable's: fp16 under Graphcore's 16.16 precision),
// the moments' dtypes for Adam and LAMB.
std::int64_t state_bytes_per_parameter(const OptimizerConfig& config, DType weight_dtype);

// Whether LAMB and LARS decay a parameter: not biases and normalisation parameters, which
// Graphcore's BERT excludes ("bias", "beta", "gamma" in its TF LAMB; weight decay 0 for them in
// PopART) and the MLPerf ResNet-50 reference excludes from LARS ("batch_normalization", "bias":
// neither decayed nor scaled by a trust ratio). Nor ViT's position table and class token, which
// timm's VisionTransformer lists in no_weight_decay ("pos_embed", "cls_token").
bool takes_weight_decay(ParameterSpec::Role role);

enum class GradientReduction {
  kMean,  // divide the sum by the number of micro-batches at the end, as Graphcore does
  kSum,
};

// The running gradient of one parameter tensor over the micro-batches of a step. In fp16 the
// sum is rounded to binary16 after every add, as an fp16 accumulator on the IPU would be.
class GradientAccumulator {
 public:
  GradientAccumulator(Shape shape, DType dtype, GradientReduction reduction);

  void add(std::span<const float> gradient);
  std::int64_t count() const { return count_; }
  const Tensor& sum() const { return sum_; }
  // The reduced gradient over the `count()` adds so far.
  Tensor result() const;
  void reset();

 private:
  Tensor sum_;
  DType dtype_;
  GradientReduction reduction_;
  std::int64_t count_ = 0;
};

// What the optimizer keeps per parameter tensor between steps.
struct OptimizerState {
  std::vector<Tensor> slots;  // momentum and LARS: velocity; Adam and LAMB: m then v
  std::int64_t steps = 0;
  bool weight_decay = true;  // LAMB and LARS decay this tensor (see takes_weight_decay)
};

// Applies one update to a parameter tensor. Arithmetic is per element in double, stored as
// float; parameters are then rounded to the weight dtype.
class Optimizer {
 public:
  explicit Optimizer(OptimizerConfig config, DType weight_dtype = DType::kFp32);

  const OptimizerConfig& config() const { return config_; }
  OptimizerState initial_state(const Shape& shape, bool weight_decay = true) const;
  void apply(Tensor& parameter, const Tensor& gradient, OptimizerState& state) const;

 private:
  void apply_adam(Tensor& parameter, const Tensor& gradient, OptimizerState& state) const;
  void apply_lamb(Tensor& parameter, const Tensor& gradient, OptimizerState& state) const;
  void apply_lars(Tensor& parameter, const Tensor& gradient, OptimizerState& state) const;
  // Adam's and LAMB's moments after one more gradient, rounded to their dtypes.
  void update_moments(const Tensor& gradient, OptimizerState& state) const;

  OptimizerConfig config_;
  DType weight_dtype_;
};

}  // namespace ipusim::models
