#include "models/import/onnx_normalize.hpp"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "models/import/onnx_fold.hpp"
#include "models/import/onnx_infer.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {
namespace {

using onnx::GraphProto;
using onnx::NodeProto;
using onnx::TensorProto;
using Dims = std::vector<std::int64_t>;

// Rounds of shape inference then folding before normalisation stops: each round folds what the
// shapes of the last allow (a Reshape's target, then the Shape of its output...); PyTorch's
// exports settle in three. The bound keeps a crafted chain from costing one round per node.
constexpr int kMaxRounds = 16;

std::string named(const NodeProto& node) {
  return "node '" + node.name() + "' (" + node.op_type() + ")";
}

bool is_float_initializer_type(std::int32_t type) {
  return type == TensorProto::FLOAT || type == TensorProto::DOUBLE ||
         type == TensorProto::FLOAT16 || type == TensorProto::BFLOAT16;
}

std::int64_t check_opset(const onnx::ModelProto& model, const std::string& path) {
  std::int64_t opset = 0;
  for (const auto& entry : model.opset_import()) {
    if (!entry.domain().empty() && entry.domain() != "ai.onnx")
      continue;
    // onnx.checker refuses a domain imported twice: which version holds would be a guess.
    if (opset != 0)
      throw core::ConfigError(path, "",
                              "the model imports the default ONNX operator set twice (opsets " +
                                  std::to_string(opset) + " and " +
                                  std::to_string(entry.version()) +
                                  "); a domain is imported once, as onnx.checker requires");
    opset = entry.version();
  }
  const std::string how =
      "ipusim reads ONNX opsets " + std::to_string(kFirstOnnxOpset) + " to " +
      std::to_string(kLastOnnxOpset) +
      ": export the model again with torch.onnx.export(..., opset_version=17), or convert it "
      "with onnx.version_converter.convert_version(model, 17)";
  if (opset == 0)
    throw core::ConfigError(path, "", "the model imports no ONNX operator set; " + how);
  if (opset < kFirstOnnxOpset || opset > kLastOnnxOpset)
    throw core::ConfigError(path, "",
                            "the model uses ONNX opset " + std::to_string(opset) + "; " + how);
  return opset;
}

// A symbolic or missing batch becomes 1. Any value would do: ipusim's layers are per sample and
// the config names the micro-batch, so the batch only has to be a number for shape inference
// and folding to reach static shapes (a Reshape to [batch, -1] then folds to [1, -1]).
void fix_batch(GraphProto& graph) {
  std::unordered_set<std::string> initializers;
  for (const auto& init : graph.initializer())
    initializers.insert(init.name());
  for (auto& input : *graph.mutable_input()) {
    auto* type = input.mutable_type();
    if (initializers.contains(input.name()) || !type->has_tensor_type() ||
        !type->tensor_type().has_shape() || type->tensor_type().shape().dim_size() == 0)
      continue;
    auto* batch = type->mutable_tensor_type()->mutable_shape()->mutable_dim(0);
    if (!batch->has_dim_value())
      batch->set_dim_value(1);
  }
}

// Who reads each value: (node, input slot) pairs, kept current as Identities go.
using Readers = std::unordered_map<std::string, std::vector<std::pair<int, int>>>;

Readers readers_of(const GraphProto& graph) {
  Readers readers;
  for (int n = 0; n < graph.node_size(); ++n)
    for (int i = 0; i < graph.node(n).input_size(); ++i)
      readers[graph.node(n).input(i)].emplace_back(n, i);
  return readers;
}

// Every reader of `from` reads `to` instead.
void redirect(GraphProto& graph, Readers& readers, const std::string& from, const std::string& to) {
  auto moved = std::move(readers[from]);
  readers.erase(from);
  for (const auto& [n, i] : moved)
    graph.mutable_node(n)->set_input(i, to);
  auto& target = readers[to];
  target.insert(target.end(), moved.begin(), moved.end());
}

// Drops the nodes `drop` marks, keeping the others in order.
void drop_nodes(GraphProto& graph, const std::vector<bool>& drop) {
  google::protobuf::RepeatedPtrField<NodeProto> kept;
  for (int n = 0; n < graph.node_size(); ++n)
    if (!drop[std::size_t(n)])
      *kept.Add() = std::move(*graph.mutable_node(n));
  graph.mutable_node()->Swap(&kept);
}

// The elements a float initializer adds to the source's parameter count by being read under
// more than one name: itself and each Identity alias (through chains) that a node other than an
// Identity, or the graph's outputs, read. One read under k names is k parameters in PyTorch,
// stored once; k - 1 copies are counted here.
std::int64_t aliased_elements(const GraphProto& graph) {
  std::unordered_map<std::string, const TensorProto*> floats;
  for (const auto& init : graph.initializer())
    if (is_float_initializer_type(init.data_type()))
      floats.emplace(init.name(), &init);
  std::unordered_map<std::string, std::string> root;  // alias -> the initializer it reads
  for (const auto& node : graph.node()) {
    if (node.op_type() != "Identity" || node.input_size() != 1 || node.output_size() != 1)
      continue;
    const auto up = root.find(node.input(0));
    if (up != root.end() || floats.contains(node.input(0)))
      root[node.output(0)] = up != root.end() ? up->second : node.input(0);
  }
  std::unordered_set<std::string> read;  // by a layer or the outside
  for (const auto& node : graph.node())
    if (node.op_type() != "Identity")
      read.insert(node.input().begin(), node.input().end());
  for (const auto& output : graph.output())
    read.insert(output.name());
  std::unordered_map<std::string, std::int64_t> names;  // by initializer: names read
  for (const auto& [name, init] : floats)
    names[name] += read.contains(name);
  for (const auto& [alias, init] : root)
    names[init] += read.contains(alias);
  std::int64_t aliased = 0;
  for (const auto& [name, count] : names) {
    std::int64_t elements = 1;  // dimensions checked by check_onnx_graph
    for (const std::int64_t d : floats.at(name)->dims())
      elements *= d;
    aliased += count > 1 ? (count - 1) * elements : 0;
  }
  return aliased;
}

// Removes every Identity: its readers read its input.
void remove_identities(GraphProto& graph, const std::string& path) {
  std::unordered_map<std::string, int> producers, outputs;
  for (int n = 0; n < graph.node_size(); ++n)
    for (const auto& out : graph.node(n).output())
      producers[out] = n;
  for (int o = 0; o < graph.output_size(); ++o)
    outputs[graph.output(o).name()] = o;
  Readers readers = readers_of(graph);
  std::vector<bool> drop(std::size_t(graph.node_size()), false);
  for (int n = 0; n < graph.node_size(); ++n) {
    const NodeProto& node = graph.node(n);
    if (node.op_type() != "Identity")
      continue;
    if (node.input_size() != 1 || node.output_size() != 1 || node.input(0).empty())
      throw core::ConfigError(path, "", named(node) + ": expected 1 input and 1 output");
    const std::string from = node.input(0), to = node.output(0);
    if (from == to)
      throw core::ConfigError(path, "",
                              named(node) + " reads its own output '" + to + "' (a cycle)");
    drop[std::size_t(n)] = true;
    const auto output = outputs.find(to);
    const auto producer = producers.find(from);
    if (output == outputs.end()) {
      redirect(graph, readers, to, from);
    } else if (producer != producers.end() && !outputs.contains(from)) {
      // The graph output keeps its name: the value it copies is written under it instead.
      auto* writer = graph.mutable_node(producer->second);
      for (int o = 0; o < writer->output_size(); ++o)
        if (writer->output(o) == from)
          writer->set_output(o, to);
      redirect(graph, readers, from, to);
      producers[to] = producer->second;
    } else {  // an input, initializer or another output copied out: the output names it
      graph.mutable_output(output->second)->set_name(from);
      redirect(graph, readers, to, from);
    }
  }
  drop_nodes(graph, drop);
}

// Every node reads values written before it, once identities are gone (check_onnx_graph has
// refused a value written twice in the file).
void check_order(const GraphProto& graph, const std::string& path) {
  std::unordered_set<std::string> written;
  for (const auto& input : graph.input())
    written.insert(input.name());
  for (const auto& init : graph.initializer())
    written.insert(init.name());
  std::unordered_map<std::string, const NodeProto*> later;
  for (const auto& node : graph.node())
    for (const auto& out : node.output())
      later.emplace(out, &node);
  for (const auto& node : graph.node()) {
    for (const auto& in : node.input()) {
      if (in.empty() || written.contains(in))
        continue;
      const auto writer = later.find(in);
      throw core::ConfigError(
          path, "",
          writer == later.end()
              ? named(node) + " reads '" + in +
                    "', which no node, graph input or initializer provides"
              : named(node) + " reads '" + in + "' before " + named(*writer->second) +
                    " writes it: expected nodes in topological order, without cycles");
    }
    written.insert(node.output().begin(), node.output().end());
  }
}

// Whether ONNX's inference of `node` could divide by zero: libonnx divides by strides,
// dilations, kernel sizes and block sizes unchecked (a SIGFPE, not an exception), so a node
// with one below 1 is left out of inference; the importer names it.
bool unsafe_to_infer(const NodeProto& node) {
  for (const auto& a : node.attribute()) {
    if (a.name() != "strides" && a.name() != "dilations" && a.name() != "kernel_shape" &&
        a.name() != "blocksize")
      continue;
    if (a.name() == "blocksize"
            ? a.i() < 1
            : std::any_of(a.ints().begin(), a.ints().end(), [](std::int64_t v) { return v < 1; }))
      return true;
  }
  return false;
}

void infer_shapes(onnx::ModelProto& model, const std::string& path) {
  GraphProto& graph = *model.mutable_graph();
  graph.clear_value_info();  // stale after folding; inference writes it anew
  // Declared output shapes are what the exporter traced; inference derives them from the
  // inputs, and a declaration that disagrees is no reason to refuse the graph.
  for (auto& output : *graph.mutable_output())
    if (output.type().has_tensor_type())
      output.mutable_type()->mutable_tensor_type()->clear_shape();
  google::protobuf::RepeatedPtrField<NodeProto> all;
  all.Swap(graph.mutable_node());
  std::vector<bool> held(std::size_t(all.size()));
  for (int n = 0; n < all.size(); ++n)
    if (!(held[std::size_t(n)] = unsafe_to_infer(all.Get(n))))
      graph.add_node()->Swap(all.Mutable(n));
  const std::string failure = infer_shapes_isolated(model);
  for (int n = 0, inferred = 0; n < all.size(); ++n)  // the nodes back, in their order
    if (!held[std::size_t(n)])
      all.Mutable(n)->Swap(graph.mutable_node(inferred++));
  graph.mutable_node()->Swap(&all);
  if (!failure.empty())
    throw core::ConfigError(path, "", "ONNX shape inference refuses the graph: " + failure);
}

std::map<std::string, Dims> static_shapes(const GraphProto& graph) {
  std::map<std::string, Dims> shapes;
  const auto add = [&](const onnx::ValueInfoProto& info) {
    if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape())
      return;
    Dims dims;
    for (const auto& d : info.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value() || d.dim_value() < 0)
        return;
      dims.push_back(d.dim_value());
    }
    shapes[info.name()] = dims;
  };
  for (const auto& v : graph.input())
    add(v);
  for (const auto& v : graph.value_info())
    add(v);
  for (const auto& v : graph.output())
    add(v);
  for (const auto& init : graph.initializer())
    shapes[init.name()] = Dims(init.dims().begin(), init.dims().end());
  for (const auto& node : graph.node())
    for (const auto& a : node.attribute())
      if (node.op_type() == "Constant" && a.name() == "value" && a.has_t() &&
          node.output_size() == 1)
        shapes[node.output(0)] = Dims(a.t().dims().begin(), a.t().dims().end());
  return shapes;
}

