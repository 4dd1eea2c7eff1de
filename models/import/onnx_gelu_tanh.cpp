// GELU's tanh approximation as PyTorch exports nn.GELU(approximate='tanh') before opset 20:
// 0.5 · x · (1 + tanh(sqrt(2 / pi) · (x + 0.044715 · x · x · x))), x³ as two Muls or a Pow.

#include <cmath>
#include <numbers>

#include "models/import/onnx_patterns.hpp"

namespace ipusim::models {
namespace {

using onnx::NodeProto;

bool scalar_near(const OnnxGraphIndex& index, const std::string& tensor, double value) {
  const auto v = index.constant_values(tensor);
  return v.size() == 1 && std::abs(v[0] - value) <= 1e-5 * std::abs(value);
}

// The operand of a two-input `op` node besides the scalar `value`, or "".
std::string scaled_by(const OnnxGraphIndex& index, const NodeProto* node, const std::string& op,
                      double value) {
  if (node == nullptr || node->op_type() != op || node->input_size() != 2)
    return "";
  for (int i = 0; i < 2; ++i)
    if (scalar_near(index, node->input(i), value))
      return node->input(1 - i);
  return "";
}

// Whether `tensor` is x³: Pow(x, 3), or Mul(x, Mul(x, x)) in either order.
bool is_cube(const OnnxGraphIndex& index, const std::string& tensor, const std::string& x,
             std::set<int>& nodes) {
  const NodeProto* p = index.producer(tensor);
  if (p == nullptr || p->input_size() != 2)
    return false;
  if (p->op_type() == "Pow" && p->input(0) == x && scalar_near(index, p->input(1), 3.0)) {
    nodes.insert(index.index_of(*p));
    return true;
  }
  if (p->op_type() != "Mul")
    return false;
  const std::string other = p->input(0) == x ? p->input(1) : p->input(1) == x ? p->input(0) : "";
  const NodeProto* square = index.producer(other);
  if (square == nullptr || square->op_type() != "Mul" || square->input_size() != 2 ||
      square->input(0) != x || square->input(1) != x)
    return false;
  nodes.insert({index.index_of(*p), index.index_of(*square)});
  return true;
}

const NodeProto* only_reader(const OnnxGraphIndex& index, const std::string& tensor,
                             const std::string& op) {
  const NodeProto* node = index.sole_consumer(tensor);
  return node != nullptr && node->op_type() == op ? node : nullptr;
}

}  // namespace

std::optional<GeluPattern> match_gelu_tanh(const OnnxGraphIndex& index, const NodeProto& tanh) {
  GeluPattern out;
  out.tanh = true;
  const NodeProto* scale = index.producer(tanh.input(0));
  const std::string sum = scaled_by(index, scale, "Mul", std::sqrt(2.0 / std::numbers::pi));
  const NodeProto* plus = index.producer(sum);
  if (sum.empty() || plus == nullptr || plus->op_type() != "Add" || plus->input_size() != 2)
    return std::nullopt;
  for (int i = 0; i < 2 && out.input.empty(); ++i) {
    const std::string cube = scaled_by(index, index.producer(plus->input(1 - i)), "Mul", 0.044715);
    if (!cube.empty() && is_cube(index, cube, plus->input(i), out.nodes)) {
      out.input = plus->input(i);
      out.nodes.insert(index.index_of(*index.producer(plus->input(1 - i))));
    }
  }
  const NodeProto* one = only_reader(index, tanh.output(0), "Add");
  const std::string tanh_plus_one = one ? one->output(0) : "";
  if (out.input.empty() || !one ||
      !scalar_near(index, one->input(0) == tanh.output(0) ? one->input(1) : one->input(0), 1.0))
    return std::nullopt;
  for (const NodeProto* node : {scale, plus, &tanh, one})
    out.nodes.insert(index.index_of(*node));
  // x (1 + t), then halved; or 0.5 x times (1 + t).
  const NodeProto* times = only_reader(index, tanh_plus_one, "Mul");
  if (times == nullptr)
    return std::nullopt;
  const std::string other = times->input(0) == tanh_plus_one ? times->input(1) : times->input(0);
  out.nodes.insert(index.index_of(*times));
  if (other == out.input) {
    const NodeProto* half = only_reader(index, times->output(0), "Mul");
    if (scaled_by(index, half, "Mul", 0.5) != times->output(0))
      return std::nullopt;
    out.nodes.insert(index.index_of(*half));
    out.output = half->output(0);
  } else if (const NodeProto* half_x = index.producer(other);
             scaled_by(index, half_x, "Mul", 0.5) == out.input) {
    out.nodes.insert(index.index_of(*half_x));
    out.output = times->output(0);
  } else {
    return std::nullopt;
  }
  out.name = common_node_prefix(index, out.nodes);
  return out;
}

}  // namespace ipusim::models
