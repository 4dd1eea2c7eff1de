// Constant folding's operators that move values (Gather, Slice, Concat, Reshape, Squeeze,
// Unsqueeze, Transpose, Expand, Trilu, Cast) or create them (Shape, Range, ConstantOfShape)
// (models/import/onnx_fold_ops.hpp).

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "models/import/onnx_fold_ops.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models::onnx_fold {

using onnx::TensorProto;

std::int64_t count_of(const Dims& dims) {
  return std::accumulate(dims.begin(), dims.end(), std::int64_t{1}, std::multiplies<>());
}

Dims strides_of(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;)
    strides[i - 1] = strides[i] * dims[i];
  return strides;
}

std::int64_t int_attr(const onnx::NodeProto& node, const std::string& name, std::int64_t fallback) {
  for (const auto& a : node.attribute())
    if (a.name() == name)
      return a.i();
  return fallback;
}

std::optional<Dims> ints_attr(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute())
    if (a.name() == name)
      return Dims(a.ints().begin(), a.ints().end());
  return std::nullopt;
}

std::optional<Dims> int_values(const Constant* c) {
  if (c == nullptr || c->real())
    return std::nullopt;
  return c->ints;
}

std::optional<std::int64_t> axis_of(std::int64_t axis, std::int64_t rank) {
  const std::int64_t a = axis < 0 ? axis + rank : axis;
  return a >= 0 && a < rank ? std::optional(a) : std::nullopt;
}

Constant take(const Constant& src, Dims dims, const std::vector<std::int64_t>& from) {
  Constant out{src.type, std::move(dims), {}, {}};
  for (const std::int64_t i : from) {
    if (src.real())
      out.reals.push_back(src.reals[std::size_t(i)]);
    else
      out.ints.push_back(src.ints[std::size_t(i)]);
  }
  return out;
}

std::optional<Dims> broadcast(const Dims& a, const Dims& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  Dims out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1)
      return std::nullopt;
    out[i] = x == 1 ? y : x;
  }
  return out;
}

std::vector<std::int64_t> broadcast_indices(const Dims& in, const Dims& out) {
  const std::size_t pad = out.size() - in.size();
  const Dims in_strides = strides_of(in);
  Dims strides(out.size(), 0);  // 0 along axes `in` repeats
  for (std::size_t i = 0; i < in.size(); ++i)
    strides[pad + i] = in[i] == 1 ? 0 : in_strides[i];
  std::vector<std::int64_t> from(std::size_t(count_of(out)));
  Dims at(out.size(), 0);
  std::int64_t source = 0;
  for (auto& f : from) {
    f = source;
    for (std::size_t axis = out.size(); axis-- > 0;) {  // the next index, as an odometer turns
      source += strides[axis];
      if (++at[axis] < out[axis])
        break;
      source -= strides[axis] * at[axis];
      at[axis] = 0;
    }
  }
  return from;
}

namespace {

// The flat indices of a tensor of shape `dims` for each element of a tensor of shape `out`
// whose index along each axis maps to `dims` by `pick(axis, index)`.
template <typename Pick>
std::vector<std::int64_t> gathered(const Dims& dims, const Dims& out, Pick pick) {
  const Dims strides = strides_of(dims);
  std::vector<std::int64_t> from(std::size_t(count_of(out)));
  Dims at(out.size(), 0);
  for (auto& f : from) {
    f = 0;
    for (std::size_t axis = 0; axis < out.size(); ++axis)
      f += pick(axis, at[axis]) * strides[axis];
    for (std::size_t axis = out.size(); axis-- > 0;) {
      if (++at[axis] < out[axis])
        break;
      at[axis] = 0;
    }
  }
  return from;
}

}  // namespace

