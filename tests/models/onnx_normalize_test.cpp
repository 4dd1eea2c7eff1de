// The ONNX import's normalisation (models/import/onnx_normalize.hpp) on small graphs built here:
// each rule, and hostile folding refused with its exact text.

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "models/import/onnx_fold.hpp"
#include "models/import/onnx_normalize.hpp"
#include "sim/core/error.hpp"

namespace {

using ipusim::models::normalize_onnx;
using onnx::TensorProto;
using Dims = std::vector<std::int64_t>;

constexpr const char* kPath = "model.onnx";

// A model at `opset` with one float input "x" of shape [batch, rest...] (batch symbolic) and
// one output "y".
onnx::ModelProto model_with(const Dims& rest, std::int64_t opset = 17) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  auto* op = model.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  auto* graph = model.mutable_graph();
  graph->set_name("g");
  auto* input = graph->add_input();
  input->set_name("x");
  auto* type = input->mutable_type()->mutable_tensor_type();
  type->set_elem_type(TensorProto::FLOAT);
  type->mutable_shape()->add_dim()->set_dim_param("batch");
  for (const std::int64_t d : rest)
    type->mutable_shape()->add_dim()->set_dim_value(d);
  auto* output = graph->add_output();
  output->set_name("y");
  output->mutable_type()->mutable_tensor_type()->set_elem_type(TensorProto::FLOAT);
  return model;
}

onnx::NodeProto& add_node(onnx::ModelProto& model, const std::string& op,
                          const std::vector<std::string>& inputs, const std::string& output) {
  auto* node = model.mutable_graph()->add_node();
  node->set_op_type(op);
  node->set_name(output + "_node");
  for (const auto& input : inputs)
    node->add_input(input);
  node->add_output(output);
  return *node;
}

void add_constant(onnx::ModelProto& model, const std::string& name,
                  const ipusim::models::onnx_fold::Constant& value) {
  auto& node = add_node(model, "Constant", {}, name);
  auto* a = node.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = ipusim::models::onnx_fold::tensor_of(value, name);
}

ipusim::models::onnx_fold::Constant ints(const Dims& values) {
  return {TensorProto::INT64, {std::int64_t(values.size())}, values, {}};
}

