// flatten: its input as one axis. In ipusim's order (an image's [H, W, C] as held, Keras' flatten)
// it is a view; in channels-first order (PyTorch's and ONNX's flatten of [C, H, W]) the kernel
// moves the last axis first, so that an imported dense layer reads its features in the order its
// weights were trained on, whatever sits between the two.

#include <array>

#include "models/layers/types/type_support.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {
namespace {

enum class FlattenOrder { kChannelsLast, kChannelsFirst };
constexpr std::array<const char*, 2> kFlattenOrders = {"channels_last", "channels_first"};

struct FlattenFields {
  FlattenOrder order = FlattenOrder::kChannelsLast;
};

const std::array kFlattenKeys = {
    enum_key<&FlattenFields::order>(
        "order", kFlattenOrders,
        "the features' order: channels_last keeps the input's ([H, W, C] pixel by pixel, as "
        "Keras flattens); channels_first moves the last axis first (channel by channel, as "
        "PyTorch and ONNX flatten [C, H, W])"),
};

void read_flatten(const core::ConfigNode& layer, LayerParams& params) {
  own_fields_to_set<FlattenFields>(params);  // the defaults, when no key is given
  read_keys(layer, kFlattenKeys, params);
}

Shape flatten_shape(const Layer& /*layer*/, const std::vector<InputShape>& inputs) {
  return {element_count(only_input(inputs).shape)};
}

// Each sample viewed as [positions, channels] (channels the last axis): the output holds it as
// [channels, positions]; backward moves the gradient back.
class ChannelsFirstFlattenKernel final : public Kernel {
 public:
  ChannelsFirstFlattenKernel(const std::vector<Shape>& inputs, DType dtype)
      : Kernel(LayerType::kFlatten, dtype, inputs, Shape{element_count(inputs.at(0))}),
        channels_(inputs.at(0).empty() ? 1 : inputs.at(0).back()),
        positions_(element_count(inputs.at(0)) / channels_) {}

  ForwardResult forward(const std::vector<const Tensor*>& inputs,
                        std::span<const Tensor> /*params*/,
                        const ForwardContext& /*context*/) const override {
    IPUSIM_CHECK(inputs.size() == 1 && inputs[0]->sample_shape() == input_shapes()[0]);
    const Tensor& x = *inputs[0];
    Tensor y(Shape{x.batch(), channels_ * positions_});
    transpose_samples(x.data(), y.data(), x.batch(), positions_, channels_);
    return {std::move(y), SavedState{}, {}};
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& /*saved*/,
                               std::span<const Tensor> /*params*/,
                               std::span<GradientAccumulator> /*gradients*/) const override {
    Shape shape = input_shapes()[0];
    shape.insert(shape.begin(), output_gradient.batch());
    Tensor dx(shape);
    transpose_samples(output_gradient.data(), dx.data(), output_gradient.batch(), channels_,
                      positions_);
    return {std::move(dx)};
  }

 private:
  // Each sample of `from`, [rows, columns], written to `to` as [columns, rows].
  static void transpose_samples(const float* from, float* to, std::int64_t batch, std::int64_t rows,
                                std::int64_t columns) {
    for (std::int64_t n = 0; n < batch; ++n) {
      const std::int64_t base = n * rows * columns;
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < columns; ++c)
          to[base + c * rows + r] = from[base + r * columns + c];
    }
  }

  std::int64_t channels_;
  std::int64_t positions_;
};

std::unique_ptr<Kernel> flatten_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                       DType dtype, std::uint64_t /*seed*/) {
  const auto& own = own_fields_or_defaults<FlattenFields>(layer.params);
  if (own.order == FlattenOrder::kChannelsFirst)
    return std::make_unique<ChannelsFirstFlattenKernel>(inputs, dtype);
  return detail::make_flatten(inputs, dtype);
}

}  // namespace

LayerTypeDef flatten_type() {
  return {.name = "flatten",
          .keys = kFlattenKeys,
          .inputs = LayerInputs::kOne,
          .view = true,
          .read = read_flatten,
          .shape = flatten_shape,
          .cost = no_cost,
          .lower = no_operations,
          .kernel = flatten_kernel};
}

}  // namespace ipusim::models
