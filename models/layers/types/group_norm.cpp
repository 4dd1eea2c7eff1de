// group_norm: PyTorch's nn.GroupNorm on channels-last samples [..., C]: the channels split into
// `groups` consecutive groups of C / groups, each normalised over its channels at every position
// of the sample, then scaled and shifted per channel.

#include <array>
#include <cmath>
#include <vector>

#include "models/layers/types/type_support.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {
namespace {

struct GroupNormFields {
  std::int64_t groups = 0;
  double epsilon = kLayerNormEpsilon;  // nn.GroupNorm's 1e-5
};

const std::array kGroupNormKeys = {
    positive_int_key<&GroupNormFields::groups>(
        "groups", "how many groups the channels (the last axis) split into; must divide them"),
    positive_number_key<&GroupNormFields::epsilon>("epsilon", kLayerNormEpsilon,
                                                   "added to the variance"),
};

void read_group_norm(const core::ConfigNode& layer, LayerParams& params) {
  read_keys(layer, kGroupNormKeys, params);
}

Shape group_norm_shape(const Layer& layer, const std::vector<InputShape>& inputs) {
  const InputShape& input = only_input(inputs);
  const std::int64_t groups = own_fields<GroupNormFields>(layer.params).groups;
  if (input.shape.empty() || input.shape.back() % groups != 0) {
    fail_layer(layer, "needs channels (the last axis) divisible by its " + std::to_string(groups) +
                          " groups, but " + input_text(input));
  }
  return input.shape;
}

std::vector<Operation> group_norm_operations(const Layer& layer,
                                             const std::vector<Shape>& /*inputs*/,
                                             const Shape& output) {
  const double elements = double(element_count(output));
  const double groups = double(own_fields<GroupNormFields>(layer.params).groups);
  return {normalization_op("group_norm", elements, kLayerNormFlops, elements / groups,
                           VectorLowering::kGroupNorm)};
}

// One group of one sample: `positions` rows of `channels`, of which the group holds `width`
// from `first`. Its mean and biased variance are taken in double, in element order.
struct GroupNormGroup {
  const float* x = nullptr;  // the sample
  std::int64_t positions = 0;
  std::int64_t channels = 0;
  std::int64_t first = 0;
  std::int64_t width = 0;
  double mean = 0;
  double inverse_deviation = 0;

  std::int64_t at(std::int64_t p, std::int64_t c) const { return p * channels + first + c; }
  double count() const { return double(positions * width); }
  double x_hat(std::int64_t i) const { return (x[i] - mean) * inverse_deviation; }

  void take_moments(double epsilon) {
    double sum = 0;
    for (std::int64_t p = 0; p < positions; ++p) {
      for (std::int64_t c = 0; c < width; ++c)
        sum += x[at(p, c)];
    }
    mean = sum / count();
    double variance = 0;
    for (std::int64_t p = 0; p < positions; ++p) {
      for (std::int64_t c = 0; c < width; ++c)
        variance += (x[at(p, c)] - mean) * (x[at(p, c)] - mean);
    }
    inverse_deviation = 1.0 / std::sqrt(variance / count() + epsilon);
  }
};

// Scale (gamma, ones) and bias (beta, zeros) per channel. Keeps its input; backward recomputes
// the statistics from it.
class GroupNormKernel final : public Kernel {
 public:
  GroupNormKernel(const Layer& layer, const std::vector<Shape>& inputs, DType dtype)
      : Kernel(layer.type, dtype, inputs, inputs.at(0)),
        channels_(inputs.at(0).back()),
        groups_(own_fields<GroupNormFields>(layer.params).groups),
        epsilon_(own_fields<GroupNormFields>(layer.params).epsilon) {
    IPUSIM_CHECK(inputs.size() == 1 && groups_ > 0 && channels_ % groups_ == 0 && epsilon_ > 0);
  }

  std::vector<ParameterSpec> parameters() const override {
    return {{ParameterSpec::Role::kScale, {channels_}, channels_, channels_},
            {ParameterSpec::Role::kBias, {channels_}, channels_, channels_}};
  }