void add_int_attribute(onnx::NodeProto& node, const std::string& name, std::int64_t value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

std::vector<std::string> ops_of(const onnx::GraphProto& graph) {
  std::vector<std::string> ops;
  for (const auto& node : graph.node())
    ops.push_back(node.op_type());
  return ops;
}

std::string refusal_of(onnx::ModelProto model) {
  try {
    normalize_onnx(model, kPath);
  } catch (const ipusim::core::ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("onnx normalisation folds a causal mask computed from constants into one constant") {
  auto model = model_with({3, 3});
  add_constant(model, "size", ints({3, 3}));
  auto& fill = add_node(model, "ConstantOfShape", {"size"}, "full");
  auto* value = fill.add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  *value->mutable_t() = ipusim::models::onnx_fold::tensor_of(
      {TensorProto::FLOAT, {1}, {}, {-std::numeric_limits<double>::infinity()}}, "v");
  add_constant(model, "one", {TensorProto::INT64, {}, {1}, {}});
  add_node(model, "Trilu", {"full", "one"}, "mask");
  add_node(model, "Add", {"x", "mask"}, "y");
  const auto normalized = normalize_onnx(model, kPath);
  const auto& graph = model.graph();
  REQUIRE(ops_of(graph) == std::vector<std::string>{"Constant", "Add"});
  CHECK(normalized.folded_nodes == 2);
  const auto mask = ipusim::models::onnx_fold::read_constant(graph.node(0).attribute(0).t());
  REQUIRE(mask);
  CHECK(mask->dims == Dims{3, 3});
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(mask->reals == std::vector<double>{0, -inf, -inf, 0, 0, -inf, 0, 0, 0});
  CHECK(normalized.shapes.at("y") == Dims{1, 3, 3});
}

TEST_CASE(
    "onnx normalisation fixes a symbolic batch to 1 and folds a Shape chain into a Reshape "
    "target") {
  auto model = model_with({2, 3, 3});
  add_node(model, "Relu", {"x"}, "r");
  add_node(model, "Shape", {"r"}, "shape");
  add_constant(model, "zero", {TensorProto::INT64, {}, {0}, {}});
  add_node(model, "Gather", {"shape", "zero"}, "batch");
  add_constant(model, "axes", ints({0}));
  add_node(model, "Unsqueeze", {"batch", "axes"}, "batch_1d");
  add_constant(model, "minus_one", ints({-1}));
  add_int_attribute(add_node(model, "Concat", {"batch_1d", "minus_one"}, "target"), "axis", 0);
  add_node(model, "Reshape", {"r", "target"}, "y");
  const auto normalized = normalize_onnx(model, kPath);
  const auto& graph = model.graph();
  REQUIRE(ops_of(graph) == std::vector<std::string>{"Relu", "Constant", "Reshape"});
  const auto target = ipusim::models::onnx_fold::read_constant(graph.node(1).attribute(0).t());
  REQUIRE(target);
  CHECK(target->ints == Dims{1, -1});
  CHECK(graph.input(0).type().tensor_type().shape().dim(0).dim_value() == 1);
  CHECK(normalized.shapes.at("x") == Dims{1, 2, 3, 3});
  CHECK(normalized.shapes.at("y") == Dims{1, 18});
}

TEST_CASE("onnx normalisation removes Identities, counting an aliased initializer once more") {
  auto model = model_with({4});
  auto* bias = model.mutable_graph()->add_initializer();
  *bias = ipusim::models::onnx_fold::tensor_of({TensorProto::FLOAT, {4}, {}, {0, 0, 0, 0}}, "b");
  add_node(model, "Identity", {"b"}, "b_alias");
  add_node(model, "Add", {"x", "b"}, "h");
  add_node(model, "Add", {"h", "b_alias"}, "h2");
  add_node(model, "Identity", {"h2"}, "y");  // the graph output keeps its name
  const auto normalized = normalize_onnx(model, kPath);
  const auto& graph = model.graph();
  REQUIRE(ops_of(graph) == std::vector<std::string>{"Add", "Add"});
  CHECK(graph.node(1).input(1) == "b");
  CHECK(graph.node(1).output(0) == "y");
  CHECK(normalized.aliased_initializer_elements == 4);
}

TEST_CASE("onnx normalisation never folds what reads a float initializer") {
  auto model = model_with({4});
  auto* w = model.mutable_graph()->add_initializer();
  *w = ipusim::models::onnx_fold::tensor_of(
      {TensorProto::FLOAT, {4, 4}, {}, std::vector<double>(16, 0.5)}, "w");
  add_node(model, "Transpose", {"w"}, "w_t");
  add_node(model, "MatMul", {"x", "w_t"}, "y");
  normalize_onnx(model, kPath);
  CHECK(ops_of(model.graph()) == std::vector<std::string>{"Transpose", "MatMul"});
}

TEST_CASE("onnx normalisation refuses hostile folding with exact texts") {
  SECTION("a ConstantOfShape past 2^24 elements") {
    auto model = model_with({4});
    add_constant(model, "size", ints({1 << 14, 1 << 14}));
    add_node(model, "ConstantOfShape", {"size"}, "huge");
    add_node(model, "Add", {"x", "huge"}, "y");
    CHECK(refusal_of(model) ==
          "model.onnx: node 'huge_node' (ConstantOfShape): folding its constant inputs gives a "
          "tensor of shape [16384, 16384]: expected at most 2^24 (16777216) elements");
  }
  SECTION("an Expand to a negative size") {
    auto model = model_with({4});
    add_constant(model, "one", ints({1}));
    add_constant(model, "size", ints({-3}));
    add_node(model, "Expand", {"one", "size"}, "e");
    add_node(model, "Add", {"x", "e"}, "y");
    CHECK(refusal_of(model) ==
          "model.onnx: node 'e_node' (Expand): folding its constant inputs gives a tensor of "
          "shape [-3]: expected sizes of 0 or more");
  }
  SECTION("a Range by 0") {
    auto model = model_with({4});
    add_constant(model, "start", {TensorProto::INT64, {}, {0}, {}});
    add_constant(model, "limit", {TensorProto::INT64, {}, {4}, {}});
    add_constant(model, "step", {TensorProto::INT64, {}, {0}, {}});
    add_node(model, "Range", {"start", "limit", "step"}, "r");
    add_node(model, "Add", {"x", "r"}, "y");
    CHECK(refusal_of(model) ==
          "model.onnx: node 'r_node' (Range): a range from 0 by 0 while folding constants: "
          "expected a step other than 0 and at most 2^24 (16777216) elements");
  }
  SECTION("masks that together pass 2^26 elements") {
    auto model = model_with({4});
    add_constant(model, "size", ints({1 << 12, 1 << 12}));
    for (const std::string name : {"m1", "m2", "m3", "m4", "m5"})
      add_node(model, "ConstantOfShape", {"size"}, name);
    add_node(model, "Add", {"x", "m5"}, "y");
    CHECK(refusal_of(model) ==
          "model.onnx: node 'm5_node' (ConstantOfShape): folding its constant inputs gives a "
          "tensor of shape [4096, 4096], past the 2^26 (67108864) elements folding may create "
          "in one graph");
  }
  SECTION("a cycle through an Identity") {
    auto model = model_with({4});
    add_node(model, "Add", {"x", "z"}, "h");
    add_node(model, "Identity", {"h"}, "z");
    add_node(model, "Relu", {"h"}, "y");
    CHECK(refusal_of(model) ==
          "model.onnx: node 'h_node' (Add) reads 'h' before node 'h_node' (Add) writes it: "
          "expected nodes in topological order, without cycles");
  }
  SECTION("an input nothing provides") {
    auto model = model_with({4});
    add_node(model, "Add", {"x", "nowhere"}, "y");
    CHECK(refusal_of(model) ==
          "model.onnx: node 'y_node' (Add) reads 'nowhere', which no node, graph input or "
          "initializer provides");
  }
  SECTION("an opset before 13") {
    auto model = model_with({4}, 11);
    add_node(model, "Relu", {"x"}, "y");
    CHECK(refusal_of(model) ==
          "model.onnx: the model uses ONNX opset 11; ipusim reads ONNX opsets 13 to 18: export "
          "the model again with torch.onnx.export(..., opset_version=17), or convert it with "
          "onnx.version_converter.convert_version(model, 17)");
  }
}
