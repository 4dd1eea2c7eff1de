// Self-attention as PyTorch's exporter writes nn.MultiheadAttention (and hand-written attention
// in any layout): the matcher follows each tensor's layout through Transpose, Reshape, Slice and
// Gather as a list of axes, each a row-major list of named factors (batch, sequence, hidden,
// heads, head size, the packed Q/K/V index), so that it accepts whatever order of layout ops an
// exporter chose and refuses any that mixes samples, positions or heads.

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <limits>

#include "models/import/onnx_layout.hpp"
#include "models/import/onnx_patterns.hpp"

namespace ipusim::models {
namespace {

using namespace onnx_layout;

using onnx::NodeProto;

// x W + b: MatMul by a [in, out] weight then Add of a bias, or Gemm (its weight [out, in] when
// transB).
struct Projection {
  AttentionProjection source;
  std::string input;
  std::int64_t out = 0;
  std::set<int> nodes;
};

class LayoutAttentionMatcher {
 public:
  LayoutAttentionMatcher(const OnnxGraphIndex& index, const OnnxShapeOf& shape_of, std::string& why)
      : index_(index), shape_of_(shape_of), why_(why) {}

  std::optional<AttentionPattern> match(const NodeProto& softmax) {
    take(softmax);
    const NodeProto* scores = scores_product(softmax.input(0));
    const NodeProto* weighted = scores ? weighted_sum(index_, softmax, out_, why_) : nullptr;
    if (!weighted)
      return std::nullopt;
    std::array<std::optional<Layout>, 3> qkv = {
        branch(scores->input(0), 0), branch(scores->input(1), 1), branch(weighted->input(1), 2)};
    if (!qkv[0] || !qkv[1] || !qkv[2] || !heads(*qkv[0], *qkv[1], *qkv[2]) || !packing() ||
        !merged(weighted->output(0)) || !check_scale() || !self_contained())
      return std::nullopt;
    out_.name = common_node_prefix(index_, out_.nodes);
    return out_;
  }

 private:
  bool fail(const std::string& why) {
    why_ = why;
    return false;
  }

  void take(const NodeProto& node) { out_.nodes.insert(index_.index_of(node)); }

  // The QKᵀ product under the Softmax, through scalar scales and a mask; null, with no reason,
  // when the Softmax reads no product of two computed values (it is some other layer's).
  const NodeProto* scores_product(std::string t) {
    std::vector<const NodeProto*> masks;
    for (int steps = 0; steps < 8; ++steps) {
      const NodeProto* p = index_.producer(t);
      if (p == nullptr)
        return nullptr;
      std::string other;
      if (const double s = scalar_scale(index_, *p, other); s != 0) {
        scale_ *= s;
        take(*p);
        t = other;
      } else if ((p->op_type() == "Add" && p->input_size() == 2) ||
                 (p->op_type() == "Where" && p->input_size() == 3)) {
        masks.push_back(p);
        t = p->input(p->op_type() == "Add" && index_.constant(p->input(0)) ? 1 : 0);
        if (p->op_type() == "Where")
          t = index_.constant(p->input(1)) ? p->input(2) : p->input(1);
      } else if (p->op_type() == "MatMul" && !index_.constant(p->input(0)) &&
                 !index_.constant(p->input(1))) {
        for (const NodeProto* m : masks) {
          std::string scores;
          if (!mask(*m, scores))
            return nullptr;
          take(*m);
        }
        take(*p);
        return p;
      } else {
        return nullptr;
      }
    }
    return nullptr;
  }

  enum class MaskKind { kNone, kCausal, kOther };

  // A constant mask added to the scores, or applied by Where: causal, or nothing at all. `t`
  // moves to the scores it masks.
  bool mask(const NodeProto& node, std::string& t) {
    if (node.op_type() == "Add" && node.input_size() == 2) {
      for (int i = 0; i < 2; ++i) {
        const onnx::TensorProto* m = index_.constant(node.input(i));
        if (m == nullptr || index_.constant(node.input(1 - i)))
          continue;
        const auto v = index_.constant_values(node.input(i));
        t = node.input(1 - i);
        return masked(classify(*m, v.size(), [&](std::size_t at) {
          return v[at] == 0 ? 0 : v[at] <= -1e4 ? 1 : -1;
        }));
      }
    } else if (node.op_type() == "Where" && node.input_size() == 3) {
      const onnx::TensorProto* c = index_.constant(node.input(0));
      const auto cond = index_.constant_values(node.input(0));
      for (int fill = 1; c != nullptr && fill <= 2; ++fill) {
        const auto value = index_.constant_values(node.input(fill));
        if (value.size() != 1 || index_.constant(node.input(3 - fill)))
          continue;
        t = node.input(3 - fill);
        if (value[0] > -1e4)
          return masked(MaskKind::kOther);
        // Where(cond, x, y) takes x where cond holds.
        return masked(classify(*c, cond.size(), [&](std::size_t at) {
          return (cond[at] != 0) == (fill == 1) ? 1 : 0;
        }));
      }
    }
    return fail("attention scores combined with something other than a constant mask");
  }