  ForwardResult forward(const std::vector<const Tensor*>& inputs, std::span<const Tensor> params,
                        const ForwardContext& /*context*/) const override {
    IPUSIM_CHECK(inputs.size() == 1 && inputs[0]->sample_shape() == input_shapes()[0]);
    const Tensor& x = *inputs[0];
    Tensor y(x.shape());
    for (std::int64_t n = 0; n < x.batch(); ++n) {
      for (std::int64_t g = 0; g < groups_; ++g) {
        const GroupNormGroup group = take(x, n, g);
        float* out = y.data() + n * x.sample_elements();
        for (std::int64_t p = 0; p < group.positions; ++p) {
          for (std::int64_t c = group.first; c < group.first + group.width; ++c) {
            const std::int64_t i = p * channels_ + c;
            out[i] = static_cast<float>(group.x_hat(i) * params[0][c] + params[1][c]);
          }
        }
      }
    }
    round_to_dtype(y, dtype());
    SavedState saved;
    saved.dtype = dtype();
    saved.tensors.push_back(x);
    return {std::move(y), std::move(saved), {}};
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& saved,
                               std::span<const Tensor> params,
                               std::span<GradientAccumulator> gradients) const override {
    const Tensor& x = saved.tensors.at(0);
    Tensor dx(x.shape());
    std::vector<double> dgamma(static_cast<std::size_t>(channels_));
    std::vector<double> dbeta(static_cast<std::size_t>(channels_));
    for (std::int64_t n = 0; n < x.batch(); ++n) {
      const std::int64_t offset = n * x.sample_elements();
      for (std::int64_t g = 0; g < groups_; ++g) {
        const GroupNormGroup group = take(x, n, g);
        group_backward(group, output_gradient.data() + offset, params[0], dx.data() + offset);
        for (std::int64_t p = 0; p < group.positions; ++p) {
          for (std::int64_t c = group.first; c < group.first + group.width; ++c) {
            const double dy = output_gradient[offset + p * channels_ + c];
            dgamma[static_cast<std::size_t>(c)] += dy * group.x_hat(p * channels_ + c);
            dbeta[static_cast<std::size_t>(c)] += dy;
          }
        }
      }
    }
    round_to_dtype(dx, dtype());
    accumulate(dgamma, gradients[0]);
    accumulate(dbeta, gradients[1]);
    return {std::move(dx)};
  }

 private:
  GroupNormGroup take(const Tensor& x, std::int64_t n, std::int64_t g) const {
    const std::int64_t width = channels_ / groups_;
    GroupNormGroup group{.x = x.data() + n * x.sample_elements(),
                         .positions = x.sample_elements() / channels_,
                         .channels = channels_,
                         .first = g * width,
                         .width = width};
    group.take_moments(epsilon_);
    return group;
  }

  // dx = (gh − mean(gh) − x̂·mean(gh·x̂)) / deviation over the group, with gh = dy·gamma.
  static void group_backward(const GroupNormGroup& group, const float* dy, const Tensor& gamma,
                             float* dx) {
    double sum = 0;
    double sum_x_hat = 0;
    for (std::int64_t p = 0; p < group.positions; ++p) {
      for (std::int64_t c = 0; c < group.width; ++c) {
        const std::int64_t i = group.at(p, c);
        const double gh = double(dy[i]) * gamma[group.first + c];
        sum += gh;
        sum_x_hat += gh * group.x_hat(i);
      }
    }
    for (std::int64_t p = 0; p < group.positions; ++p) {
      for (std::int64_t c = 0; c < group.width; ++c) {
        const std::int64_t i = group.at(p, c);
        const double gh = double(dy[i]) * gamma[group.first + c];
        dx[i] = static_cast<float>(
            group.inverse_deviation *
            (gh - sum / group.count() - group.x_hat(i) * sum_x_hat / group.count()));
      }
    }
  }

  void accumulate(const std::vector<double>& sums, GradientAccumulator& accumulator) const {
    Tensor gradient({channels_});
    for (std::int64_t c = 0; c < channels_; ++c)
      gradient[c] = static_cast<float>(sums[static_cast<std::size_t>(c)]);
    round_to_dtype(gradient, dtype());
    accumulator.add(gradient.values());
  }

  std::int64_t channels_;
  std::int64_t groups_;
  double epsilon_;
};

std::unique_ptr<Kernel> group_norm_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                          DType dtype, std::uint64_t /*seed*/) {
  return std::make_unique<GroupNormKernel>(layer, inputs, dtype);
}

}  // namespace

LayerTypeDef group_norm_type() {
  return {.name = "group_norm",
          .keys = kGroupNormKeys,
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_group_norm,
          .shape = group_norm_shape,
          .cost = normalization_cost,
          .lower = group_norm_operations,
          .kernel = group_norm_kernel};
}

}  // namespace ipusim::models
