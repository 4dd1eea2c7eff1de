#include "models/import/onnx_patterns.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string_view>

namespace ipusim::models {
namespace {

using onnx::NodeProto;
using onnx::TensorProto;

template <typename T>
std::vector<double> raw_values(const std::string& raw) {
  std::vector<double> out(raw.size() / sizeof(T));
  for (std::size_t i = 0; i < out.size(); ++i) {
    T value;
    std::memcpy(&value, raw.data() + i * sizeof(T), sizeof(T));
    out[i] = static_cast<double>(value);
  }
  return out;
}

std::vector<double> values_of(const TensorProto& t) {
  switch (t.data_type()) {
    case TensorProto::FLOAT:
      return t.raw_data().empty()
                 ? std::vector<double>(t.float_data().begin(), t.float_data().end())
                 : raw_values<float>(t.raw_data());
    case TensorProto::DOUBLE:
      return t.raw_data().empty()
                 ? std::vector<double>(t.double_data().begin(), t.double_data().end())
                 : raw_values<double>(t.raw_data());
    case TensorProto::BOOL:
      return t.raw_data().empty()
                 ? std::vector<double>(t.int32_data().begin(), t.int32_data().end())
                 : raw_values<std::uint8_t>(t.raw_data());
    case TensorProto::INT64:
      return t.raw_data().empty()
                 ? std::vector<double>(t.int64_data().begin(), t.int64_data().end())
                 : raw_values<std::int64_t>(t.raw_data());
    default:
      return {};
  }
}

// A shape's value as written: "8" for an integer (the usual case), else as a double.
std::string number_text(double value) {
  if (std::abs(value) < 1e15 && value == std::floor(value))
    return std::to_string(static_cast<std::int64_t>(value));
  return std::to_string(value);
}

bool near(double value, double expected) {
  return std::abs(value - expected) <= 1e-5 * std::abs(expected);
}

std::vector<std::int64_t> perm_of(const NodeProto& node) {
  for (const auto& a : node.attribute()) {
    if (a.name() == "perm")
      return {a.ints().begin(), a.ints().end()};
  }
  return {};
}

// The operand of a two-input node that is not `tensor`, or "" when neither or both are.
std::string other_operand(const NodeProto& node, const std::string& tensor) {
  if (node.input_size() != 2 || node.input(0) == node.input(1))
    return "";
  if (node.input(0) == tensor)
    return node.input(1);
  return node.input(1) == tensor ? node.input(0) : "";
}

}  // namespace

std::string common_node_prefix(const OnnxGraphIndex& index, const std::set<int>& nodes) {
  std::string prefix = index.graph().node(*nodes.begin()).name();
  for (int n : nodes) {
    const std::string& name = index.graph().node(n).name();
    const auto end = std::mismatch(prefix.begin(), prefix.end(), name.begin(), name.end());
    prefix.erase(end.first, prefix.end());
  }
  while (!prefix.empty() && std::string_view("/_.-").find(prefix.back()) != std::string::npos)
    prefix.pop_back();
  return prefix;
}

const NodeProto* weighted_sum(const OnnxGraphIndex& index, const NodeProto& softmax,
                              AttentionPattern& block, std::string& why) {
  std::string probabilities = softmax.output(0);
  const NodeProto* next = index.sole_consumer(probabilities);
  if (next != nullptr && next->op_type() == "Dropout") {
    block.nodes.insert(index.index_of(*next));
    block.dropout = dropout_ratio(index, *next);
    probabilities = next->output(0);
    next = index.sole_consumer(probabilities);
  }
  if (next == nullptr || next->op_type() != "MatMul" || next->input(0) != probabilities) {
    why = "a Softmax over attention scores whose probabilities are not multiplied by V";
    return nullptr;
  }
  block.nodes.insert(index.index_of(*next));
  return next;
}

double dropout_ratio(const OnnxGraphIndex& index, const NodeProto& dropout) {
  double ratio = 0.5;
  for (const auto& a : dropout.attribute())
    if (a.name() == "ratio")
      ratio = a.f();
  if (dropout.input_size() > 1) {
    const auto given = index.constant_values(dropout.input(1));
    ratio = given.size() == 1 ? given[0] : ratio;
  }
  return ratio;
}

namespace {

// Builds the block from the Softmax out, failing with a reason at the first mismatch.
class AttentionMatcher {
 public:
  AttentionMatcher(const OnnxGraphIndex& index, std::string& why) : index_(index), why_(why) {}

