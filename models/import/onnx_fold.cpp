// Constant folding's tensors, budget and dispatch, its element-wise operators and those that
// create values (Range, ConstantOfShape, Cast) (models/import/onnx_fold.hpp).

#include <cmath>
#include <cstring>
#include <functional>
#include <map>

#include "models/import/onnx_fold_ops.hpp"
#include "models/layers/shape_inference.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models::onnx_fold {
namespace {

using onnx::TensorProto;

template <typename T, typename Out>
bool read_raw(const std::string& raw, std::int64_t count, std::vector<Out>& out) {
  if (raw.size() != std::size_t(count) * sizeof(T))
    return false;
  out.resize(std::size_t(count));
  for (std::size_t i = 0; i < out.size(); ++i) {
    T value;
    std::memcpy(&value, raw.data() + i * sizeof(T), sizeof(T));
    out[i] = static_cast<Out>(value);
  }
  return true;
}

template <typename Field, typename Out>
bool read_field(const Field& field, std::int64_t count, std::vector<Out>& out) {
  if (field.size() != count)
    return false;
  out.assign(field.begin(), field.end());
  return true;
}

// The values of `t` (of a foldable type, `count` of them) into `c`; false when they are not
// `count` values.
bool read_values(const TensorProto& t, std::int64_t count, Constant& c) {
  const std::string& raw = t.raw_data();
  const bool in_raw = t.has_raw_data();
  switch (t.data_type()) {
    case TensorProto::FLOAT:
      return in_raw ? read_raw<float>(raw, count, c.reals)
                    : read_field(t.float_data(), count, c.reals);
    case TensorProto::DOUBLE:
      return in_raw ? read_raw<double>(raw, count, c.reals)
                    : read_field(t.double_data(), count, c.reals);
    case TensorProto::INT64:
      return in_raw ? read_raw<std::int64_t>(raw, count, c.ints)
                    : read_field(t.int64_data(), count, c.ints);
    case TensorProto::INT32:
      return in_raw ? read_raw<std::int32_t>(raw, count, c.ints)
                    : read_field(t.int32_data(), count, c.ints);
    default:  // BOOL: a byte each in raw data, an int32 each otherwise
      if (!(in_raw ? read_raw<std::uint8_t>(raw, count, c.ints)
                   : read_field(t.int32_data(), count, c.ints)))
        return false;
      for (auto& v : c.ints)
        v = v != 0;
      return true;
  }
}

template <typename T, typename In>
std::string raw_of(const std::vector<In>& values) {
  std::string raw(values.size() * sizeof(T), '\0');
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto value = static_cast<T>(values[i]);
    std::memcpy(raw.data() + i * sizeof(T), &value, sizeof(T));
  }
  return raw;
}

// A real result in the precision of its type: float32 values are rounded as the model would.
double rounded(std::int32_t type, double value) {
  return type == TensorProto::FLOAT ? static_cast<double>(static_cast<float>(value)) : value;
}

using IntOp = std::function<std::optional<std::int64_t>(std::int64_t, std::int64_t)>;
using RealOp = std::function<double(double, double)>;

// An element-wise operator of two same-typed tensors broadcast together: integer results
// exactly (nullopt on an overflow or a division by zero), real ones in their precision.
std::optional<Constant> binary(const onnx::NodeProto& node, const Inputs& in, FoldBudget& budget,
                               const IntOp& on_ints, const RealOp& on_reals) {
  if (in.size() != 2 || !in[0] || !in[1] || in[0]->type != in[1]->type)
    return std::nullopt;
  const auto dims = broadcast(in[0]->dims, in[1]->dims);
  if (!dims || (in[0]->real() ? !on_reals : !on_ints))
    return std::nullopt;
  budget.spend(*dims, node);
  const auto a = broadcast_indices(in[0]->dims, *dims), b = broadcast_indices(in[1]->dims, *dims);
  Constant out{in[0]->type, *dims, {}, {}};
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (out.real()) {
      out.reals.push_back(rounded(out.type, on_reals(in[0]->reals[a[i]], in[1]->reals[b[i]])));
    } else {
      const auto v = on_ints(in[0]->ints[a[i]], in[1]->ints[b[i]]);
      if (!v)
        return std::nullopt;
      out.ints.push_back(*v);
    }
  }
  return out;
}