// A Constant node's value: `value`, or the scalar and list forms opset 12 added.
std::optional<onnx_fold::Constant> constant_value(const NodeProto& node) {
  for (const auto& a : node.attribute()) {
    if (a.name() == "value" && a.has_t())
      return onnx_fold::read_constant(a.t());
    if (a.name() == "value_int")
      return onnx_fold::Constant{TensorProto::INT64, {}, {a.i()}, {}};
    if (a.name() == "value_ints")
      return onnx_fold::Constant{
          TensorProto::INT64, {a.ints_size()}, {a.ints().begin(), a.ints().end()}, {}};
    if (a.name() == "value_float")
      return onnx_fold::Constant{TensorProto::FLOAT, {}, {}, {a.f()}};
    if (a.name() == "value_floats")
      return onnx_fold::Constant{
          TensorProto::FLOAT, {a.floats_size()}, {}, {a.floats().begin(), a.floats().end()}};
  }
  return std::nullopt;
}

void make_constant(NodeProto& node, const onnx_fold::Constant& value) {
  const std::string output = node.output(0);
  node.clear_input();
  node.clear_attribute();
  node.clear_domain();
  node.set_op_type("Constant");
  auto* a = node.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = onnx_fold::tensor_of(value, output);
}

// Constants folding may read: initializers other than float ones (a layer's weights) and
// Constant nodes' values, each decoded when first asked for, so a large constant nothing folds
// from is not decoded again in every round.
class ConstantValues {
 public:
  explicit ConstantValues(const GraphProto& graph) {
    for (const auto& init : graph.initializer())
      (is_float_initializer_type(init.data_type()) ? weights_ : sources_)[init.name()] = &init;
  }
  bool is_weight(const std::string& name) const { return weights_.contains(name); }
  void set(const std::string& name, onnx_fold::Constant value) {
    values_.insert_or_assign(name, std::move(value));
  }
  void define(const std::string& name, const NodeProto& constant) {
    values_.erase(name);
    constant_nodes_.insert_or_assign(name, &constant);
  }
  const onnx_fold::Constant* get(const std::string& name) {
    if (const auto found = values_.find(name); found != values_.end())
      return &found->second;
    auto value = decode(name);
    return value ? &values_.emplace(name, std::move(*value)).first->second : nullptr;
  }

