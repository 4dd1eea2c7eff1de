// conv1d: a 1-D convolution over [length, channels], then a bias and an activation; with groups
// as conv2d's. It is conv2d over a [1, length, channels] image with a 1 x kernel window, and its
// kernel is conv2d's on that image (weights [kernel, channels / groups, filters], Keras' Conv1D
// layout).

#include <array>
#include <utility>

#include "models/layers/types/type_support.hpp"
#include "sim/core/checked.hpp"

namespace ipusim::models {
namespace {

// "valid" or "same", or a list [left, right], which the read function reads.
LayerKey conv1d_padding_key() {
  return filling(core::choice_key("padding", {"valid", "same"}, "valid",
                                  "same: TensorFlow's, ceil(length / stride) outputs; or a list: "
                                  "the pads [left, right], integers from 0"),
                 nullptr);
}

const std::array kConv1dKeys = {
    positive_int_key<&LayerParams::filters>("filters", "output channels"),
    positive_int_key<&LayerParams::kernel_w>("kernel", "the window's length"),
    int_key<&LayerParams::stride_w>("stride", 1, 1, core::kMaxCount, "the window's step"),
    int_key<&LayerParams::dilation_w>("dilation", 1, 1, core::kMaxCount,
                                      "the step between the kernel's taps (1: adjacent)"),
    conv1d_padding_key(),
    kActivationKey,
    kBiasKey,
    int_key<&LayerParams::groups>("groups", 1, 1, core::kMaxCount,
                                  "channel groups, dividing the input channels and filters"),
};

// "valid", "same" or [left, right], held as conv2d's padding of a one-row image.
void read_conv1d(const core::ConfigNode& layer, LayerParams& params) {
  read_keys(layer, kConv1dKeys, params);
  const auto value = layer.find("padding");
  if (!value)
    return;
  if (value->is_string()) {
    params.padding = read_padding(*value);
    return;
  }
  if (!value->is_array() || value->size() != 2)
    value->fail("expected \"valid\", \"same\" or [left, right], found " + value->json().dump());
  const std::vector<std::int64_t> pads = value->as_int_list(0, core::kMaxCount);
  params.padding = {.same = false, .top = 0, .left = pads[0], .bottom = 0, .right = pads[1]};
}

// The conv2d that conv1d is, over [1, length, channels].
Layer conv1d_as_conv2d(const Layer& layer) {
  Layer conv = layer;
  conv.type = LayerType::kConv2d;
  conv.params.kernel_h = conv.params.stride_h = conv.params.dilation_h = 1;
  conv.params.padding.top = conv.params.padding.bottom = 0;
  return conv;
}

Shape conv1d_image(const Shape& input) {
  return {1, input[0], input[1]};
}

Shape conv1d_output(const Layer& layer, const Shape& input) {
  return {layer_window(conv1d_as_conv2d(layer), ImageAxis::kWidth, input[0]).out,
          layer.params.filters};
}

Shape conv1d_shape(const Layer& layer, const std::vector<InputShape>& inputs) {
  const InputShape& input = only_input(inputs);
  if (input.shape.size() != 2)
    fail_layer(layer, "needs an input of shape [length, channels], but " + input_text(input));
  const LayerParams& p = layer.params;
  const std::int64_t span = window_span(conv1d_as_conv2d(layer), ImageAxis::kWidth);
  expect_span(layer, span);
  if (!p.padding.same && span > input.shape[0] + p.padding.left + p.padding.right) {
    fail_layer(layer,
               "has a kernel of " + std::to_string(p.kernel_w) +
                   (p.dilation_w == 1 ? ""
                                      : " dilated by " + std::to_string(p.dilation_w) + " (" +
                                            std::to_string(span) + " long)") +
                   " longer than its input" +
                   (p.padding == kValidPadding ? ""
                                               : " padded by [" + std::to_string(p.padding.left) +
                                                     ", " + std::to_string(p.padding.right) + "]") +
                   ": " + input_text(input));
  }
  expect_groups(layer, input.shape[1]);
  return conv1d_output(layer, input.shape);
}

LayerCost conv1d_cost(const Layer& layer, const std::vector<Shape>& inputs, const CostSizes& size) {
  const LayerParams& p = layer.params;
  const std::int64_t weights =
      core::checked_mul(core::checked_mul(p.kernel_w, inputs.front()[1] / p.groups, kParamCount),
                        p.filters, kParamCount);
  return linear_cost(layer, size, weights, p.filters);
}

std::vector<Operation> conv1d_operations(const Layer& layer, const std::vector<Shape>& inputs,
                                         const Shape& output) {
  const LayerParams& p = layer.params;
  const double out = double(element_count(output));
  std::vector<Operation> ops = {convolution_op({.positions = double(output[0]),
                                                .taps = double(p.kernel_w),
                                                .in_channels = inputs.front()[1],
                                                .filters = p.filters,
                                                .groups = p.groups,
                                                .in = double(element_count(inputs.front())),
                                                .out = out,
                                                .out_width = output[0],
                                                .in_width = inputs.front()[0],
                                                .kernel_width = p.kernel_w,
                                                .stride = p.stride_w})};
  if (p.bias)
    ops.push_back(lowered(vector_op("bias_add", OpClass::kElementwise, out, kBiasFlops),
                          VectorLowering::kBiasAdd, double(p.filters)));
  add_activation(ops, p.activation, out);
  return ops;
}

// conv2d's kernel on [N, 1, L, C]; the tensors are relabelled on the way in and out.
class Conv1dKernel final : public Kernel {
 public:
  Conv1dKernel(const Layer& layer, const std::vector<Shape>& inputs, DType dtype)
      : Kernel(layer.type, dtype, inputs, conv1d_output(layer, inputs.at(0))),
        image_(detail::make_conv2d(conv1d_as_conv2d(layer), {conv1d_image(inputs[0])}, dtype)) {}