// A comparison of two same-typed tensors, as a BOOL tensor.
std::optional<Constant> compare(const onnx::NodeProto& node, const Inputs& in, FoldBudget& budget,
                                const std::function<bool(double, double)>& test) {
  if (in.size() != 2 || !in[0] || !in[1] || in[0]->type != in[1]->type)
    return std::nullopt;
  const auto dims = broadcast(in[0]->dims, in[1]->dims);
  if (!dims)
    return std::nullopt;
  budget.spend(*dims, node);
  const auto a = broadcast_indices(in[0]->dims, *dims), b = broadcast_indices(in[1]->dims, *dims);
  Constant out{TensorProto::BOOL, *dims, {}, {}};
  const auto at = [](const Constant& c, std::int64_t i) {
    return c.real() ? c.reals[std::size_t(i)] : double(c.ints[std::size_t(i)]);
  };
  // Integers past 2^53 compare inexactly as doubles; shape values never are.
  for (std::size_t i = 0; i < a.size(); ++i)
    out.ints.push_back(test(at(*in[0], a[i]), at(*in[1], b[i])));
  return out;
}

std::optional<Constant> where(const onnx::NodeProto& node, const Inputs& in, FoldBudget& budget) {
  if (in.size() != 3 || !in[0] || !in[1] || !in[2] || in[0]->type != TensorProto::BOOL ||
      in[1]->type != in[2]->type)
    return std::nullopt;
  const auto xy = broadcast(in[1]->dims, in[2]->dims);
  const auto dims = xy ? broadcast(in[0]->dims, *xy) : std::nullopt;
  if (!dims)
    return std::nullopt;
  budget.spend(*dims, node);
  const auto c = broadcast_indices(in[0]->dims, *dims), x = broadcast_indices(in[1]->dims, *dims),
             y = broadcast_indices(in[2]->dims, *dims);
  std::vector<std::int64_t> from;
  Constant both = *in[1];  // x's values then y's, so one take() picks from either
  const auto x_size = std::int64_t(both.size());
  both.ints.insert(both.ints.end(), in[2]->ints.begin(), in[2]->ints.end());
  both.reals.insert(both.reals.end(), in[2]->reals.begin(), in[2]->reals.end());
  for (std::size_t i = 0; i < c.size(); ++i)
    from.push_back(in[0]->ints[std::size_t(c[i])] ? x[i] : x_size + y[i]);
  return take(both, *dims, from);
}

// Neg, Sqrt and Not.
std::optional<Constant> unary(const onnx::NodeProto& node, const Inputs& in, FoldBudget& budget) {
  if (in.size() != 1 || !in[0])
    return std::nullopt;
  const std::string& op = node.op_type();
  Constant out = *in[0];
  if ((op == "Not") != (out.type == TensorProto::BOOL) || (op == "Sqrt" && !out.real()))
    return std::nullopt;
  budget.spend(out.dims, node);
  for (double& v : out.reals)
    v = rounded(out.type, op == "Neg" ? -v : std::sqrt(v));
  for (std::int64_t& v : out.ints) {
    if (op == "Neg" && v == INT64_MIN)
      return std::nullopt;
    v = op == "Not" ? !v : -v;
  }
  return out;
}

using Folder =
    std::function<std::optional<Constant>(const onnx::NodeProto&, const Inputs&, FoldBudget&)>;

// Integer arithmetic, nullopt on an overflow or a division by zero.
std::optional<std::int64_t> add_ints(std::int64_t x, std::int64_t y) {
  std::int64_t r = 0;
  return __builtin_add_overflow(x, y, &r) ? std::nullopt : std::optional(r);
}
std::optional<std::int64_t> sub_ints(std::int64_t x, std::int64_t y) {
  std::int64_t r = 0;
  return __builtin_sub_overflow(x, y, &r) ? std::nullopt : std::optional(r);
}
std::optional<std::int64_t> mul_ints(std::int64_t x, std::int64_t y) {
  std::int64_t r = 0;
  return __builtin_mul_overflow(x, y, &r) ? std::nullopt : std::optional(r);
}
std::optional<std::int64_t> div_ints(std::int64_t x, std::int64_t y) {
  return y == 0 || (x == INT64_MIN && y == -1) ? std::nullopt : std::optional(x / y);
}

// An element-wise arithmetic operator: `on_ints` for integers (none: not folded), `on_reals`.
Folder arithmetic(IntOp on_ints, RealOp on_reals) {
  return [=](const onnx::NodeProto& node, const Inputs& in, FoldBudget& budget) {
    return binary(node, in, budget, on_ints, on_reals);
  };
}

Folder comparison(std::function<bool(double, double)> test) {
  return [=](const onnx::NodeProto& node, const Inputs& in, FoldBudget& budget) {
    return compare(node, in, budget, test);
  };
}

