// Layer normalization as exporters write it out before LayerNormalization (opset 17):
// mean = ReduceMean(x), d = x - mean, var = ReduceMean(d ^ 2), y = d / sqrt(var + epsilon),
// then y · scale + bias when the norm is affine.

#include <cmath>

#include "models/import/onnx_patterns.hpp"

namespace ipusim::models {
namespace {

using onnx::NodeProto;

// The last-axis reduction a ReduceMean makes: axes [-1] as an attribute (before opset 18) or
// an input, and keepdims (1 by default).
bool reduces_last_axis(const OnnxGraphIndex& index, const NodeProto& node, std::size_t rank) {
  std::vector<std::int64_t> axes;
  for (const auto& a : node.attribute()) {
    if (a.name() == "axes")
      axes.assign(a.ints().begin(), a.ints().end());
    if (a.name() == "keepdims" && a.i() != 1)
      return false;
  }
  if (node.input_size() > 1)
    for (const double v : index.constant_values(node.input(1)))
      axes.push_back(static_cast<std::int64_t>(v));
  return axes.size() == 1 && (axes[0] == -1 || axes[0] == std::int64_t(rank) - 1);
}

// The one node of type `op` reading `tensor`, with `other` its other operand when it has two.
const NodeProto* reader(const OnnxGraphIndex& index, const std::string& tensor,
                        const std::string& op) {
  const NodeProto* node = index.sole_consumer(tensor);
  return node != nullptr && node->op_type() == op ? node : nullptr;
}

std::string operand_besides(const NodeProto& node, const std::string& tensor) {
  if (node.input_size() != 2)
    return "";
  return node.input(0) == tensor ? node.input(1) : node.input(1) == tensor ? node.input(0) : "";
}

}  // namespace

std::optional<LayerNormPattern> match_layer_norm(const OnnxGraphIndex& index,
                                                 const NodeProto& mean) {
  LayerNormPattern out;
  out.input = mean.input_size() > 0 ? mean.input(0) : "";
  const auto shape = index.shape(out.input);
  if (!shape || !reduces_last_axis(index, mean, shape->size()))
    return std::nullopt;
  const NodeProto* sub = reader(index, mean.output(0), "Sub");
  if (sub == nullptr || sub->input(0) != out.input)
    return std::nullopt;
  // d is read twice: squared for the variance, and divided by the deviation.
  const NodeProto *pow = nullptr, *div = nullptr;
  for (const NodeProto& node : index.graph().node()) {
    for (const auto& input : node.input()) {
      if (input != sub->output(0))
        continue;
      if (node.op_type() == "Pow" && !pow)
        pow = &node;
      else if (node.op_type() == "Div" && !div && node.input(0) == input)
        div = &node;
      else
        return std::nullopt;
    }
  }
  const auto two = pow ? index.constant_values(pow->input(1)) : std::vector<double>{};
  const NodeProto* variance = pow ? reader(index, pow->output(0), "ReduceMean") : nullptr;
  const NodeProto* plus = variance ? reader(index, variance->output(0), "Add") : nullptr;
  const auto epsilon = plus ? index.constant_values(operand_besides(*plus, variance->output(0)))
                            : std::vector<double>{};
  const NodeProto* sqrt = plus ? reader(index, plus->output(0), "Sqrt") : nullptr;
  if (!div || two != std::vector<double>{2.0} || !variance ||
      !reduces_last_axis(index, *variance, shape->size()) || epsilon.size() != 1 || !sqrt ||
      div->input(1) != sqrt->output(0))
    return std::nullopt;
  out.epsilon = epsilon[0];
  out.output = div->output(0);
  for (const NodeProto* node : {&mean, sub, pow, variance, plus, sqrt, div})
    out.nodes.insert(index.index_of(*node));
  if (const NodeProto* mul = reader(index, out.output, "Mul")) {
    const std::string scale = operand_besides(*mul, out.output);
    const NodeProto* add = reader(index, mul->output(0), "Add");
    const std::string bias = add ? operand_besides(*add, mul->output(0)) : "";
    if (index.is_initializer(scale) && index.is_initializer(bias)) {
      out.scale = scale;
      out.bias = bias;
      out.output = add->output(0);
      out.nodes.insert({index.index_of(*mul), index.index_of(*add)});
    }
  }
  out.name = common_node_prefix(index, out.nodes);
  return out;
}

}  // namespace ipusim::models