Constant fold_shape(const onnx::NodeProto& node, const Dims& dims) {
  const auto rank = std::int64_t(dims.size());
  const auto clamp = [&](std::int64_t v) { return std::clamp(v < 0 ? v + rank : v, {}, rank); };
  const std::int64_t start = clamp(int_attr(node, "start", 0));
  const std::int64_t end = std::max(start, clamp(int_attr(node, "end", rank)));
  Dims values(dims.begin() + start, dims.begin() + end);
  return {TensorProto::INT64, {std::int64_t(values.size())}, values, {}};
}

std::optional<Constant> fold_gather(const onnx::NodeProto& node, const Inputs& in, FoldBudget& b) {
  const auto indices = in.size() == 2 ? int_values(in[1]) : std::nullopt;
  const auto axis =
      in.empty() || !in[0] ? std::nullopt : axis_of(int_attr(node, "axis", 0), in[0]->dims.size());
  if (!indices || !axis)
    return std::nullopt;
  const Dims& data = in[0]->dims;
  const std::int64_t size = data[std::size_t(*axis)];
  for (const std::int64_t i : *indices)
    if (i < -size || i >= size)
      return std::nullopt;
  Dims out(data.begin(), data.begin() + *axis);
  out.insert(out.end(), in[1]->dims.begin(), in[1]->dims.end());
  out.insert(out.end(), data.begin() + *axis + 1, data.end());
  b.spend(out, node);
  // Viewed as [outer, size, inner] and indices flattened: [outer, indices, inner].
  const std::int64_t outer = count_of(Dims(data.begin(), data.begin() + *axis));
  const std::int64_t inner = count_of(Dims(data.begin() + *axis + 1, data.end()));
  std::vector<std::int64_t> from;
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i : *indices)
      for (std::int64_t n = 0; n < inner; ++n)
        from.push_back((o * size + (i < 0 ? i + size : i)) * inner + n);
  return take(*in[0], out, from);
}

std::optional<Constant> fold_slice(const onnx::NodeProto& node, const Inputs& in, FoldBudget& b) {
  const auto starts = in.size() >= 3 ? int_values(in[1]) : std::nullopt;
  const auto ends = in.size() >= 3 ? int_values(in[2]) : std::nullopt;
  if (!in[0] || !starts || !ends || starts->size() != ends->size())
    return std::nullopt;
  const Dims& dims = in[0]->dims;
  Dims axes(starts->size()), steps(starts->size(), 1);
  std::iota(axes.begin(), axes.end(), 0);
  if (in.size() > 3 && in[3])
    axes = in[3]->real() ? Dims{} : in[3]->ints;
  if (in.size() > 4 && in[4])
    steps = in[4]->real() ? Dims{} : in[4]->ints;
  if (axes.size() != starts->size() || steps.size() != starts->size())
    return std::nullopt;
  Dims first(dims.size(), 0), step(dims.size(), 1), out = dims;
  std::set<std::int64_t> seen;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const auto axis = axis_of(axes[i], dims.size());
    if (!axis || steps[i] == 0 || !seen.insert(*axis).second)
      return std::nullopt;
    const std::int64_t d = dims[std::size_t(*axis)], s = steps[i];
    // ONNX's clamping: [0, d] stepping forward, [-1, d - 1] stepping back.
    std::int64_t start = (*starts)[i] < 0 ? (*starts)[i] + d : (*starts)[i];
    std::int64_t end = (*ends)[i] < 0 ? (*ends)[i] + d : (*ends)[i];
    start =
        s > 0 ? std::clamp<std::int64_t>(start, 0, d) : std::clamp<std::int64_t>(start, 0, d - 1);
    end = s > 0 ? std::clamp<std::int64_t>(end, 0, d) : std::clamp<std::int64_t>(end, -1, d - 1);
    const std::int64_t span = s > 0 ? end - start : start - end, stride = s > 0 ? s : -s;
    out[std::size_t(*axis)] = span <= 0 ? 0 : (span + stride - 1) / stride;
    first[std::size_t(*axis)] = start;
    step[std::size_t(*axis)] = s;
  }
  b.spend(out, node);
  return take(*in[0], out, gathered(dims, out, [&](std::size_t axis, std::int64_t i) {
    return first[axis] + i * step[axis];
  }));
}