const std::map<std::string, Folder>& folders() {
  static const std::map<std::string, Folder> table = {
      {"Add", arithmetic(add_ints, std::plus<double>())},
      {"Sub", arithmetic(sub_ints, std::minus<double>())},
      {"Mul", arithmetic(mul_ints, std::multiplies<double>())},
      {"Div", arithmetic(div_ints, std::divides<double>())},
      {"Pow", arithmetic(nullptr, [](double x, double y) { return std::pow(x, y); })},
      {"Equal", comparison(std::equal_to<double>())},
      {"Less", comparison(std::less<double>())},
      {"Greater", comparison(std::greater<double>())},
      {"Where", where},
      {"Neg", unary},
      {"Sqrt", unary},
      {"Not", unary},
      {"Gather", fold_gather},
      {"Slice", fold_slice},
      {"Concat", fold_concat},
      {"Reshape", fold_reshape},
      {"Squeeze", fold_squeeze},
      {"Unsqueeze", fold_squeeze},
      {"Transpose", fold_transpose},
      {"Expand", fold_expand},
      {"Trilu", fold_trilu},
      {"Range", fold_range},
      {"ConstantOfShape", fold_constant_of_shape},
      {"Cast", fold_cast},
  };
  return table;
}

}  // namespace

std::optional<Constant> fold_range(const onnx::NodeProto& node, const Inputs& in, FoldBudget& b) {
  if (in.size() != 3 || !in[0] || !in[1] || !in[2] || in[0]->size() != 1 || in[1]->size() != 1 ||
      in[2]->size() != 1 || in[0]->type != in[1]->type || in[0]->type != in[2]->type)
    return std::nullopt;
  Constant out{in[0]->type, {}, {}, {}};
  const auto refuse = [&](const std::string& why) {
    return core::ConfigError(b.path(), "",
                             "node '" + node.name() + "' (Range): " + why +
                                 " while folding constants: expected a step other than 0 and "
                                 "at most " +
                                 bound_text(kMaxFoldedElementsLog2) + " elements");
  };
  if (out.real()) {
    const double start = in[0]->reals[0], delta = in[2]->reals[0];
    const double count = std::ceil((in[1]->reals[0] - start) / delta);
    if (delta == 0 || !std::isfinite(count) || count > double(kMaxFoldedElements))
      throw refuse("a range from " + std::to_string(start) + " by " + std::to_string(delta));
    out.dims = {std::max<std::int64_t>(0, std::int64_t(count))};
    b.spend(out.dims, node);
    for (std::int64_t i = 0; i < out.dims[0]; ++i)
      out.reals.push_back(rounded(out.type, start + double(i) * delta));
    return out;
  }
  const std::int64_t start = in[0]->ints[0], limit = in[1]->ints[0], delta = in[2]->ints[0];
  if (delta == 0)
    throw refuse("a range from " + std::to_string(start) + " by 0");
  std::int64_t span = 0;
  if (__builtin_sub_overflow(limit, start, &span))
    return std::nullopt;  // a range past int64: no shape computation's
  const std::int64_t whole = span / delta,
                     count = whole + (span % delta != 0 && whole >= 0 && (span > 0) == (delta > 0));
  out.dims = {std::max<std::int64_t>(0, count)};
  b.spend(out.dims, node);
  for (std::int64_t i = 0; i < out.dims[0]; ++i)
    out.ints.push_back(start + i * delta);  // within [start, limit]: no overflow
  return out;
}

std::optional<Constant> fold_constant_of_shape(const onnx::NodeProto& node, const Inputs& in,
                                               FoldBudget& b) {
  const auto shape = in.size() == 1 ? int_values(in[0]) : std::nullopt;
  if (!shape)
    return std::nullopt;
  Constant fill{TensorProto::FLOAT, {}, {}, {0.0}};
  for (const auto& a : node.attribute()) {
    if (a.name() != "value")
      continue;
    const auto value = a.has_t() ? read_constant(a.t()) : std::nullopt;
    if (!value || value->size() != 1)
      return std::nullopt;
    fill = *value;
  }
  const std::int64_t count = b.spend(*shape, node);
  Constant out{fill.type, *shape, {}, {}};
  out.ints.assign(fill.real() ? 0 : std::size_t(count), fill.real() ? 0 : fill.ints[0]);
  out.reals.assign(fill.real() ? std::size_t(count) : 0, fill.real() ? fill.reals[0] : 0);
  return out;
}