  bool masked(MaskKind kind) {
    if (kind == MaskKind::kOther)
      return fail(
          "a mask on attention scores that is neither causal nor empty (ipusim's attention "
          "takes \"causal\": true, or a padding mask as its second input)");
    out_.causal = out_.causal || kind == MaskKind::kCausal;
    return true;
  }

  // A [.., s, s] mask with only ones before: causal when `masked(at)` (1 masked, 0 kept, -1
  // neither) holds exactly above the diagonal, none when nowhere.
  template <typename Masked>
  static MaskKind classify(const onnx::TensorProto& m, std::size_t values, Masked masked) {
    const int rank = m.dims_size();
    if (rank < 2 || m.dims(rank - 1) != m.dims(rank - 2))
      return MaskKind::kOther;
    for (int i = 0; i + 2 < rank; ++i)
      if (m.dims(i) != 1)
        return MaskKind::kOther;
    const std::int64_t s = m.dims(rank - 1);
    if (std::int64_t(values) != s * s)
      return MaskKind::kOther;
    bool none = true, causal = true;
    for (std::int64_t i = 0; i < s; ++i) {
      for (std::int64_t j = 0; j < s; ++j) {
        const int at = masked(std::size_t(i * s + j));
        if (at < 0)
          return MaskKind::kOther;
        none = none && at == 0;
        causal = causal && at == (j > i ? 1 : 0);
      }
    }
    return none ? MaskKind::kNone : causal ? MaskKind::kCausal : MaskKind::kOther;
  }

  // Q, K or V: back from `tensor` through layout ops and scalar scales to a projection; the
  // layout of `tensor`.
  std::optional<Layout> branch(const std::string& tensor, int which) {
    std::vector<const NodeProto*> ops;
    std::string t = tensor;
    for (int steps = 0; steps < 32; ++steps) {
      const NodeProto* p = index_.producer(t);
      std::string other;
      if (p != nullptr && is_layout_op(*p)) {
        ops.push_back(p);
        t = p->input(0);
      } else if (const double s = p ? scalar_scale(index_, *p, other) : 0; s != 0) {
        scale_ *= s;
        take(*p);
        t = other;
      } else {
        auto layout = projected(t, which);
        int part = -1;
        for (auto op = ops.rbegin(); layout && op != ops.rend(); ++op) {
          take(**op);
          layout = through(index_, **op, *layout, part);
        }
        if (!layout)
          return fail_layout("an attention whose Q, K or V is not a projection split into heads");
        parts_[which] = part;
        return layout;
      }
    }
    return fail_layout("an attention whose Q, K or V is not a projection split into heads");
  }

  std::optional<Layout> fail_layout(const std::string& why) {
    if (why_.empty())
      why_ = why;
    return std::nullopt;
  }

  // The projection writing `t`, or nullopt.
  std::optional<Projection> projection_at(const std::string& t) const {
    const NodeProto* p = index_.producer(t);
    Projection out;
    if (p != nullptr && p->op_type() == "Gemm" && p->input_size() == 3 &&
        int_of(*p, "transA", 0) == 0) {
      out.source = {index_.constant(p->input(1)), index_.constant(p->input(2)),
                    int_of(*p, "transB", 0) == 1, -1};
      out.input = p->input(0);
      out.nodes = {index_.index_of(*p)};
    } else if (p != nullptr && p->op_type() == "Add" && p->input_size() == 2) {
      const int bias = index_.constant(p->input(0)) ? 0 : 1;
      const NodeProto* m = index_.producer(p->input(1 - bias));
      if (m == nullptr || m->op_type() != "MatMul")
        return std::nullopt;
      out.source = {index_.constant(m->input(1)), index_.constant(p->input(bias)), false, -1};
      out.input = m->input(0);
      out.nodes = {index_.index_of(*p), index_.index_of(*m)};
    }
    const auto* w = out.source.weight;
    const auto* b = out.source.bias;
    if (w == nullptr || b == nullptr || w->dims_size() != 2 || b->dims_size() != 1)
      return std::nullopt;
    out.out = w->dims(out.source.transposed ? 0 : 1);
    if (b->dims(0) != out.out)
      return std::nullopt;
    return out;
  }