 private:
  std::optional<onnx_fold::Constant> decode(const std::string& name) const {
    if (const auto node = constant_nodes_.find(name); node != constant_nodes_.end())
      return constant_value(*node->second);
    const auto source = sources_.find(name);
    return source == sources_.end() ? std::nullopt : onnx_fold::read_constant(*source->second);
  }

  std::unordered_map<std::string, const TensorProto*> weights_, sources_;
  std::unordered_map<std::string, const NodeProto*> constant_nodes_;
  std::unordered_map<std::string, onnx_fold::Constant> values_;
};

// The node's value when it can be folded now, or nullopt.
std::optional<onnx_fold::Constant> try_fold(const NodeProto& node, ConstantValues& values,
                                            const std::map<std::string, Dims>& shapes,
                                            onnx_fold::FoldBudget& budget) {
  if (!onnx_fold::is_foldable_op(node.op_type()) || node.output_size() != 1 ||
      !node.domain().empty())
    return std::nullopt;
  if (node.op_type() == "Shape") {
    const auto shape = node.input_size() == 1 ? shapes.find(node.input(0)) : shapes.end();
    if (shape == shapes.end())
      return std::nullopt;
    return onnx_fold::fold_shape(node, shape->second);
  }
  std::vector<const onnx_fold::Constant*> inputs;
  for (const auto& in : node.input()) {
    if (in.empty()) {
      inputs.push_back(nullptr);
      continue;
    }
    const onnx_fold::Constant* value = values.is_weight(in) ? nullptr : values.get(in);
    if (value == nullptr)
      return std::nullopt;
    inputs.push_back(value);
  }
  return onnx_fold::fold_node(node, inputs, budget);
}