std::optional<Constant> fold_cast(const onnx::NodeProto& node, const Inputs& in, FoldBudget& b) {
  const std::int32_t to = std::int32_t(int_attr(node, "to", 0));
  if (in.size() != 1 || !in[0] || !foldable_type(to))
    return std::nullopt;
  b.spend(in[0]->dims, node);
  Constant out{to, in[0]->dims, {}, {}};
  for (std::int64_t i = 0; i < in[0]->size(); ++i) {
    const bool from_real = in[0]->real();
    const double real = from_real ? in[0]->reals[std::size_t(i)] : 0;
    const std::int64_t integer = from_real ? 0 : in[0]->ints[std::size_t(i)];
    if (out.real()) {
      out.reals.push_back(rounded(to, from_real ? real : double(integer)));
    } else if (to == TensorProto::BOOL) {
      out.ints.push_back(from_real ? real != 0 : integer != 0);
    } else if (from_real) {
      // Truncated toward zero; a NaN or a value past the type's range has no integer.
      if (!(std::abs(real) < 9.2e18))
        return std::nullopt;
      out.ints.push_back(std::int64_t(real));
    } else {
      out.ints.push_back(integer);
    }
    if (to == TensorProto::INT32 && !out.ints.empty() &&
        (out.ints.back() < INT32_MIN || out.ints.back() > INT32_MAX))
      return std::nullopt;
  }
  return out;
}

bool Constant::real() const {
  return type == TensorProto::FLOAT || type == TensorProto::DOUBLE;
}

std::int64_t Constant::size() const {
  return std::int64_t(real() ? reals.size() : ints.size());
}

bool foldable_type(std::int32_t type) {
  return type == TensorProto::FLOAT || type == TensorProto::DOUBLE || type == TensorProto::INT64 ||
         type == TensorProto::INT32 || type == TensorProto::BOOL;
}

std::optional<Constant> read_constant(const TensorProto& t) {
  if (!foldable_type(t.data_type()) || t.data_location() == TensorProto::EXTERNAL)
    return std::nullopt;
  Constant c{t.data_type(), Dims(t.dims().begin(), t.dims().end()), {}, {}};
  std::int64_t count = 1;
  for (const std::int64_t d : c.dims) {
    if (d < 0 || (d != 0 && count > kMaxFoldedElements / d))
      return std::nullopt;
    count *= d;
  }
  if (!read_values(t, count, c))
    return std::nullopt;
  return c;
}

TensorProto tensor_of(const Constant& c, const std::string& name) {
  TensorProto t;
  t.set_name(name);
  t.set_data_type(c.type);
  for (const std::int64_t d : c.dims)
    t.add_dims(d);
  switch (c.type) {
    case TensorProto::FLOAT:
      t.set_raw_data(raw_of<float>(c.reals));
      break;
    case TensorProto::DOUBLE:
      t.set_raw_data(raw_of<double>(c.reals));
      break;
    case TensorProto::INT64:
      t.set_raw_data(raw_of<std::int64_t>(c.ints));
      break;
    case TensorProto::INT32:
      t.set_raw_data(raw_of<std::int32_t>(c.ints));
      break;
    default:
      t.set_raw_data(raw_of<std::uint8_t>(c.ints));
      break;
  }
  return t;
}

std::int64_t FoldBudget::spend(const Dims& dims, const onnx::NodeProto& node) {
  const std::string what = "node '" + node.name() + "' (" + node.op_type() +
                           "): folding its constant inputs gives a tensor of shape " +
                           shape_text(dims);
  std::int64_t count = 1;
  for (const std::int64_t d : dims) {
    if (d < 0)
      throw core::ConfigError(path_, "", what + ": expected sizes of 0 or more");
    if (d != 0 && count > kMaxFoldedElements / d)
      throw core::ConfigError(
          path_, "",
          what + ": expected at most " + bound_text(kMaxFoldedElementsLog2) + " elements");
    count *= d;
  }
  if (count > kMaxFoldedTotal - total_)
    throw core::ConfigError(path_, "",
                            what + ", past the " + bound_text(kMaxFoldedTotalLog2) +
                                " elements folding may create in one graph");
  total_ += count;
  return count;
}

std::string bound_text(int log2) {
  return "2^" + std::to_string(log2) + " (" + std::to_string(std::int64_t{1} << log2) + ")";
}

bool is_foldable_op(const std::string& op) {
  return op == "Shape" || folders().contains(op);
}

std::optional<Constant> fold_node(const onnx::NodeProto& node, const Inputs& inputs,
                                  FoldBudget& budget) {
  const auto found = folders().find(node.op_type());
  if (found == folders().end() || node.output_size() != 1)
    return std::nullopt;
  return found->second(node, inputs, budget);
}

}  // namespace ipusim::models::onnx_fold