  std::vector<ParameterSpec> parameters() const override {
    std::vector<ParameterSpec> specs = image_->parameters();
    Shape& weight = specs.front().shape;  // [1, kernel, C / groups, filters]
    weight.erase(weight.begin());
    return specs;
  }

  ForwardResult forward(const std::vector<const Tensor*>& inputs, std::span<const Tensor> params,
                        const ForwardContext& context) const override {
    IPUSIM_CHECK(inputs.size() == 1 && inputs[0]->sample_shape() == input_shapes()[0]);
    const Tensor x = inputs[0]->reshaped(as_image(*inputs[0]));
    const std::vector<Tensor> weights = image_params(params);
    ForwardResult result = image_->forward({&x}, weights, context);
    const Shape shape = {result.output.batch(), output_shape()[0], output_shape()[1]};
    result.output = std::move(result.output).reshaped(shape);
    return result;
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& saved,
                               std::span<const Tensor> params,
                               std::span<GradientAccumulator> gradients) const override {
    const Tensor g = output_gradient.reshaped(as_image(output_gradient));
    std::vector<Tensor> dx = image_->backward(g, saved, image_params(params), gradients);
    const Shape shape = {dx.front().batch(), input_shapes()[0][0], input_shapes()[0][1]};
    dx.front() = std::move(dx.front()).reshaped(shape);
    return dx;
  }

 private:
  static Shape as_image(const Tensor& tensor) {
    return {tensor.batch(), 1, tensor.dim(1), tensor.dim(2)};
  }

  // The weights under conv2d's shape (the bias as it is).
  std::vector<Tensor> image_params(std::span<const Tensor> params) const {
    std::vector<Tensor> out(params.begin(), params.end());
    const Shape& weight = out.front().shape();
    out.front() = std::move(out.front()).reshaped({1, weight[0], weight[1], weight[2]});
    return out;
  }

  std::unique_ptr<Kernel> image_;
};

std::unique_ptr<Kernel> conv1d_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                      DType dtype, std::uint64_t /*seed*/) {
  return std::make_unique<Conv1dKernel>(layer, inputs, dtype);
}

}  // namespace

LayerTypeDef conv1d_type() {
  return {.name = "conv1d",
          .keys = kConv1dKeys,
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_conv1d,
          .shape = conv1d_shape,
          .cost = conv1d_cost,
          .lower = conv1d_operations,
          .kernel = conv1d_kernel};
}

}  // namespace ipusim::models
