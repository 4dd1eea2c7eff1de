#include "models/kernels/optimizer.hpp"

#include <cmath>
#include <utility>
#include <vector>

#include "sim/core/error.hpp"

namespace ipusim::models {

std::int64_t state_elements_per_parameter(OptimizerConfig::Kind kind) {
  switch (kind) {
    case OptimizerConfig::Kind::kSgd:
      return 0;
    case OptimizerConfig::Kind::kMomentum:
    case OptimizerConfig::Kind::kLars:
      return 1;
    case OptimizerConfig::Kind::kAdam:
    case OptimizerConfig::Kind::kLamb:
      return 2;
  }
  IPUSIM_CHECK(false);
  return 0;
}

std::int64_t state_bytes_per_parameter(const OptimizerConfig& config, DType weight_dtype) {
  if (state_elements_per_parameter(config.kind) < 2)
    return dtype_bytes(weight_dtype) * state_elements_per_parameter(config.kind);
  return dtype_bytes(config.m_dtype) + dtype_bytes(config.v_dtype);
}

bool takes_weight_decay(ParameterSpec::Role role) {
  return role == ParameterSpec::Role::kWeight || role == ParameterSpec::Role::kEmbedding;
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

OptimizerState Optimizer::initial_state(const Shape& shape, bool weight_decay) const {
  OptimizerState state;
  state.weight_decay = weight_decay;
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
      for (std::int64_t i = 0; i < parameter.elements(); ++i)
        velocity[i] = static_cast<float>(config_.momentum * velocity[i] - lr * g[i]);
      round_to_dtype(state.slots[0], weight_dtype_);  // the slot is stored as the weights are
      for (std::int64_t i = 0; i < parameter.elements(); ++i)
        w[i] = static_cast<float>(w[i] + static_cast<double>(velocity[i]));
      break;
    }
    case OptimizerConfig::Kind::kAdam:
      apply_adam(parameter, gradient, state);
      break;
    case OptimizerConfig::Kind::kLamb:
      apply_lamb(parameter, gradient, state);
      break;
    case OptimizerConfig::Kind::kLars:
      apply_lars(parameter, gradient, state);
      break;
  }
  round_to_dtype(parameter, weight_dtype_);
}

void Optimizer::update_moments(const Tensor& gradient, OptimizerState& state) const {
  const float* g = gradient.data();
  float* m = state.slots[0].data();
  float* v = state.slots[1].data();
  for (std::int64_t i = 0; i < gradient.elements(); ++i) {
    const double gi = g[i];
    m[i] = static_cast<float>(config_.beta1 * m[i] + (1.0 - config_.beta1) * gi);
    v[i] = static_cast<float>(config_.beta2 * v[i] + (1.0 - config_.beta2) * gi * gi);
  }
  // The update reads the moments as stored, as PopART's AdamUpdater reads accl1 and accl2.
  round_to_dtype(state.slots[0], config_.m_dtype);
  round_to_dtype(state.slots[1], config_.v_dtype);
}

void Optimizer::apply_adam(Tensor& parameter, const Tensor& gradient, OptimizerState& state) const {
  const double t = static_cast<double>(state.steps);
  double lr = config_.learning_rate;
  // Keras folds the bias correction into the learning rate and adds epsilon to sqrt(v) unscaled.
  if (config_.bias_correction)
    lr *= std::sqrt(1.0 - std::pow(config_.beta2, t)) / (1.0 - std::pow(config_.beta1, t));
  update_moments(gradient, state);
  float* w = parameter.data();
  const float* m = state.slots[0].data();
  const float* v = state.slots[1].data();
  for (std::int64_t i = 0; i < parameter.elements(); ++i) {
    const double update = lr * m[i] / (std::sqrt(static_cast<double>(v[i])) + config_.epsilon);
    w[i] = static_cast<float>(w[i] - update);
  }
}

// LAMB (You et al. 2020, the form of Graphcore's LAMBIpuOptimizer): the update
// u = m_hat / (sqrt(v_hat) + epsilon) + weight_decay w is scaled per tensor by the trust ratio
// ||w|| / ||u|| (1 when either norm is 0), then w -= learning_rate x ratio x u.
void Optimizer::apply_lamb(Tensor& parameter, const Tensor& gradient, OptimizerState& state) const {
  const double t = static_cast<double>(state.steps);
  const double m_scale = config_.bias_correction ? 1.0 / (1.0 - std::pow(config_.beta1, t)) : 1.0;
  const double v_scale = config_.bias_correction ? 1.0 / (1.0 - std::pow(config_.beta2, t)) : 1.0;
  const double decay = state.weight_decay ? config_.weight_decay : 0.0;
  update_moments(gradient, state);
  float* w = parameter.data();
  const float* m = state.slots[0].data();
  const float* v = state.slots[1].data();
  std::vector<double> update(static_cast<std::size_t>(parameter.elements()));
  double w_squares = 0;
  double u_squares = 0;
  for (std::size_t i = 0; i < update.size(); ++i) {
    const double wi = w[i];
    update[i] = m[i] * m_scale / (std::sqrt(v[i] * v_scale) + config_.epsilon) + decay * wi;
    w_squares += wi * wi;
    u_squares += update[i] * update[i];
  }
  const double ratio =
      w_squares > 0 && u_squares > 0 ? std::sqrt(w_squares) / std::sqrt(u_squares) : 1.0;
  const double step = config_.learning_rate * ratio;
  for (std::size_t i = 0; i < update.size(); ++i)
    w[i] = static_cast<float>(w[i] - step * update[i]);
}

// LARS (You et al. 2017, the MLPerf ResNet-50 reference's form): per tensor the trust ratio
// r = eta ||w|| / (||g|| + weight_decay ||w|| + epsilon) (1 when either norm is 0), then
// v = momentum v + learning_rate r (g + weight_decay w) and w -= v. Tensors LARS excludes (see
// takes_weight_decay) take r = 1 and no decay: plain momentum.
void Optimizer::apply_lars(Tensor& parameter, const Tensor& gradient, OptimizerState& state) const {
  float* w = parameter.data();
  const float* g = gradient.data();
  const double decay = state.weight_decay ? config_.weight_decay : 0.0;
  double w_squares = 0;
  double g_squares = 0;
  for (std::int64_t i = 0; i < parameter.elements(); ++i) {
    w_squares += double(w[i]) * w[i];
    g_squares += double(g[i]) * g[i];
  }
  const double w_norm = std::sqrt(w_squares);
  const double g_norm = std::sqrt(g_squares);
  const double ratio = state.weight_decay && w_norm > 0 && g_norm > 0
                           ? config_.eta * w_norm / (g_norm + decay * w_norm + config_.epsilon)
                           : 1.0;
  const double step = config_.learning_rate * ratio;
  float* velocity = state.slots[0].data();
  for (std::int64_t i = 0; i < parameter.elements(); ++i)
    velocity[i] = static_cast<float>(config_.momentum * velocity[i] + step * (g[i] + decay * w[i]));
  round_to_dtype(state.slots[0], weight_dtype_);
  for (std::int64_t i = 0; i < parameter.elements(); ++i)
    w[i] = static_cast<float>(w[i] - static_cast<double>(velocity[i]));
}

}  // namespace ipusim::models
