#include "models/layers/shape_inference.hpp"

#include "models/layers/layer_types.hpp"
#include "sim/core/checked.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {
namespace {

[[noreturn]] void fail(const Layer& layer, const std::string& message) {
  throw core::ConfigError(layer.file, layer.pointer, layer_label(layer) + " " + message);
}

Shape infer_input(const Layer& layer, const InputShape& input) {
  if (!layer.params.shape.empty() && layer.params.shape != input.shape) {
    fail(layer, "declares shape " + shape_text(layer.params.shape) + ", but the model input is " +
                    shape_text(input.shape));
  }
  return input.shape;
}

Shape infer_reshape(const Layer& layer, const InputShape& input) {
  const std::int64_t elements = element_count(input.shape);
  Shape out = layer.params.shape;
  std::int64_t known = 1;
  for (const std::int64_t dim : out)
    known = core::checked_mul(known, dim == -1 ? 1 : dim, "element count");
  const std::string from = "cannot reshape " + shape_text(input.shape) + " (" +
                           std::to_string(elements) + " elements) to " + shape_text(out);
  for (std::int64_t& dim : out) {
    if (dim != -1)
      continue;
    if (elements % known != 0) {
      fail(layer, from + ": " + std::to_string(elements) + " is not a multiple of " +
                      std::to_string(known));
    }
    dim = elements / known;
  }
  if (element_count(out) != elements)
    fail(layer, from + " (" + std::to_string(element_count(out)) + " elements)");
  return out;
}

Shape infer_dense(const Layer& layer, const InputShape& input) {
  Shape out = input.shape;
  out.back() = layer.params.units;
  return out;
}

void expect_image(const Layer& layer, const InputShape& input) {
  if (input.shape.size() != 3)
    fail(layer, "needs an input of shape [height, width, channels], but " + input_text(input));
}

// Output length of one spatial axis; `window` must fit when padding is valid.
std::int64_t spatial(std::int64_t size, std::int64_t window, std::int64_t stride, Padding padding) {
  if (padding == Padding::kSame)
    return (size + stride - 1) / stride;
  return (size - window) / stride + 1;
}

void expect_window_fits(const Layer& layer, const InputShape& input, std::int64_t height,
                        std::int64_t width, const std::string& what) {
  if (layer.params.padding == Padding::kValid &&
      (height > input.shape[0] || width > input.shape[1])) {
    fail(layer, "has a " + std::to_string(height) + "x" + std::to_string(width) + " " + what +
                    " larger than its input: " + input_text(input));
  }
}

Shape infer_conv2d(const Layer& layer, const InputShape& input) {
  const LayerParams& p = layer.params;
  expect_image(layer, input);
  expect_window_fits(layer, input, p.kernel_h, p.kernel_w, "kernel");
  return {spatial(input.shape[0], p.kernel_h, p.stride_h, p.padding),
          spatial(input.shape[1], p.kernel_w, p.stride_w, p.padding), p.filters};
}

Shape infer_maxpool2d(const Layer& layer, const InputShape& input) {
  const LayerParams& p = layer.params;
  expect_image(layer, input);
  expect_window_fits(layer, input, p.pool_h, p.pool_w, "pool window");
  return {spatial(input.shape[0], p.pool_h, p.stride_h, p.padding),
          spatial(input.shape[1], p.pool_w, p.stride_w, p.padding), input.shape[2]};
}

// The mean over the image of each channel; any image size pools to one value per channel.
Shape infer_global_average_pool2d(const Layer& layer, const InputShape& input) {
  expect_image(layer, input);
  return {input.shape[2]};
}

Shape infer_add(const Layer& layer, const std::vector<InputShape>& inputs) {
  for (const InputShape& input : inputs) {
    if (input.shape != inputs.front().shape) {
      fail(layer, "needs inputs of equal shape, but " + input_text(inputs.front()) + " and " +
                      input_text(input));
    }
  }
  return inputs.front().shape;
}

std::size_t concat_axis(const Layer& layer, std::size_t rank) {
  const std::int64_t axis = layer.params.axis;
  const auto signed_rank = std::int64_t(rank);
  if (axis < -signed_rank || axis >= signed_rank) {
    fail(layer, "has axis " + std::to_string(axis) + ", but its inputs have " +
                    std::to_string(rank) + " axes (allowed: " + std::to_string(-signed_rank) +
                    " to " + std::to_string(signed_rank - 1) + ")");
  }
  return std::size_t(axis < 0 ? axis + signed_rank : axis);
}

bool agree_except(const Shape& a, const Shape& b, std::size_t axis) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (i != axis && a[i] != b[i])
      return false;
  }
  return true;
}

Shape infer_concat(const Layer& layer, const std::vector<InputShape>& inputs) {
  const InputShape& first = inputs.front();
  for (const InputShape& input : inputs) {
    if (input.shape.size() != first.shape.size())
      fail(layer,
           "needs inputs of equal rank, but " + input_text(first) + " and " + input_text(input));
  }
  const std::size_t axis = concat_axis(layer, first.shape.size());
  Shape out = first.shape;
  out[axis] = 0;
  for (const InputShape& input : inputs) {
    if (!agree_except(input.shape, first.shape, axis)) {
      fail(layer, "needs inputs that agree on every axis but axis " + std::to_string(axis) +
                      ", but " + input_text(first) + " and " + input_text(input));
    }
    out[axis] = core::checked_add(out[axis], input.shape[axis], "concatenated axis");
  }
  return out;
}

