// Tensor layouts inside an attention block (models/import/onnx_layout.hpp).

#include "models/import/onnx_layout.hpp"

#include <cmath>
#include <deque>

namespace ipusim::models::onnx_layout {
namespace {

using onnx::NodeProto;

std::vector<std::int64_t> counts_of(const OnnxGraphIndex& index, const std::string& tensor) {
  std::vector<std::int64_t> out;
  for (const double v : index.constant_values(tensor)) {
    if (v != std::floor(v) || std::abs(v) > double(std::int64_t{1} << 40))
      return {};
    out.push_back(static_cast<std::int64_t>(v));
  }
  return out;
}

std::optional<std::vector<std::int64_t>> reshape_target(const OnnxGraphIndex& index,
                                                        const NodeProto& node, const Layout& in) {
  auto dims = counts_of(index, node.input(1));
  if (dims.empty() || int_of(node, "allowzero", 0) != 0)
    return std::nullopt;
  std::int64_t total = 1, known = 1;
  int infer = -1;
  for (const Axis& axis : in)
    total *= size_of(axis);
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 0 && i < in.size())
      dims[i] = size_of(in[i]);
    if (dims[i] == -1 && infer < 0)
      infer = int(i);
    else if (dims[i] >= 1 && dims[i] <= total && known <= total / dims[i])
      known *= dims[i];  // never past the input's size, so never overflowing
    else
      return std::nullopt;
  }
  if (infer >= 0 && known > 0 && total % known == 0)
    dims[std::size_t(infer)] = total / known;
  return dims;
}

std::int64_t normalized_axis(std::int64_t axis, std::size_t rank) {
  return axis < 0 ? axis + std::int64_t(rank) : axis;
}

}  // namespace

std::int64_t size_of(const Axis& axis) {
  std::int64_t size = 1;
  for (const Factor& f : axis)
    size *= f.size;
  return size;
}

// Factors of size 1 (a batch of one) carry nothing: layouts compare without them.

Axis without_ones(const Axis& axis) {
  Axis out;
  for (const Factor& f : axis)
    if (f.size != 1)
      out.push_back(f);
  return out;
}

bool same_layout(const Layout& a, const Layout& b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (without_ones(a[i]) != without_ones(b[i]))
      return false;
  return true;
}

// `axis` as heads then head size, when it is the hidden axis or already split so.

bool is_heads_by_size(const Axis& axis, char heads, char size) {
  const Axis a = without_ones(axis);
  return a.size() == 2 && a[0].kind == heads && a[1].kind == size;
}

// Reshape: the factors regrouped in row-major order into `dims`; a hidden factor splits into

// heads (outer) and head size (inner) where a dimension needs part of it. nullopt when a

// dimension would cut any other factor.

std::optional<Layout> regrouped(const Layout& in, const std::vector<std::int64_t>& dims) {
  std::deque<Factor> queue;
  for (const Axis& axis : in)
    for (const Factor& f : axis)
      if (f.size != 1)
        queue.push_back(f);
  Layout out;
  for (const std::int64_t dim : dims) {
    Axis axis;
    std::int64_t size = 1;
    while (size < dim) {
      if (queue.empty() || dim % size != 0)
        return std::nullopt;
      Factor f = queue.front();
      const std::int64_t need = dim / size;
      if (need % f.size == 0) {
        axis.push_back(f);
        size *= f.size;
        queue.pop_front();
      } else if (f.kind == 'h' && f.size % need == 0) {
        axis.push_back({'n', need});
        queue.front() = {'d', f.size / need};
        size *= need;
      } else {
        return std::nullopt;
      }
    }
    if (size != dim)
      return std::nullopt;
    out.push_back(std::move(axis));
  }
  if (!queue.empty())
    return std::nullopt;
  return out;
}

// A constant's values as int64 counts.

