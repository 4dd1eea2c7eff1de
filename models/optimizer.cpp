#include "models/optimizer.hpp"

#include <cmath>
#include <utility>

#include "sim/core/error.hpp"

namespace ipusim::models {

std::int64_t state_elements_per_parameter(OptimizerConfig::Kind kind) {
  switch (kind) {
    case OptimizerConfig::Kind::kSgd:
      return 0;
    case OptimizerConfig::Kind::kMomentum:
      return 1;
    case OptimizerConfig::Kind::kAdam:
      return 2;
  }
  IPUSIM_CHECK(false);
  return 0;
}

GradientAccumulator::GradientAccumulator(Shape shape, DType dtype, GradientReduction reduction)
    : sum_(std::move(shape)), dtype_(dtype), reduction_(reduction) {}

void GradientAccumulator::add(std::span<const float> gradient) {
  IPUSIM_CHECK(static_cast<std::int64_t>(gradient.size()) == sum_.elements());
  float* sum = sum_.data();
  for (std::size_t i = 0; i < gradient.size(); ++i)
    sum[i] += gradient[i];
  round_to_dtype(sum_, dtype_);
  ++count_;
}

Tensor GradientAccumulator::result() const {
  IPUSIM_CHECK(count_ > 0);
  Tensor reduced = sum_;
  if (reduction_ == GradientReduction::kMean) {
    const auto divisor = static_cast<float>(count_);
    for (float& value : reduced.values())
      value /= divisor;
    round_to_dtype(reduced, dtype_);
  }
  return reduced;
}

void GradientAccumulator::reset() {
  for (float& value : sum_.values())
    value = 0.0f;
  count_ = 0;
}

Optimizer::Optimizer(OptimizerConfig config, DType weight_dtype)
    : config_(config), weight_dtype_(weight_dtype) {}

OptimizerState Optimizer::initial_state(const Shape& shape) const {
  OptimizerState state;
  for (std::int64_t i = 0; i < state_elements_per_parameter(config_.kind); ++i)
    state.slots.emplace_back(shape);
  return state;
}

void Optimizer::apply(Tensor& parameter, const Tensor& gradient, OptimizerState& state) const {
  IPUSIM_CHECK(parameter.shape() == gradient.shape());
  IPUSIM_CHECK(static_cast<std::int64_t>(state.slots.size()) ==
               state_elements_per_parameter(config_.kind));
  ++state.steps;
  const double lr = config_.learning_rate;
  float* w = parameter.data();
  const float* g = gradient.data();
  switch (config_.kind) {
    case OptimizerConfig::Kind::kSgd:
      for (std::int64_t i = 0; i < parameter.elements(); ++i)
        w[i] = static_cast<float>(w[i] - lr * g[i]);
      break;
    case OptimizerConfig::Kind::kMomentum: {
      float* velocity = state.slots[0].data();
      for (std::int64_t i = 0; i < parameter.elements(); ++i) {
        velocity[i] = static_cast<float>(config_.momentum * velocity[i] - lr * g[i]);
        w[i] = static_cast<float>(w[i] + static_cast<double>(velocity[i]));
      }
      break;
    }
    case OptimizerConfig::Kind::kAdam:
      apply_adam(parameter, gradient, state);
      break;
  }
  round_to_dtype(parameter, weight_dtype_);
}

void Optimizer::apply_adam(Tensor& parameter, const Tensor& gradient, OptimizerState& state) const {
  const double t = static_cast<double>(state.steps);
  double lr = config_.learning_rate;
  // Keras folds the bias correction into the learning rate and adds epsilon to sqrt(v) unscaled.
  if (config_.bias_correction)
    lr *= std::sqrt(1.0 - std::pow(config_.beta2, t)) / (1.0 - std::pow(config_.beta1, t));
  float* w = parameter.data();
  const float* g = gradient.data();
  float* m = state.slots[0].data();
  float* v = state.slots[1].data();
  for (std::int64_t i = 0; i < parameter.elements(); ++i) {
    const double gi = g[i];
    m[i] = static_cast<float>(config_.beta1 * m[i] + (1.0 - config_.beta1) * gi);
    v[i] = static_cast<float>(config_.beta2 * v[i] + (1.0 - config_.beta2) * gi * gi);
    const double update = lr * m[i] / (std::sqrt(static_cast<double>(v[i])) + config_.epsilon);
    w[i] = static_cast<float>(w[i] - update);
  }
}

}  // namespace ipusim::models