std::optional<Constant> fold_concat(const onnx::NodeProto& node, const Inputs& in, FoldBudget& b) {
  if (in.empty() || std::find(in.begin(), in.end(), nullptr) != in.end())
    return std::nullopt;
  const auto axis = axis_of(int_attr(node, "axis", 0), in[0]->dims.size());
  if (!axis)
    return std::nullopt;
  Dims out = in[0]->dims;
  out[std::size_t(*axis)] = 0;
  Constant all{in[0]->type, {}, {}, {}};
  std::vector<std::int64_t> offsets;  // of each part's values in `all`
  for (const Constant* part : in) {
    Dims rest = part->dims;
    if (part->type != all.type || rest.size() != out.size())
      return std::nullopt;
    out[std::size_t(*axis)] += rest[std::size_t(*axis)];
    rest[std::size_t(*axis)] = 0;
    Dims expected = out;
    expected[std::size_t(*axis)] = 0;
    if (rest != expected)
      return std::nullopt;
    offsets.push_back(all.size());
    all.ints.insert(all.ints.end(), part->ints.begin(), part->ints.end());
    all.reals.insert(all.reals.end(), part->reals.begin(), part->reals.end());
  }
  b.spend(out, node);
  const std::int64_t outer = count_of(Dims(out.begin(), out.begin() + *axis));
  std::vector<std::int64_t> from;
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::size_t p = 0; p < in.size(); ++p) {
      const std::int64_t block = count_of(Dims(in[p]->dims.begin() + *axis, in[p]->dims.end()));
      for (std::int64_t n = 0; n < block; ++n)
        from.push_back(offsets[p] + o * block + n);
    }
  }
  return take(all, out, from);
}

std::optional<Constant> fold_reshape(const onnx::NodeProto& node, const Inputs& in, FoldBudget& b) {
  auto shape = in.size() == 2 && in[0] ? int_values(in[1]) : std::nullopt;
  if (!shape)
    return std::nullopt;
  const bool allow_zero = int_attr(node, "allowzero", 0) != 0;
  std::int64_t known = 1, infer = -1;
  for (std::size_t i = 0; i < shape->size(); ++i) {
    std::int64_t& d = (*shape)[i];
    if (d == 0 && !allow_zero) {
      if (i >= in[0]->dims.size())
        return std::nullopt;
      d = in[0]->dims[i];
    }
    if (d == -1 && infer < 0)
      infer = std::int64_t(i);
    else if (d < 0 || (d != 0 && known > kMaxFoldedElements / d))
      return std::nullopt;
    else
      known *= d;
  }
  if (infer >= 0) {
    if (known == 0 || in[0]->size() % known != 0)
      return std::nullopt;
    (*shape)[std::size_t(infer)] = in[0]->size() / known;
  } else if (known != in[0]->size()) {
    return std::nullopt;
  }
  b.spend(*shape, node);
  Constant out = *in[0];
  out.dims = *shape;
  return out;
}

std::optional<Constant> fold_squeeze(const onnx::NodeProto& node, const Inputs& in, FoldBudget& b) {
  if (in.empty() || !in[0])
    return std::nullopt;
  const bool squeeze = node.op_type() == "Squeeze";
  auto axes = in.size() > 1 ? int_values(in[1]) : ints_attr(node, "axes");
  const Dims& dims = in[0]->dims;
  if (!axes && squeeze) {  // every axis of size 1
    axes.emplace();
    for (std::size_t i = 0; i < dims.size(); ++i)
      if (dims[i] == 1)
        axes->push_back(std::int64_t(i));
  }
  if (!axes)
    return std::nullopt;
  const auto rank = std::int64_t(dims.size() + (squeeze ? 0 : axes->size()));
  std::set<std::int64_t> picked;
  for (const std::int64_t a : *axes) {
    const auto axis = axis_of(a, rank);
    if (!axis || !picked.insert(*axis).second || (squeeze && dims[std::size_t(*axis)] != 1))
      return std::nullopt;
  }
  Dims out;
  for (std::int64_t i = 0, from = 0; i < rank; ++i) {
    if (!squeeze)
      out.push_back(picked.contains(i) ? 1 : dims[std::size_t(from++)]);
    else if (!picked.contains(i))
      out.push_back(dims[std::size_t(i)]);
  }
  b.spend(out, node);
  Constant result = *in[0];
  result.dims = out;
  return result;
}