Shape infer_slice(const Layer& layer, const InputShape& input) {
  const std::size_t axis = concat_axis(layer, input.shape.size());
  const auto& p = layer.params;
  if (p.slice_start + p.slice_size > input.shape[axis]) {
    fail(layer, "takes elements " + std::to_string(p.slice_start) + " to " +
                    std::to_string(p.slice_start + p.slice_size - 1) + " of axis " +
                    std::to_string(axis) + ", but " + input_text(input));
  }
  Shape out = input.shape;
  out[axis] = p.slice_size;
  return out;
}

// An embedding's token ids and token types, and an attention's padding mask: one value per
// position of the sequence. Ids and types are integers from the model input (directly or
// through layers that only move numbers); no gradient flows into them.
void expect_sequence(const Layer& layer, const InputShape& input, std::int64_t sequence,
                     const std::string& what) {
  const Shape expected = {sequence};
  if (input.shape != expected) {
    fail(layer, "takes " + what + " of shape " + shape_text(expected) + " (sequence_length), but " +
                    input_text(input));
  }
}

Shape infer_embedding(const Layer& layer, const std::vector<InputShape>& inputs) {
  const LayerParams& p = layer.params;
  if (inputs.size() == 2 && p.token_types == 0) {
    fail(layer, "has no token types (token_types is 0), so it takes no second input, but " +
                    input_text(inputs[1]));
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::string what = i == 0 ? "token ids" : "token types";
    if (!inputs[i].model_input)
      fail(layer,
           "takes " + what + " from the model input, not the output of '" + inputs[i].source + "'");
    expect_sequence(layer, inputs[i], p.sequence_length, what);
  }
  return {p.sequence_length, p.hidden};
}

Shape infer_transformer_encoder(const Layer& layer, const std::vector<InputShape>& inputs) {
  const Shape expected = {layer.params.sequence_length, layer.params.hidden};
  if (inputs[0].shape != expected) {
    fail(layer, "needs an input of shape " + shape_text(expected) +
                    " (sequence_length, hidden), but " + input_text(inputs[0]));
  }
  if (inputs.size() == 2)
    expect_sequence(layer, inputs[1], expected[0], "a padding mask");
  return expected;
}

Shape infer_attention(const Layer& layer, const std::vector<InputShape>& inputs) {
  const Shape& x = inputs[0].shape;
  if (x.size() != 2)
    fail(layer, "needs an input of shape [sequence, hidden], but " + input_text(inputs[0]));
  if (x[1] % layer.params.heads != 0) {
    fail(layer, "has " + std::to_string(layer.params.heads) +
                    " heads, which must divide hidden (the last axis), but " +
                    input_text(inputs[0]));
  }
  if (inputs.size() == 2)
    expect_sequence(layer, inputs[1], x[0], "a padding mask");
  return x;
}

// The input of a layer that takes one; the layer graph has checked the count.
const InputShape& only_input(const std::vector<InputShape>& inputs) {
  IPUSIM_CHECK(inputs.size() == 1);
  return inputs.front();
}

}  // namespace

std::int64_t element_count(std::span<const std::int64_t> shape) {
  std::int64_t count = 1;
  for (const std::int64_t dim : shape)
    count = core::checked_mul(count, dim, "element count");
  return count;
}

std::string shape_text(const Shape& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i)
    text += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::string input_text(const InputShape& input) {
  if (input.source.empty())
    return "the model input is " + shape_text(input.shape);
  return "'" + input.source + "' gives " + shape_text(input.shape);
}

Shape infer_output_shape(const Layer& layer, const std::vector<InputShape>& inputs) {
  IPUSIM_CHECK(!inputs.empty());
  // Only the loss yields a scalar, and nothing consumes the loss.
  for (const InputShape& input : inputs)
    IPUSIM_CHECK(!input.shape.empty());
  switch (layer.type) {
    case LayerType::kAdd:
      return infer_add(layer, inputs);
    case LayerType::kConcat:
      return infer_concat(layer, inputs);
    case LayerType::kEmbedding:
      return infer_embedding(layer, inputs);
    // A half of an encoder keeps its shape as the whole does; only the attention takes a mask.
    case LayerType::kTransformerEncoder:
    case LayerType::kTransformerAttention:
    case LayerType::kTransformerFeedForward:
      return infer_transformer_encoder(layer, inputs);
    case LayerType::kAttention:
      return infer_attention(layer, inputs);
    case LayerType::kInput:
      return infer_input(layer, only_input(inputs));
    case LayerType::kFlatten:
      return {element_count(only_input(inputs).shape)};
    case LayerType::kReshape:
      return infer_reshape(layer, only_input(inputs));
    case LayerType::kDense:
      return infer_dense(layer, only_input(inputs));
    case LayerType::kConv2d:
      return infer_conv2d(layer, only_input(inputs));
    case LayerType::kMaxPool2d:
      return infer_maxpool2d(layer, only_input(inputs));
    case LayerType::kGlobalAveragePool2d:
      return infer_global_average_pool2d(layer, only_input(inputs));
    case LayerType::kSoftmaxCrossEntropy:
      IPUSIM_CHECK(inputs.size() == 1);
      return {};  // the loss is a scalar
    case LayerType::kSlice:
      return infer_slice(layer, only_input(inputs));
    case LayerType::kDropout:
    case LayerType::kRelu:
    case LayerType::kGelu:
    case LayerType::kTanh:
    case LayerType::kSoftmax:
    case LayerType::kLayerNorm:
    case LayerType::kBatchNorm:
      return only_input(inputs).shape;
  }
  core::fail_invariant("layer.type is one of LayerType's values", __FILE__, __LINE__);
}

}  // namespace ipusim::models
