// The ONNX import's limits on the size of a graph, on a graph built here.

#include <onnx/onnx_pb.h>

#include <catch2/catch.hpp>

#include "models/import/onnx_import.hpp"
#include "sim/core/error.hpp"

namespace {

// A model reading a [1, 4] input through a chain of `relus` Relu nodes.
std::string relu_chain_bytes(int relus) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  auto* op = model.add_opset_import();
  op->set_domain("");
  op->set_version(13);
  auto* graph = model.mutable_graph();
  auto* input = graph->add_input();
  input->set_name("x");
  auto* type = input->mutable_type()->mutable_tensor_type();
  type->set_elem_type(onnx::TensorProto::FLOAT);
  type->mutable_shape()->add_dim()->set_dim_value(1);
  type->mutable_shape()->add_dim()->set_dim_value(4);
  std::string value = "x";
  for (int n = 0; n < relus; ++n) {
    auto* node = graph->add_node();
    node->set_op_type("Relu");
    node->add_input(value);
    value = "v" + std::to_string(n);
    node->add_output(value);
  }
  graph->add_output()->set_name(value);
  return model.SerializeAsString();
}

}  // namespace

TEST_CASE("An ONNX graph of more than a million nodes is refused before it is read further") {
  REQUIRE_THROWS_WITH(ipusim::models::import_onnx(relu_chain_bytes(1'000'001), "chain.onnx"),
                      "chain.onnx: the graph has 1,000,001 nodes, more than the 1,000,000 ipusim "
                      "imports: its config, a layer a node, would pass the 64 MiB ipusim reads");
}
