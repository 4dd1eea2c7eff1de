// PyTorch's nn.GroupNorm as it exports it, as one group_norm layer
// (models/import/onnx_converter.hpp): Reshape of the value to [batch, groups, -1],
// InstanceNormalization with scale 1 and bias 0 per group, Reshape back to the value's shape,
// Mul by the per-channel scale and Add of the per-channel bias.

#include <algorithm>

#include "models/import/onnx_converter.hpp"
#include "models/import/onnx_tensors.hpp"

namespace ipusim::models::onnx_detail {
namespace {

bool all_equal(const std::vector<double>& values, std::size_t count, double value) {
  return values.size() == count &&
         std::all_of(values.begin(), values.end(), [&](double v) { return v == value; });
}

// The node that alone reads `tensor`, if it is an `op` with a constant other input.
const onnx::NodeProto* group_norm_affine(const OnnxGraphIndex& index, const std::string& tensor,
                                         const std::string& op, std::string& constant) {
  const onnx::NodeProto* node = index.sole_consumer(tensor);
  if (node == nullptr || node->op_type() != op || node->input_size() != 2)
    return nullptr;
  const int other = node->input(0) == tensor ? 1 : 0;
  if (node->input(1 - other) != tensor || index.constant(node->input(other)) == nullptr)
    return nullptr;
  constant = node->input(other);
  return node;
}

}  // namespace

void OnnxConverter::find_group_norm(const onnx::NodeProto& norm) {
  const onnx::NodeProto* split = index_.producer(norm.input(0));
  if (split == nullptr || split->op_type() != "Reshape" || norm.input_size() != 3 ||
      index_.sole_consumer(split->output(0)) != &norm)
    return;
  const std::vector<double> target = index_.constant_values(split->input(1));
  if (target.size() != 3 || target[1] < 1)
    return;
  const auto groups = static_cast<std::size_t>(target[1]);
  if (!all_equal(index_.constant_values(norm.input(1)), groups, 1.0) ||
      !all_equal(index_.constant_values(norm.input(2)), groups, 0.0))
    return;
  const onnx::NodeProto* back = index_.sole_consumer(norm.output(0));
  if (back == nullptr || back->op_type() != "Reshape" || !index_.shape(back->output(0)) ||
      index_.shape(back->output(0)) != index_.shape(split->input(0)))
    return;
  GroupNormPattern pattern;
  pattern.input = split->input(0);
  pattern.groups = std::int64_t(groups);
  pattern.epsilon = float_attribute(norm, "epsilon", 1e-5f);
  const onnx::NodeProto* mul = group_norm_affine(index_, back->output(0), "Mul", pattern.scale);
  const onnx::NodeProto* add =
      mul ? group_norm_affine(index_, mul->output(0), "Add", pattern.bias) : nullptr;
  if (add == nullptr)
    return;
  pattern.output = add->output(0);
  for (const onnx::NodeProto* node : {split, back, mul, add})
    skipped_.insert(index_.index_of(*node));
  group_norm_at_.emplace(index_.index_of(norm), std::move(pattern));
}

void OnnxConverter::instance_norm(const onnx::NodeProto& node) {
  const auto found = group_norm_at_.find(index_.index_of(node));
  if (found == group_norm_at_.end())
    return problem(node,
                   "an InstanceNormalization other than PyTorch's GroupNorm (a Reshape to "
                   "[batch, groups, -1], scale 1 and bias 0, a Reshape back, then a Mul by a "
                   "constant scale and an Add of a constant bias)");
  const GroupNormPattern& g = found->second;
  const Activation* in = value(g.input, node);
  if (!in) {
    failed_.insert(g.output);
    return;
  }
  const std::int64_t channels = in->onnx_shape.empty() ? 0 : in->onnx_shape.front();
  Tensor scale = onnx_float_tensor(*index_.constant(g.scale), path_);
  Tensor bias = onnx_float_tensor(*index_.constant(g.bias), path_);
  const bool images = in->channels_first || in->onnx_shape.size() == 1;
  if (!images || channels % g.groups != 0 || scale.elements() != channels ||
      bias.elements() != channels) {
    problem(node, "a group normalization of " + shape_text(in->onnx_shape) + " in " +
                      std::to_string(g.groups) +
                      " groups (ipusim's group_norm takes image channels or features, which "
                      "the groups divide, with a scale and a bias per channel)");
    failed_.insert(g.output);
    return;
  }
  add_layer({{"id", unique_id(module_id(node.name(), node.op_type(), "group_norm"))},
             {"type", "group_norm"},
             {"groups", g.groups},
             {"epsilon", decimal(static_cast<float>(g.epsilon))}},
            g.output, *in, {in->layer},
            {std::move(scale).reshaped({channels}), std::move(bias).reshaped({channels})});
}

}  // namespace ipusim::models::onnx_detail
