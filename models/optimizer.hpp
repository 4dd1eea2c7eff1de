#pragma once
// Gradient accumulation and weight update, as Graphcore pipelines do them: every micro-batch's
// parameter gradient is added to an accumulator (in micro-batch order), and once per step the
// optimizer applies the reduced gradient. The update rules follow Keras (TF2 optimizer_v2).

#include <cstdint>
#include <span>
#include <vector>

#include "models/dtype.hpp"
#include "models/tensor.hpp"

namespace ipusim::models {

// Which update rule and its hyper-parameters, with Keras' defaults.
struct OptimizerConfig {
  enum class Kind { kSgd, kMomentum, kAdam };
  Kind kind = Kind::kSgd;
  double learning_rate = 0.01;
  double momentum = 0.9;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-7;  // Keras' default
  bool bias_correction = true;
};

// Optimizer state tensors per parameter tensor: 0 for SGD, 1 for momentum, 2 for Adam.
std::int64_t state_elements_per_parameter(OptimizerConfig::Kind kind);

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
  std::vector<Tensor> slots;  // momentum: velocity; Adam: m then v
  std::int64_t steps = 0;
};

// Applies one update to a parameter tensor. Arithmetic is per element in double, stored as
// float; parameters are then rounded to the weight dtype.
class Optimizer {
 public:
  explicit Optimizer(OptimizerConfig config, DType weight_dtype = DType::kFp32);

  const OptimizerConfig& config() const { return config_; }
  OptimizerState initial_state(const Shape& shape) const;
  void apply(Tensor& parameter, const Tensor& gradient, OptimizerState& state) const;

 private:
  void apply_adam(Tensor& parameter, const Tensor& gradient, OptimizerState& state) const;

  OptimizerConfig config_;
  DType weight_dtype_;
};

}  // namespace ipusim::models