  // The layout a projection's output has: its input's, with the last (hidden) axis replaced by
  // its outputs, one hidden or three packed (Q, K and V).
  std::optional<Layout> projected(const std::string& t, int which) {
    auto p = projection_at(t);
    if (!p)
      return std::nullopt;
    auto layout = input_layout(p->input);
    if (!layout || !is_hidden(layout->back()) || (p->out != hidden_ && p->out != 3 * hidden_))
      return std::nullopt;
    layout->back() = p->out == hidden_ ? Axis{{'h', hidden_}} : Axis{{'p', 3}, {'h', hidden_}};
    projections_[which] = *p;
    out_.nodes.insert(p->nodes.begin(), p->nodes.end());
    return layout;
  }

  // The batch of the graph's input (normalisation makes it static), or 0.
  std::int64_t graph_batch() const {
    for (const auto& input : index_.graph().input()) {
      if (index_.is_initializer(input.name()))
        continue;
      const auto shape = shape_of_(input.name());
      return shape && !shape->empty() ? shape->front() : 0;
    }
    return 0;
  }

  bool is_hidden(const Axis& axis) const {
    const Axis a = without_ones(axis);
    return (a.size() == 1 && a[0].kind == 'h') ||
           (is_heads_by_size(a, 'n', 'd') && size_of(a) == hidden_);
  }

  // The layout of a projection's input: the block's input [batch, sequence, hidden] through
  // the Transposes and Reshapes between them.
  std::optional<Layout> input_layout(const std::string& x) {
    std::vector<const NodeProto*> ops;
    std::string root = x;
    // Back through the layout ops the projections alone read, to the value the block reads.
    for (const NodeProto* p = index_.producer(root);
         p != nullptr && (p->op_type() == "Transpose" || p->op_type() == "Reshape") &&
         index_.read_at_most_once(root) && ops.size() < 8;
         p = index_.producer(root)) {
      ops.push_back(p);
      root = p->input(0);
    }
    const auto shape = shape_of_(root);
    // Dimensions from 1 to 2^20 keep every product of factors within 2^60.
    const auto counts = [](std::int64_t d) { return d >= 1 && d <= (std::int64_t{1} << 20); };
    if (!shape || shape->size() != 3 || !std::all_of(shape->begin(), shape->end(), counts) ||
        (!out_.input.empty() && out_.input != root))
      return std::nullopt;
    out_.input = root;
    hidden_ = (*shape)[2];
    // [batch, sequence, hidden], or [sequence, batch, hidden] (batch_first=False) when only
    // the second axis is the batch's size; the converter checks which its value is.
    const std::int64_t batch = graph_batch();
    out_.sequence_first = (*shape)[0] != batch && (*shape)[1] == batch;
    root_ = {{{'b', (*shape)[0]}}, {{'s', (*shape)[1]}}, {{'h', hidden_}}};
    if (out_.sequence_first)
      root_ = {{{'s', (*shape)[0]}}, {{'b', (*shape)[1]}}, {{'h', hidden_}}};
    std::optional<Layout> layout = root_;
    int part = -1;
    for (auto op = ops.rbegin(); layout && op != ops.rend(); ++op) {
      take(**op);
      layout = through(index_, **op, *layout, part);
    }
    return layout;
  }

  // Q, K and V as [leading..., sequence, head size] ([..., head size, sequence] for K), with the
  // same leading axes holding the heads (and the batch).
  bool heads(const Layout& q, const Layout& k, const Layout& v) {
    const auto kind_of = [](const Axis& axis) -> char {
      const Axis a = without_ones(axis);
      return a.size() == 1 ? a[0].kind : '\0';
    };
    const auto tail = [&](const Layout& l, char a, char b) {
      return l.size() >= 2 && kind_of(l[l.size() - 2]) == a && kind_of(l.back()) == b;
    };
    if (!tail(q, 's', 'd') || !tail(k, 'd', 's') || !tail(v, 's', 'd'))
      return fail("an attention whose Q, K and V are not [heads, sequence, head size] per sample");
    const Layout lead(q.begin(), q.end() - 2);
    if (!same_layout(lead, Layout(k.begin(), k.end() - 2)) ||
        !same_layout(lead, Layout(v.begin(), v.end() - 2)))
      return fail("an attention whose Q, K and V split their heads differently");
    for (const Axis& axis : lead)
      for (const Factor& f : without_ones(axis)) {
        if (f.kind == 'n')
          out_.heads = f.size;
        else if (f.kind != 'b')
          return fail("an attention that mixes positions into its heads");
      }
    out_.head_size = without_ones(q.back())[0].size;
    if (out_.heads == 0 || out_.heads * out_.head_size != hidden_)
      return fail("an attention whose heads do not split the hidden width");
    context_ = q;
    return true;
  }