// One pass in graph order: returns how many nodes became constants.
int fold_pass(GraphProto& graph, const std::map<std::string, Dims>& shapes,
              onnx_fold::FoldBudget& budget) {
  ConstantValues values(graph);
  int folded = 0;
  for (auto& node : *graph.mutable_node()) {
    if (node.op_type() == "Constant" && node.output_size() == 1) {
      values.define(node.output(0), node);
      continue;
    }
    if (auto value = try_fold(node, values, shapes, budget)) {
      make_constant(node, *value);
      values.set(node.output(0), std::move(*value));
      ++folded;
    }
  }
  return folded;
}

// Drops Constant nodes and non-float initializers nothing reads any more (the Shape chains
// folding replaced); float initializers stay, as the source's parameters.
void drop_unread(GraphProto& graph) {
  std::unordered_set<std::string> read;
  for (const auto& node : graph.node())
    read.insert(node.input().begin(), node.input().end());
  for (const auto& output : graph.output())
    read.insert(output.name());
  std::vector<bool> drop(std::size_t(graph.node_size()), false);
  for (int n = 0; n < graph.node_size(); ++n) {
    const NodeProto& node = graph.node(n);
    drop[std::size_t(n)] =
        node.op_type() == "Constant" && node.output_size() == 1 && !read.contains(node.output(0));
  }
  drop_nodes(graph, drop);
  google::protobuf::RepeatedPtrField<TensorProto> kept;
  for (auto& init : *graph.mutable_initializer())
    if (is_float_initializer_type(init.data_type()) || read.contains(init.name()))
      *kept.Add() = std::move(init);
  graph.mutable_initializer()->Swap(&kept);
}

}  // namespace

OnnxNormalized normalize_onnx(onnx::ModelProto& model, const std::string& path) {
  OnnxNormalized out;
  out.opset = check_opset(model, path);
  GraphProto& graph = *model.mutable_graph();
  fix_batch(graph);
  out.aliased_initializer_elements = aliased_elements(graph);
  remove_identities(graph, path);
  check_order(graph, path);
  onnx_fold::FoldBudget budget(path);
  for (int round = 0; round < kMaxRounds; ++round) {
    infer_shapes(model, path);
    const int folded = fold_pass(graph, static_shapes(graph), budget);
    out.folded_nodes += folded;
    if (folded == 0)
      break;
    if (round + 1 == kMaxRounds)
      infer_shapes(model, path);
  }
  drop_unread(graph);
  out.shapes = static_shapes(graph);
  return out;
}

}  // namespace ipusim::models