std::vector<std::int64_t> ints_of(const NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute())
    if (a.name() == name)
      return {a.ints().begin(), a.ints().end()};
  return {};
}

std::int64_t int_of(const NodeProto& node, const std::string& name, std::int64_t fallback) {
  for (const auto& a : node.attribute())
    if (a.name() == name)
      return a.i();
  return fallback;
}

// Reshape's target with 0 (keep, when allowzero is 0) and -1 (infer) resolved.

// What a layout op does to `layout`; nullopt when it is no layout op or does what attention

// cannot. `part` receives the packed index a Slice or Gather picks.

std::optional<Layout> through(const OnnxGraphIndex& index, const NodeProto& node, Layout layout,
                              int& part) {
  const std::string& op = node.op_type();
  if (op == "Transpose") {
    auto perm = ints_of(node, "perm");
    if (perm.empty())
      for (std::size_t i = layout.size(); i-- > 0;)
        perm.push_back(std::int64_t(i));
    if (perm.size() != layout.size())
      return std::nullopt;
    Layout out;
    for (const std::int64_t p : perm) {
      if (p < 0 || p >= std::int64_t(layout.size()))
        return std::nullopt;
      out.push_back(layout[std::size_t(p)]);
    }
    return out;
  }
  if (op == "Reshape") {
    const auto dims = reshape_target(index, node, layout);
    return dims ? regrouped(layout, *dims) : std::nullopt;
  }
  if (op == "Slice" || op == "Gather") {
    // One Q, K or V part of a packed projection's axis [packed][hidden].
    const bool slice = op == "Slice";
    const auto starts = counts_of(index, node.input(1));
    const auto ends = slice ? counts_of(index, node.input(2)) : starts;
    const auto axes = slice && node.input_size() > 3
                          ? counts_of(index, node.input(3))
                          : std::vector<std::int64_t>{int_of(node, "axis", 0)};
    if (starts.size() != 1 || ends.size() != 1 || axes.size() != 1 ||
        (slice && node.input_size() > 4 &&
         counts_of(index, node.input(4)) != std::vector<std::int64_t>{1}))
      return std::nullopt;
    const auto a = normalized_axis(axes[0], layout.size());
    if (a < 0 || a >= std::int64_t(layout.size()))
      return std::nullopt;
    Axis& axis = layout[std::size_t(a)];
    const Axis factors = without_ones(axis);
    if (factors.empty() || factors.front().kind != 'p')
      return std::nullopt;
    const std::int64_t step = size_of(axis) / factors.front().size;
    if (slice && (starts[0] % step != 0 || ends[0] - starts[0] != step))
      return std::nullopt;
    part = int(slice ? starts[0] / step : starts[0]);
    if (part < 0 || part >= factors.front().size)
      return std::nullopt;
    if (!slice && factors.size() == 1) {
      layout.erase(layout.begin() + a);
      return layout;
    }
    axis = Axis(factors.begin() + 1, factors.end());
    return layout;
  }
  return std::nullopt;
}

bool is_layout_op(const NodeProto& node) {
  const std::string& op = node.op_type();
  return op == "Transpose" || op == "Reshape" || op == "Slice" || op == "Gather";
}

// A Mul or Div of `node` by a scalar constant: the factor it scales by, or 0.

double scalar_scale(const OnnxGraphIndex& index, const NodeProto& node, std::string& other) {
  if ((node.op_type() != "Mul" && node.op_type() != "Div") || node.input_size() != 2)
    return 0;
  for (int i = 0; i < 2; ++i) {
    const auto values = index.constant_values(node.input(i));
    if (values.size() != 1 || index.constant(node.input(1 - i)) != nullptr || values[0] == 0)
      continue;
    if (node.op_type() == "Div" && i == 0)
      return 0;
    other = node.input(1 - i);
    return node.op_type() == "Div" ? 1.0 / values[0] : values[0];
  }
  return 0;
}

}  // namespace ipusim::models::onnx_layout
