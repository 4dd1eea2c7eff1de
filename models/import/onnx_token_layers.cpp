// ONNX operators over a sequence's tokens and learned tensors that are not a layer's weights, as
// PyTorch exports encoders and ViT: a written-out layer norm, the mean over tokens (ReduceMean),
// one token (Gather of a constant index), a position table added (an nn.Parameter), a class
// token concatenated in front (Expand of an nn.Parameter, then Concat), and an image's patches
// as a sequence (Reshape to [C, H·W] then Transpose) (models/import/onnx_converter.hpp).

#include <algorithm>
#include <cmath>

#include "models/import/onnx_converter.hpp"
#include "models/import/onnx_tensors.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models::onnx_detail {

void OnnxConverter::layer_norm_pattern(const LayerNormPattern& norm) {
  const auto& first = graph_.node(*norm.nodes.begin());
  const Activation* in = value(norm.input, first);
  if (!in) {
    failed_.insert(norm.output);
    return;
  }
  const std::int64_t width = in->onnx_shape.back();
  std::vector<Tensor> weights = {Tensor({width}, 1.0f), Tensor({width}, 0.0f)};
  if (!norm.scale.empty()) {
    weights[0] = onnx_float_tensor(*index_.constant(norm.scale), path_);
    weights[1] = onnx_float_tensor(*index_.constant(norm.bias), path_);
  }
  if (in->channels_first || weights[0].shape() != Shape{width} ||
      weights[1].shape() != Shape{width}) {
    problem(first, "a layer normalization over the last axis of " + shape_text(in->onnx_shape) +
                       " whose scale and bias are not [" + std::to_string(width) + "]");
    failed_.insert(norm.output);
    return;
  }
  add_layer({{"id", unique_id(module_id(norm.name, "", "layer_norm"))},
             {"type", "layer_norm"},
             {"epsilon", decimal(static_cast<float>(norm.epsilon))}},
            norm.output, *in, {in->layer}, std::move(weights));
}

// The ONNX axes a reduction names: its attribute, or its second input (opset 18).
std::vector<std::int64_t> OnnxConverter::reduced_axes(const onnx::NodeProto& node) const {
  auto axes = ints_attribute(node, "axes");
  if (node.input_size() > 1)
    for (const double v : index_.constant_values(node.input(1)))
      axes.push_back(static_cast<std::int64_t>(v));
  return axes;
}

// ReduceMean over the tokens of a sequence ([S, H] per sample, axis 1 with the batch),
// dropping the axis: token_mean; over an image's height and width (x.mean([2, 3]), MNASNet's
// pooling): global_average_pool2d.
void OnnxConverter::reduce_mean(const onnx::NodeProto& node) {
  const Activation* in = value(node);
  if (!in)
    return;
  auto axes = reduced_axes(node);
  if (in->channels_first && in->onnx_shape.size() == 3 && axes.size() == 2) {
    for (auto& axis : axes)
      axis = sample_axis(axis, *in);
    std::sort(axes.begin(), axes.end());
    if (axes != std::vector<std::int64_t>{1, 2})
      return problem(node, "only a mean of an image over its height and width (axes 2 and 3)");
    const bool keep = int_attribute(node, "keepdims", 1) != 0;
    const Shape out = keep ? Shape{in->onnx_shape[0], 1, 1} : Shape{in->onnx_shape[0]};
    add_layer({{"id", id_of(node)}, {"type", "global_average_pool2d"}}, node.output(0),
              {"", out, false}, {in->layer});
    return;
  }
  if (in->channels_first || in->onnx_shape.size() < 2 || axes.size() != 1 ||
      sample_axis(axes[0], *in) != 0 || int_attribute(node, "keepdims", 1) != 0)
    return problem(node,
                   "only a mean over the tokens of a sequence (axis 1 of [batch, sequence, "
                   "hidden], keepdims=0), as token_mean");
  const Shape out(in->onnx_shape.begin() + 1, in->onnx_shape.end());
  add_layer({{"id", id_of(node)}, {"type", "token_mean"}}, node.output(0), {"", out, false},
            {in->layer});
}

