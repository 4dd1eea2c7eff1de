#pragma once
// The layout of a tensor inside an attention block, as the attention matcher follows it
// (onnx_attention.cpp): a list of axes, each a row-major list of named factors, and what
// Transpose, Reshape, Slice and Gather do to it. Internal to the ONNX import library.

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/import/onnx_patterns.hpp"

namespace ipusim::models::onnx_layout {

struct Factor {
  char kind;  // b batch, s sequence, h hidden, n heads, d head size, p packed Q/K/V index
  std::int64_t size;
  bool operator==(const Factor&) const = default;
};
using Axis = std::vector<Factor>;
using Layout = std::vector<Axis>;

std::int64_t size_of(const Axis& axis);
// Factors of size 1 (a batch of one) carry nothing: layouts compare without them.
Axis without_ones(const Axis& axis);
bool same_layout(const Layout& a, const Layout& b);
// `axis` as heads then head size (of kinds `heads`, `size`), in that order.
bool is_heads_by_size(const Axis& axis, char heads, char size);
// Reshape: the factors regrouped in row-major order into `dims`; a hidden factor splits into
// heads (outer) and head size (inner) where a dimension needs part of it. nullopt when a
// dimension would cut any other factor.
std::optional<Layout> regrouped(const Layout& in, const std::vector<std::int64_t>& dims);
std::vector<std::int64_t> ints_of(const onnx::NodeProto& node, const std::string& name);
std::int64_t int_of(const onnx::NodeProto& node, const std::string& name, std::int64_t fallback);
// What a layout op does to `layout`; nullopt when it is no layout op or does what attention
// cannot. `part` receives the packed index a Slice or Gather picks.
std::optional<Layout> through(const OnnxGraphIndex& index, const onnx::NodeProto& node,
                              Layout layout, int& part);
bool is_layout_op(const onnx::NodeProto& node);
// A Mul or Div of a value by a scalar constant: the factor it scales by (`other` the value), or
// 0 when the node is no such scale.
double scalar_scale(const OnnxGraphIndex& index, const onnx::NodeProto& node, std::string& other);

}  // namespace ipusim::models::onnx_layout