std::optional<Constant> fold_transpose(const onnx::NodeProto& node, const Inputs& in,
                                       FoldBudget& b) {
  if (in.size() != 1 || !in[0])
    return std::nullopt;
  const Dims& dims = in[0]->dims;
  Dims perm(dims.size());
  std::iota(perm.rbegin(), perm.rend(), 0);
  if (const auto attr = ints_attr(node, "perm"))
    perm = *attr;
  Dims sorted = perm, out;
  std::sort(sorted.begin(), sorted.end());
  Dims identity(dims.size());
  std::iota(identity.begin(), identity.end(), 0);
  if (sorted != identity)
    return std::nullopt;
  for (const std::int64_t p : perm)
    out.push_back(dims[std::size_t(p)]);
  b.spend(out, node);
  // Output axis k walks input axis perm[k]: gathered() over the permuted input strides.
  const Dims strides = strides_of(dims);
  Dims permuted_strides;
  for (const std::int64_t p : perm)
    permuted_strides.push_back(strides[std::size_t(p)]);
  std::vector<std::int64_t> from(std::size_t(count_of(out)));
  Dims at(out.size(), 0);
  for (auto& f : from) {
    f = std::inner_product(at.begin(), at.end(), permuted_strides.begin(), std::int64_t{0});
    for (std::size_t axis = out.size(); axis-- > 0;) {
      if (++at[axis] < out[axis])
        break;
      at[axis] = 0;
    }
  }
  return take(*in[0], out, from);
}

std::optional<Constant> fold_expand(const onnx::NodeProto& node, const Inputs& in, FoldBudget& b) {
  const auto shape = in.size() == 2 && in[0] ? int_values(in[1]) : std::nullopt;
  if (!shape)
    return std::nullopt;
  b.spend(*shape, node);  // refuses a negative or huge target before broadcasting to it
  const auto out = broadcast(in[0]->dims, *shape);
  if (!out)
    return std::nullopt;
  b.spend(*out, node);
  return take(*in[0], *out, broadcast_indices(in[0]->dims, *out));
}

std::optional<Constant> fold_trilu(const onnx::NodeProto& node, const Inputs& in, FoldBudget& b) {
  if (in.empty() || !in[0] || in[0]->dims.size() < 2)
    return std::nullopt;
  std::int64_t k = 0;
  if (in.size() > 1 && in[1]) {
    const auto ks = int_values(in[1]);
    if (!ks || ks->size() != 1)
      return std::nullopt;
    k = (*ks)[0];
  }
  const bool upper = int_attr(node, "upper", 1) != 0;
  Constant out = *in[0];
  b.spend(out.dims, node);
  const std::int64_t rows = out.dims[out.dims.size() - 2], cols = out.dims.back();
  for (std::int64_t i = 0; i < out.size(); ++i) {
    const std::int64_t r = (i / cols) % rows, c = i % cols;
    // Kept: on or above diagonal k (upper), on or below it (lower); the rest become zero.
    if (upper ? c - r < k : c - r > k) {
      if (out.real())
        out.reals[std::size_t(i)] = 0;
      else
        out.ints[std::size_t(i)] = 0;
    }
  }
  return out;
}

}  // namespace ipusim::models::onnx_fold