  std::optional<AttentionPattern> match(const NodeProto& softmax) {
    const NodeProto* scores = scaled_scores(softmax);
    if (scores == nullptr)
      return std::nullopt;
    const NodeProto* weighted = weighted_sum(index_, softmax, out_, why_);
    if (weighted == nullptr || !projection_heads(scores->input(0), {0, 2, 1, 3}, 0) ||
        !key_heads(scores->input(1)) || !projection_heads(weighted->input(1), {0, 2, 1, 3}, 2) ||
        !merged_output(*weighted) || !check_scale())
      return std::nullopt;
    for (const auto& [weight, bias] : {q_, k_, v_, o_})
      out_.projections.push_back({weight, bias});
    out_.name = common_node_prefix(index_, out_.nodes);
    return out_;
  }

 private:
  bool fail(const std::string& why) {
    why_ = why;
    return false;
  }

  const NodeProto* take(const std::string& tensor, const std::string& op) {
    const NodeProto* node = index_.producer(tensor);
    if (node == nullptr || node->op_type() != op)
      return nullptr;
    out_.nodes.insert(index_.index_of(*node));
    return node;
  }

  // The QKᵀ product under the Softmax, with the scale between them.
  const NodeProto* scaled_scores(const NodeProto& softmax) {
    std::string scores = softmax.input(0);
    out_.nodes.insert(index_.index_of(softmax));
    if (const NodeProto* add = index_.producer(scores); add != nullptr && add->op_type() == "Add") {
      for (const auto& operand : add->input()) {
        if (is_product_of_values(unscaled(operand)))
          why_ =
              "an attention with a mask added to its scores (ipusim's attention takes its "
              "padding mask as a second input)";
      }
      return nullptr;
    }
    const std::string product = unscaled(scores);
    if (product != scores) {
      const NodeProto* node = index_.producer(scores);
      const double c = index_.constant_values(node->input(1)).front();
      scale_ = node->op_type() == "Div" ? 1.0 / c : c;
      out_.nodes.insert(index_.index_of(*node));
    }
    return is_product_of_values(product) ? take(product, "MatMul") : nullptr;
  }

  // What `tensor` divides or multiplies by a scalar constant, or `tensor` itself.
  std::string unscaled(const std::string& tensor) const {
    const NodeProto* node = index_.producer(tensor);
    const bool scaled = node != nullptr && (node->op_type() == "Div" || node->op_type() == "Mul") &&
                        index_.constant_values(node->input(1)).size() == 1;
    return scaled ? node->input(0) : tensor;
  }

  // Whether `tensor` is a MatMul of two computed values (as QKᵀ is), not a dense layer's.
  bool is_product_of_values(const std::string& tensor) const {
    const NodeProto* node = index_.producer(tensor);
    return node != nullptr && node->op_type() == "MatMul" && !index_.constant(node->input(0)) &&
           !index_.constant(node->input(1));
  }

  // Transpose(Reshape(x W + b, [batch, sequence, heads, head size]), perm): one of Q, K, V.
  bool projection_heads(const std::string& tensor, const std::vector<std::int64_t>& perm,
                        int which) {
    const NodeProto* transpose = take(tensor, "Transpose");
    if (transpose == nullptr || perm_of(*transpose) != perm)
      return fail(
          "an attention whose Q, K or V is not a projection split into heads by "
          "Reshape and Transpose");
    const NodeProto* reshape = take(transpose->input(0), "Reshape");
    const auto shape = reshape ? index_.constant_values(reshape->input(1)) : std::vector<double>{};
    if (shape.size() != 4)
      return fail(
          "an attention whose heads are not split by a Reshape to a constant "
          "[batch, sequence, heads, head size]");
    // Counts from 1 up (not Reshape's 0 = "keep" or -1 = "infer"), so the casts are exact.
    const auto counting = [](double v) { return v >= 1 && v <= 1 << 30 && v == std::floor(v); };
    if (!counting(shape[2]) || !counting(shape[3]))
      return fail("an attention whose Reshape into heads names " + number_text(shape[2]) +
                  " heads of size " + number_text(shape[3]) +
                  " (expected both as counts from 1 up)");
    const auto heads = static_cast<std::int64_t>(shape[2]);
    if (out_.heads != 0 && (out_.heads != heads || out_.head_size != std::int64_t(shape[3])))
      return fail("an attention whose Q, K and V have different numbers of heads");
    out_.heads = heads;
    out_.head_size = static_cast<std::int64_t>(shape[3]);
    return projection(reshape->input(0), which == 0 ? q_ : which == 1 ? k_ : v_);
  }

