// Peak memory and time of `ipusim import` against the ONNX file it reads, and of `validate` and
// `run --no-numeric` against a config just under the 64 MiB ipusim reads. Each command runs as
// a child whose peak resident set (getrusage's ru_maxrss of the child, its own children
// included) is printed beside the file's size:
//  - a stack of six nn.Linear(4096, 4096) and a Linear(4096, 10), as PyTorch exports them (Gemm
//    with transB, the weights as raw data), 403 MB;
//  - chains of 100,001, 500,001 and 900,001 nodes (Relu nodes and a Gemm), and one of 1,000,001
//    nodes, over the import's node limit;
//  - a config of a chain of 950,000 relu layers, written as import writes its configs (62 MB);
//  - causal masks folded from ConstantOfShape(-inf) and Trilu, of 4,096 positions (2^24
//    elements, the most constant folding creates in one tensor) and of 8,192 (refused).
//
//   build/tools/bench/import_bench [IPUSIM]   (run from the repository root; IPUSIM defaults to
//                                              build/tools/ipusim/ipusim)

#include <onnx/onnx_pb.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "child_usage.hpp"

namespace {

using ipusim::bench::run_child;
using ipusim::bench::Usage;

void report(const char* what, const std::string& path, const Usage& usage) {
  const double bytes = double(std::filesystem::file_size(path));
  const int code = WIFEXITED(usage.status) ? WEXITSTATUS(usage.status) : -1;
  std::printf("%-44s %7.1f MB: peak RSS %7.1f MB (%5.2fx the file) in %6.2f s, exit %d\n", what,
              bytes / 1e6, double(usage.peak_kb) / 1024, double(usage.peak_kb) * 1024 / bytes,
              usage.seconds, code);
  std::fflush(stdout);
}

onnx::ModelProto model_of(const std::string& name, std::int64_t width) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("import_bench");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(13);
  auto* graph = model.mutable_graph();
  graph->set_name(name);
  auto* input = graph->add_input();
  input->set_name("x");
  auto* type = input->mutable_type()->mutable_tensor_type();
  type->set_elem_type(onnx::TensorProto::FLOAT);
  type->mutable_shape()->add_dim()->set_dim_value(1);
  type->mutable_shape()->add_dim()->set_dim_value(width);
  return model;
}

// A float initializer of `dims` whose raw data are small values from a fixed sequence.
void add_initializer(onnx::GraphProto& graph, const std::string& name,
                     const std::vector<std::int64_t>& dims) {
  auto* t = graph.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  std::int64_t count = 1;
  for (const auto d : dims) {
    t->add_dims(d);
    count *= d;
  }
  std::string raw(std::size_t(count) * sizeof(float), '\0');
  unsigned state = 12345;
  for (std::int64_t i = 0; i < count; ++i) {
    state = state * 1103515245u + 12345u;
    const float value = float(int(state >> 16) % 2001 - 1000) * 1e-5f;
    std::memcpy(raw.data() + i * std::int64_t(sizeof(float)), &value, sizeof(float));
  }
  t->set_raw_data(std::move(raw));
}

// Gemm(x, w, b) with transB, writing `output`.
void add_gemm(onnx::GraphProto& graph, const std::string& input, const std::string& output,
              std::int64_t in, std::int64_t out, int n) {
  const std::string w = "w" + std::to_string(n), b = "b" + std::to_string(n);
  add_initializer(graph, w, {out, in});
  add_initializer(graph, b, {out});
  auto* node = graph.add_node();
  node->set_op_type("Gemm");
  node->set_name("/" + std::to_string(2 * n) + "/Gemm");
  node->add_input(input);
  node->add_input(w);
  node->add_input(b);
  node->add_output(output);
  auto* trans = node->add_attribute();
  trans->set_name("transB");
  trans->set_type(onnx::AttributeProto::INT);
  trans->set_i(1);
}

void add_output(onnx::GraphProto& graph, const std::string& name, std::int64_t width) {
  auto* output = graph.add_output();
  output->set_name(name);
  auto* type = output->mutable_type()->mutable_tensor_type();
  type->set_elem_type(onnx::TensorProto::FLOAT);
  type->mutable_shape()->add_dim()->set_dim_value(1);
  type->mutable_shape()->add_dim()->set_dim_value(width);
}

void save(const onnx::ModelProto& model, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  model.SerializeToOstream(&out);
}

void write_linear_stack(const std::string& path) {
  onnx::ModelProto model = model_of("linear_stack", 4096);
  auto& graph = *model.mutable_graph();
  std::string value = "x";
  for (int n = 0; n < 6; ++n) {
    add_gemm(graph, value, "h" + std::to_string(n), 4096, 4096, n);
    auto* relu = graph.add_node();
    relu->set_op_type("Relu");
    relu->add_input("h" + std::to_string(n));
    relu->add_output("r" + std::to_string(n));
    value = "r" + std::to_string(n);
  }
  add_gemm(graph, value, "y", 4096, 10, 6);
  add_output(graph, "y", 10);
  save(model, path);
}

