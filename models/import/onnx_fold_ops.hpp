#pragma once
// The operators constant folding evaluates (models/import/onnx_fold.hpp), split by kind:
// element-wise arithmetic and comparisons, Range, ConstantOfShape and Cast in onnx_fold.cpp,
// the ones that move values (Gather, Slice, Concat, Reshape, Transpose, Expand...) in
// onnx_fold_layout.cpp. Each returns nullopt for inputs it does not fold. Internal to the
// ONNX import library.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/import/onnx_fold.hpp"

namespace ipusim::models::onnx_fold {

using Dims = std::vector<std::int64_t>;
using Inputs = std::vector<const Constant*>;

std::int64_t count_of(const Dims& dims);  // 1 for a scalar; dims already bounded
Dims strides_of(const Dims& dims);
std::int64_t int_attr(const onnx::NodeProto& node, const std::string& name, std::int64_t fallback);
std::optional<Dims> ints_attr(const onnx::NodeProto& node, const std::string& name);
// An integer constant's values, or nullopt for a real or absent one.
std::optional<Dims> int_values(const Constant* c);
// Axis `axis` of a rank-`rank` tensor counted from 0, or nullopt when out of range.
std::optional<std::int64_t> axis_of(std::int64_t axis, std::int64_t rank);

// A tensor of `src`'s type and shape `dims` whose element i is `src`'s element from[i].
Constant take(const Constant& src, Dims dims, const std::vector<std::int64_t>& from);

std::optional<Constant> fold_gather(const onnx::NodeProto& node, const Inputs& in, FoldBudget& b);
std::optional<Constant> fold_slice(const onnx::NodeProto& node, const Inputs& in, FoldBudget& b);
std::optional<Constant> fold_concat(const onnx::NodeProto& node, const Inputs& in, FoldBudget& b);
std::optional<Constant> fold_reshape(const onnx::NodeProto& node, const Inputs& in, FoldBudget& b);
// Squeeze and Unsqueeze: axes as an input (opset 13 on) or an attribute (before).
std::optional<Constant> fold_squeeze(const onnx::NodeProto& node, const Inputs& in, FoldBudget& b);
std::optional<Constant> fold_transpose(const onnx::NodeProto& node, const Inputs& in,
                                       FoldBudget& b);
std::optional<Constant> fold_expand(const onnx::NodeProto& node, const Inputs& in, FoldBudget& b);
std::optional<Constant> fold_trilu(const onnx::NodeProto& node, const Inputs& in, FoldBudget& b);
std::optional<Constant> fold_range(const onnx::NodeProto& node, const Inputs& in, FoldBudget& b);
std::optional<Constant> fold_constant_of_shape(const onnx::NodeProto& node, const Inputs& in,
                                               FoldBudget& b);
std::optional<Constant> fold_cast(const onnx::NodeProto& node, const Inputs& in, FoldBudget& b);

// The numpy broadcast of `a` and `b`, or nullopt when they do not broadcast.
std::optional<Dims> broadcast(const Dims& a, const Dims& b);
// For each element of a tensor of shape `out`, the flat index of the element of a tensor of
// shape `in` (which broadcasts to `out`) it reads.
std::vector<std::int64_t> broadcast_indices(const Dims& in, const Dims& out);

}  // namespace ipusim::models::onnx_fold