  // x W + b with W and b constants; sets the block's input to x.
  bool projection(const std::string& tensor, std::array<const TensorProto*, 2>& weights) {
    const NodeProto* add = take(tensor, "Add");
    const int bias = add && index_.constant(add->input(0)) ? 0 : 1;
    const NodeProto* matmul = add ? take(add->input(1 - bias), "MatMul") : nullptr;
    weights = {matmul ? index_.constant(matmul->input(1)) : nullptr,
               add ? index_.constant(add->input(bias)) : nullptr};
    if (weights[0] == nullptr || weights[1] == nullptr)
      return fail("an attention projection that is not MatMul by a weight then Add of a bias");
    if (!out_.input.empty() && out_.input != matmul->input(0))
      return fail(
          "a cross-attention (Q, K and V read different tensors); ipusim's attention "
          "is self-attention");
    out_.input = matmul->input(0);
    return true;
  }

  // Kᵀ: K's heads transposed to [batch, heads, head size, sequence] at once or in two steps.
  bool key_heads(const std::string& tensor) {
    const NodeProto* transpose = index_.producer(tensor);
    if (transpose != nullptr && transpose->op_type() == "Transpose" &&
        perm_of(*transpose) == std::vector<std::int64_t>{0, 1, 3, 2}) {
      out_.nodes.insert(index_.index_of(*transpose));
      return projection_heads(transpose->input(0), {0, 2, 1, 3}, 1);
    }
    return projection_heads(tensor, {0, 2, 3, 1}, 1);
  }

  // Heads merged back (Transpose, Reshape) and the output projection: the block's output.
  bool merged_output(const NodeProto& weighted) {
    const NodeProto* transpose = index_.sole_consumer(weighted.output(0));
    const NodeProto* reshape = transpose && transpose->op_type() == "Transpose" &&
                                       perm_of(*transpose) == std::vector<std::int64_t>{0, 2, 1, 3}
                                   ? index_.sole_consumer(transpose->output(0))
                                   : nullptr;
    const NodeProto* matmul = reshape && reshape->op_type() == "Reshape"
                                  ? index_.sole_consumer(reshape->output(0))
                                  : nullptr;
    const NodeProto* add =
        matmul && matmul->op_type() == "MatMul" ? index_.sole_consumer(matmul->output(0)) : nullptr;
    if (add == nullptr || add->op_type() != "Add")
      return fail(
          "an attention whose heads are not merged by Transpose and Reshape into an "
          "output projection (MatMul then Add of a bias)");
    o_ = {index_.constant(matmul->input(1)),
          index_.constant(other_operand(*add, matmul->output(0)))};
    if (o_[0] == nullptr || o_[1] == nullptr)
      return fail("an attention output projection without a constant weight and bias");
    for (const NodeProto* node : {transpose, reshape, matmul, add})
      out_.nodes.insert(index_.index_of(*node));
    out_.output = add->output(0);
    return true;
  }

  bool check_scale() {
    const double expected = 1.0 / std::sqrt(static_cast<double>(out_.head_size));
    if (!near(scale_, expected)) {
      return fail("attention scores scaled by " + std::to_string(scale_) +
                  "; ipusim scales by 1/sqrt(head size) = " + std::to_string(expected));
    }
    for (int n : out_.nodes) {
      for (const auto& output : index_.graph().node(n).output()) {
        if (output != out_.output && !index_.read_at_most_once(output))
          return fail("an attention whose intermediate '" + output + "' is read outside it");
      }
    }
    return true;
  }