// `relus` Relu nodes on a [1, 4] input, then a Gemm to 10 logits.
void write_relu_chain(const std::string& path, int relus) {
  onnx::ModelProto model = model_of("chain", 4);
  auto& graph = *model.mutable_graph();
  std::string value = "x";
  for (int n = 0; n < relus; ++n) {
    auto* relu = graph.add_node();
    relu->set_op_type("Relu");
    relu->set_name("relu_" + std::to_string(n));
    relu->add_input(value);
    value = "v" + std::to_string(n);
    relu->add_output(value);
  }
  add_gemm(graph, value, "y", 4, 10, 0);
  add_output(graph, "y", 10);
  save(model, path);
}

// An INT64 initializer holding `values`, a vector of them (a scalar when `scalar`).
void add_ints(onnx::GraphProto& graph, const std::string& name,
              const std::vector<std::int64_t>& values, bool scalar) {
  auto* t = graph.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  if (!scalar)
    t->add_dims(std::int64_t(values.size()));
  t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()),
                              values.size() * sizeof(std::int64_t)));
}

onnx::NodeProto& add_node(onnx::GraphProto& graph, const std::string& op,
                          const std::vector<std::string>& inputs, const std::string& output) {
  auto& node = *graph.add_node();
  node.set_op_type(op);
  node.set_name(output + "_node");
  for (const auto& input : inputs)
    node.add_input(input);
  node.add_output(output);
  return node;
}

// torch.triu(torch.full((side, side), float('-inf')), 1) as PyTorch exports it, added to an
// input: constant folding computes the mask, which the import then refuses outside attention.
void write_folded_mask(const std::string& path, std::int64_t side) {
  onnx::ModelProto model = model_of("folded_mask", side);
  auto& graph = *model.mutable_graph();
  add_ints(graph, "shape", {side, side}, false);
  add_ints(graph, "one", {1}, true);
  auto* value = add_node(graph, "ConstantOfShape", {"shape"}, "full").add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  value->mutable_t()->add_dims(1);
  value->mutable_t()->add_float_data(-std::numeric_limits<float>::infinity());
  add_node(graph, "Trilu", {"full", "one"}, "mask");
  add_node(graph, "Add", {"x", "mask"}, "y");
  auto* output = graph.add_output();
  output->set_name("y");
  output->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  save(model, path);
}

// A config of `relus` relu layers, laid out as import writes configs (two-space indents).
void write_relu_config(const std::string& path, int relus) {
  std::ofstream out(path);
  out << "{\n  \"description\": \"A chain of ReLUs.\",\n  \"model\": {\n    \"input\": {\n"
         "      \"shape\": [\n        4\n      ]\n    },\n    \"layers\": [\n"
         "      {\n        \"id\": \"input\",\n        \"type\": \"input\"\n      },\n";
  for (int n = 0; n < relus; ++n)
    out << "      {\n        \"id\": \"relu_" << n << "\",\n        \"type\": \"relu\"\n      },\n";
  out << "      {\n        \"bias\": true,\n        \"id\": \"fc\",\n        \"type\": \"dense\",\n"
         "        \"units\": 10\n      },\n      {\n        \"id\": \"loss\",\n"
         "        \"type\": \"softmax_cross_entropy\"\n      }\n    ]\n  },\n"
         "  \"pipeline\": {\n    \"gradient_accumulation_count\": 16,\n"
         "    \"micro_batch_size\": 1\n  }\n}\n";
}

}  // namespace

int main(int argc, char** argv) {
  const std::string ipusim = argc > 1 ? argv[1] : "build/tools/ipusim/ipusim";
  const std::string scratch = std::filesystem::temp_directory_path() / "ipusim_import_bench";
  std::filesystem::remove_all(scratch);
  std::filesystem::create_directories(scratch);
  const std::string linear = scratch + "/linear_stack.onnx";
  write_linear_stack(linear);
  report("import, 6 x Linear(4096, 4096) + Linear(4096, 10)", linear,
         run_child({ipusim, "import", linear, "-o", scratch + "/linear.json"}));
  std::filesystem::remove_all(scratch + "/linear.weights");
  std::filesystem::remove(linear);
  for (const int relus : {100'000, 500'000, 900'000, 1'000'000}) {
    const std::string chain = scratch + "/relu_chain.onnx";
    write_relu_chain(chain, relus);
    const std::string what = "import, " + std::to_string(relus + 1) + " nodes (Relu chain)";
    report(what.c_str(), chain,
           run_child({ipusim, "import", chain, "-o", scratch + "/chain.json"}));
  }
  for (const std::int64_t side : {4096, 8192}) {
    const std::string mask = scratch + "/folded_mask.onnx";
    write_folded_mask(mask, side);
    const std::string what =
        "import, a folded " + std::to_string(side) + "x" + std::to_string(side) + " causal mask";
    report(what.c_str(), mask, run_child({ipusim, "import", mask, "-o", scratch + "/mask.json"}));
  }
  const std::string config = scratch + "/relu_config.json";
  write_relu_config(config, 950'000);
  report("validate, 950,003 layers", config, run_child({ipusim, "validate", config}));
  report("run --no-numeric, 950,003 layers", config,
         run_child({ipusim, "run", config, "--no-numeric", "--quiet"}));
  std::filesystem::remove_all(scratch);
  return 0;
}