  // One packed projection read in Q, K, V order, or three of the hidden width.
  bool packing() {
    const bool packed = parts_[0] >= 0;
    for (int i = 0; i < 3; ++i) {
      if (packed ? parts_[i] != i || projections_[i].nodes != projections_[0].nodes
                 : parts_[i] >= 0 || projections_[i].out != hidden_)
        return fail("an attention whose Q, K and V are not the three parts of its projections");
      out_.projections.push_back(projections_[i].source);
      if (packed)
        out_.projections.back().part = i;
    }
    return true;
  }

  // The heads merged into the output projection, and that back into the input's layout: the
  // block's output.
  bool merged(std::string t) {
    std::optional<Layout> l = context_;
    int part = -1;
    for (int steps = 0; l && steps < 16; ++steps) {
      if (const auto p = projection_reading(t)) {
        if (!is_heads_by_size(l->back(), 'n', 'd') || p->out != hidden_)
          break;
        l->back() = {{'h', hidden_}};
        out_.projections.push_back(p->source);
        out_.nodes.insert(p->nodes.begin(), p->nodes.end());
        t = index_.graph().node(*p->nodes.rbegin()).output(0);
        while (!same_layout(*l, root_)) {
          const NodeProto* c = index_.sole_consumer(t);
          if (c == nullptr || !is_layout_op(*c) || !(l = through(index_, *c, *l, part)))
            return fail("an attention whose output is not brought back to its input's layout");
          take(*c);
          t = c->output(0);
        }
        out_.output = t;
        return true;
      }
      const NodeProto* c = index_.sole_consumer(t);
      if (c == nullptr || !is_layout_op(*c))
        break;
      take(*c);
      l = through(index_, *c, *l, part);
      t = c->output(0);
    }
    return fail(
        "an attention whose heads are not merged into an output projection (MatMul and Add, or "
        "Gemm)");
  }

  // The projection reading `t` as its input, or nullopt.
  std::optional<Projection> projection_reading(const std::string& t) const {
    const NodeProto* c = index_.sole_consumer(t);
    if (c == nullptr)
      return std::nullopt;
    if (c->op_type() == "Gemm")
      return projection_at(c->output(0));
    const NodeProto* add = c->op_type() == "MatMul" ? index_.sole_consumer(c->output(0)) : nullptr;
    if (add == nullptr || add->op_type() != "Add")
      return std::nullopt;
    auto p = projection_at(add->output(0));
    return p && p->input == t ? p : std::nullopt;
  }

  bool check_scale() {
    const double expected = 1.0 / std::sqrt(double(out_.head_size));
    if (std::abs(scale_ - expected) > 1e-5 * expected)
      return fail("attention scores scaled by " + std::to_string(scale_) +
                  "; ipusim scales by 1/sqrt(head size) = " + std::to_string(expected));
    return true;
  }

  // No value inside the block is read outside it.
  bool self_contained() {
    for (int n : out_.nodes)
      for (const auto& output : index_.graph().node(n).output())
        if (output != out_.output && !index_.read_only_by(output, out_.nodes))
          return fail("an attention whose intermediate '" + output + "' is read outside it");
    return true;
  }

  const OnnxGraphIndex& index_;
  const OnnxShapeOf& shape_of_;
  std::string& why_;
  AttentionPattern out_;
  std::array<Projection, 3> projections_;
  std::array<int, 3> parts_ = {-1, -1, -1};
  std::int64_t hidden_ = 0;
  Layout root_;
  std::optional<Layout> context_;  // the weighted sum's layout: Q's
  double scale_ = 1.0;
};

}  // namespace

std::optional<AttentionPattern> match_layout_attention(const OnnxGraphIndex& index,
                                                       const onnx::NodeProto& softmax,
                                                       const OnnxShapeOf& shape_of,
                                                       std::string& why) {
  why.clear();
  return LayoutAttentionMatcher(index, shape_of, why).match(softmax);
}

}  // namespace ipusim::models