  const OnnxGraphIndex& index_;
  std::string& why_;
  AttentionPattern out_;
  std::array<const TensorProto*, 2> q_{}, k_{}, v_{}, o_{};
  double scale_ = 1.0;
};

bool is_scalar(const OnnxGraphIndex& index, const std::string& tensor, double value) {
  const auto values = index.constant_values(tensor);
  return values.size() == 1 && near(values[0], value);
}

}  // namespace

OnnxGraphIndex::OnnxGraphIndex(const onnx::GraphProto& graph, Shapes shapes)
    : graph_(graph), shapes_(std::move(shapes)) {
  for (const auto& init : graph.initializer()) {
    constants_.emplace(init.name(), &init);
    initializers_.insert(init.name());
  }
  for (const auto& output : graph.output())
    outputs_.insert(output.name());
  for (int n = 0; n < graph.node_size(); ++n) {
    const NodeProto& node = graph.node(n);
    indices_[&node] = n;
    for (const auto& input : node.input())
      consumers_[input].push_back(n);
    for (const auto& output : node.output())
      producers_[output] = n;
    if (node.op_type() == "Constant" && node.output_size() == 1) {
      for (const auto& a : node.attribute())
        if (a.name() == "value" && a.has_t())
          constants_[node.output(0)] = &a.t();
    }
  }
}

bool OnnxGraphIndex::read_only_by(const std::string& tensor, const std::set<int>& nodes) const {
  const auto found = consumers_.find(tensor);
  return !outputs_.contains(tensor) &&
         (found == consumers_.end() || std::all_of(found->second.begin(), found->second.end(),
                                                   [&](int n) { return nodes.contains(n); }));
}

bool OnnxGraphIndex::read_at_most_once(const std::string& tensor) const {
  const auto found = consumers_.find(tensor);
  return !outputs_.contains(tensor) && (found == consumers_.end() || found->second.size() <= 1);
}

const NodeProto* OnnxGraphIndex::producer(const std::string& tensor) const {
  const auto found = producers_.find(tensor);
  return found == producers_.end() ? nullptr : &graph_.node(found->second);
}

const NodeProto* OnnxGraphIndex::sole_consumer(const std::string& tensor) const {
  const auto found = consumers_.find(tensor);
  if (found == consumers_.end() || found->second.size() != 1 || outputs_.contains(tensor))
    return nullptr;
  return &graph_.node(found->second.front());
}

int OnnxGraphIndex::index_of(const NodeProto& node) const {
  return indices_.at(&node);
}

const TensorProto* OnnxGraphIndex::constant(const std::string& tensor) const {
  const auto found = constants_.find(tensor);
  return found == constants_.end() ? nullptr : found->second;
}

std::vector<double> OnnxGraphIndex::constant_values(const std::string& tensor) const {
  const TensorProto* t = constant(tensor);
  return t == nullptr ? std::vector<double>{} : values_of(*t);
}

std::optional<std::vector<std::int64_t>> OnnxGraphIndex::shape(const std::string& tensor) const {
  const auto found = shapes_.find(tensor);
  return found == shapes_.end() ? std::nullopt : std::optional(found->second);
}

std::optional<AttentionPattern> match_attention(const OnnxGraphIndex& index,
                                                const NodeProto& softmax, std::string& why) {
  why.clear();
  return AttentionMatcher(index, why).match(softmax);
}

std::optional<GeluPattern> match_gelu(const OnnxGraphIndex& index, const NodeProto& erf) {
  GeluPattern out;
  const NodeProto* scale = index.producer(erf.input(0));
  if (scale == nullptr ||
      !((scale->op_type() == "Div" && is_scalar(index, scale->input(1), std::sqrt(2.0))) ||
        (scale->op_type() == "Mul" && is_scalar(index, scale->input(1), std::sqrt(0.5)))))
    return std::nullopt;
  out.input = scale->input(0);
  const NodeProto* plus_one = index.sole_consumer(erf.output(0));
  if (plus_one == nullptr || plus_one->op_type() != "Add" ||
      !is_scalar(index, other_operand(*plus_one, erf.output(0)), 1.0))
    return std::nullopt;
  const NodeProto* first = index.sole_consumer(plus_one->output(0));
  if (first == nullptr || first->op_type() != "Mul")
    return std::nullopt;
  const std::string other = other_operand(*first, plus_one->output(0));
  const NodeProto* second = index.sole_consumer(first->output(0));
  const NodeProto* half_x = index.producer(other);
  for (const NodeProto* node : {scale, &erf, plus_one, first})
    out.nodes.insert(index.index_of(*node));
  if (half_x != nullptr && half_x->op_type() == "Mul" &&
      is_scalar(index, other_operand(*half_x, out.input), 0.5)) {
    out.nodes.insert(index.index_of(*half_x));  // (0.5 x) (1 + erf)
    out.output = first->output(0);
    out.name = common_node_prefix(index, out.nodes);
    return out;
  }
  const bool x_then_half = other == out.input && second && second->op_type() == "Mul" &&
                           is_scalar(index, other_operand(*second, first->output(0)), 0.5);
  const bool half_then_x = is_scalar(index, other, 0.5) && second && second->op_type() == "Mul" &&
                           other_operand(*second, first->output(0)) == out.input;
  if (!x_then_half && !half_then_x)
    return std::nullopt;
  out.nodes.insert(index.index_of(*second));
  out.output = second->output(0);
  out.name = common_node_prefix(index, out.nodes);
  return out;
}

}  // namespace ipusim::models