// Gather of one constant token of a sequence (axis 1 with the batch): token_select.
void OnnxConverter::select_token(const onnx::NodeProto& node, const Activation& in) {
  const auto index = index_.constant_values(node.input(1));
  const auto* constant = index_.constant(node.input(1));
  if (in.channels_first || in.onnx_shape.size() < 2 || index.size() != 1 ||
      constant->dims_size() != 0 || sample_axis(int_attribute(node, "axis", 0), in) != 0 ||
      index[0] != std::floor(index[0]) || std::abs(index[0]) > double(in.onnx_shape[0]) ||
      index[0] == double(in.onnx_shape[0]))
    return problem(node,
                   "only a lookup of the model input's token ids in a [vocabulary, hidden] "
                   "initializer (an embedding), or of one token of a sequence (a constant "
                   "scalar index on axis 1 of [batch, sequence, hidden], token_select)");
  const Shape out(in.onnx_shape.begin() + 1, in.onnx_shape.end());
  add_layer({{"id", id_of(node)},
             {"type", "token_select"},
             {"index", static_cast<std::int64_t>(index[0])}},
            node.output(0), {"", out, false}, {in.layer});
}

// An initializer of the activation's shape (a leading 1 for the batch allowed) added to it: a
// learned table, position_table.
bool OnnxConverter::position_table(const onnx::NodeProto& node, const Activation& in,
                                   const onnx::TensorProto& constant) {
  if (!index_.is_initializer(constant.name()) || in.channels_first)
    return false;
  Tensor table = onnx_float_tensor(constant, path_);
  Shape with_batch = {1};
  with_batch.insert(with_batch.end(), in.onnx_shape.begin(), in.onnx_shape.end());
  if (table.shape() != in.onnx_shape && table.shape() != with_batch)
    return false;
  add_layer({{"id", id_of(node)}, {"type", "position_table"}}, node.output(0), in, {in.layer},
            {table.reshaped(in.onnx_shape)});
  return true;
}

// Expand of an initializer over the batch, read by a Concat: a class token it puts in front.
void OnnxConverter::expand(const onnx::NodeProto& node) {
  const onnx::NodeProto* concat = index_.sole_consumer(node.output(0));
  if (!index_.is_initializer(node.input(0)) || concat == nullptr || concat->op_type() != "Concat")
    return problem(node,
                   "only an Expand of an initializer over the batch put in front of a sequence "
                   "by Concat (a class token)");
  expanded_[node.output(0)] = node.input(0);
}

// Concat(Expand(token), sequence) on the sequence axis: class_token.
bool OnnxConverter::class_token(const onnx::NodeProto& node) {
  const auto found = expanded_.find(node.input(0));
  if (found == expanded_.end() || node.input_size() != 2)
    return false;
  const Activation* in = value(node.input(1), node);
  if (!in)
    return true;
  const Tensor token = onnx_float_tensor(*index_.constant(found->second), path_);
  const std::int64_t width = in->onnx_shape.back();
  if (in->channels_first || in->onnx_shape.size() != 2 ||
      sample_axis(int_attribute(node, "axis", 0), *in) != 0 || token.elements() != width) {
    problem(node, "a Concat of an expanded initializer of shape " + shape_text(token.shape()) +
                      " and a sequence of shape " + shape_text(in->onnx_shape) +
                      " (a class token is one [hidden] row put in front)");
    return true;
  }
  add_layer({{"id", id_of(node)}, {"type", "class_token"}}, node.output(0),
            {"", {in->onnx_shape[0] + 1, width}, false}, {in->layer}, {token.reshaped({width})});
  return true;
}

// Reshape of a channels-first image [C, H, W] to [C, H·W] read only by a Transpose to
// [H·W, C]: the image's pixels as a sequence, which ipusim's channels-last [H, W, C] is already
// in order; one reshape layer.
bool OnnxConverter::patches(const onnx::NodeProto& node, const Activation& in) {
  const onnx::NodeProto* transpose = index_.sole_consumer(node.output(0));
  const auto shape = index_.shape(node.output(0));
  const Shape& s = in.onnx_shape;
  if (!in.channels_first || s.size() != 3 || !shape || shape->size() != 3 || (*shape)[1] != s[0] ||
      (*shape)[2] != s[1] * s[2] || transpose == nullptr || transpose->op_type() != "Transpose" ||
      ints_attribute(*transpose, "perm") != std::vector<std::int64_t>{0, 2, 1})
    return false;
  skipped_.insert(index_.index_of(*transpose));
  const Shape out = {s[1] * s[2], s[0]};
  add_layer({{"id", id_of(node)}, {"type", "reshape"}, {"shape", out}}, transpose->output(0),
            {"", out, false}, {in.layer});
  return true;
}

}  // namespace ipusim::models::onnx_detail
