#include "models/import/onnx_import.hpp"

#include <onnx/onnx_pb.h>

#include <charconv>
#include <cstdlib>
#include <filesystem>

#include "models/import/onnx_converter.hpp"
#include "models/import/onnx_normalize.hpp"
#include "models/import/onnx_tensors.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {
namespace onnx_detail {

std::int64_t int_attribute(const onnx::NodeProto& node, const std::string& name,
                           std::int64_t fallback) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name)
      return a.i();
  }
  return fallback;
}

std::vector<std::int64_t> ints_attribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name)
      return {a.ints().begin(), a.ints().end()};
  }
  return {};
}

std::string string_attribute(const onnx::NodeProto& node, const std::string& name,
                             const std::string& fallback) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name)
      return a.s();
  }
  return fallback;
}

double decimal(float value) {
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, value).ptr;
  return std::strtod(std::string(text, end).c_str(), nullptr);
}

float float_attribute(const onnx::NodeProto& node, const std::string& name, float fallback) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name)
      return a.f();
  }
  return fallback;
}

std::string sanitized(std::string id) {
  for (std::size_t i = 0; i < id.size(); ++i) {
    const char c = id[i];
    const bool dot = c == '.' && i > 0 && id[i - 1] != '.';  // never "..", a path's parent
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && !dot)
      id[i] = '_';
  }
  return id;
}

bool is_constant_of(const Tensor& t, std::int64_t rows, std::int64_t width) {
  return t.shape() == Shape{rows, width} || t.shape() == Shape{1, rows, width};
}

OnnxConverter::OnnxConverter(const onnx::GraphProto& graph, const OnnxNormalized& normalized,
                             const std::string& path, const OnnxImportOptions& options,
                             OnnxImport& out)
    : graph_(graph),
      path_(path),
      out_(out),
      index_(graph, normalized.shapes),
      opset_(normalized.opset),
      verbose_(options.verbose) {}

void OnnxConverter::convert() {
  find_scopes();
  add_input();
  find_patterns();
  for (int n = 0; n < graph_.node_size(); ++n) {
    if (const auto a = attention_at_.find(n); a != attention_at_.end()) {
      attention(a->second);
      carry_layout(a->second.input, a->second.output);
    } else if (const auto g = gelu_at_.find(n); g != gelu_at_.end()) {
      activation(g->second, g->second.tanh ? "gelu_tanh" : "gelu", graph_.node(n));
      carry_layout(g->second.input, g->second.output);
    } else if (const auto l = layer_norm_at_.find(n); l != layer_norm_at_.end()) {
      layer_norm_pattern(l->second);
      carry_layout(l->second.input, l->second.output);
    } else if (!skipped_.contains(n)) {
      convert_node(n);
    }
  }
  if (!problems_.empty())
    throw core::ConfigError(path_, "", refusal());
  if (!softmax_end_ && !ends_in_logits()) {
    throw core::ConfigError(path_, "",
                            "the graph ends in neither a Softmax nor logits (a Gemm or MatMul "
                            "without an activation, or a vector of classes a sample), so ipusim "
                            "has no loss to train it with");
  }
  push_layer({{"id", unique_id("loss")}, {"type", "softmax_cross_entropy"}});
  out_.model["layers"] = std::move(layers_);  // the last use: moved, not copied
}

void OnnxConverter::add_input() {
  for (const auto& input : graph_.input()) {
    if (index_.is_initializer(input.name()))
      continue;
    Shape shape;
    for (const auto& dim : input.type().tensor_type().shape().dim())
      shape.push_back(dim.has_dim_value() ? dim.dim_value() : 1);
    if (shape.size() < 2)
      throw core::ConfigError(path_, "", "input '" + input.name() + "' has no batch axis");
    shape.erase(shape.begin());
    check_sample_shape(input.name(), shape);
    const bool image = shape.size() == 3;
    out_.model["input"] = {{"shape", image ? Shape{shape[1], shape[2], shape[0]} : shape}};
    push_layer({{"id", "input"}, {"type", "input"}});
    values_[input.name()] = {"input", shape, image};
    return;
  }
  throw core::ConfigError(path_, "", "the graph has no input besides its initializers");
}

// A sample's shape as the graph declares it: dimensions from 1 up, 2^30 elements at most (a
// larger one is no model ipusim simulates, and its sizes would overflow).
void OnnxConverter::check_sample_shape(const std::string& name, const Shape& shape) const {
  std::int64_t elements = 1;
  for (const std::int64_t d : shape) {
    if (d < 1 || elements > (std::int64_t{1} << 30) / d)
      throw core::ConfigError(path_, "",
                              "input '" + name + "' has shape " + shape_text(shape) +
                                  " per sample: expected dimensions of 1 or more and at most "
                                  "2^30 elements");
    elements *= d;
  }
}

// Attention blocks and Erf GELUs become one layer each, emitted at their first node.
void OnnxConverter::find_patterns() {
  for (const auto& node : graph_.node()) {
    const int n = index_.index_of(node);
    if (node.op_type() == "Softmax") {
      std::string why;
      if (auto block = match_any_attention(node, why)) {
        claim(block->nodes);
        attention_at_.emplace(*block->nodes.begin(), std::move(*block));
      } else if (!why.empty()) {
        attention_why_[n] = why;
      }
    } else if (node.op_type() == "ReduceMean") {
      if (auto norm = match_layer_norm(index_, node)) {
        claim(norm->nodes);
        layer_norm_at_.emplace(*norm->nodes.begin(), std::move(*norm));
      }
    } else if (node.op_type() == "Tanh") {
      if (auto gelu = match_gelu_tanh(index_, node)) {
        claim(gelu->nodes);
        gelu_at_.emplace(*gelu->nodes.begin(), std::move(*gelu));
      }
    } else if (node.op_type() == "InstanceNormalization") {
      find_group_norm(node);
    } else if (node.op_type() == "Erf") {
      if (auto gelu = match_gelu(index_, node)) {
        claim(gelu->nodes);
        gelu_at_.emplace(*gelu->nodes.begin(), std::move(*gelu));
      }
    }
  }
}

// Attention in any layout first (PyTorch's nn.MultiheadAttention); when that fails, the written
// out form, whose reasons name the usual ways a hand-written block differs.
std::optional<AttentionPattern> OnnxConverter::match_any_attention(const onnx::NodeProto& softmax,
                                                                   std::string& why) const {
  std::string layout_why;
  const OnnxShapeOf shape_of = [this](const std::string& t) { return index_.shape(t); };
  if (auto block = match_layout_attention(index_, softmax, shape_of, layout_why))
    return block;
  auto block = match_attention(index_, softmax, why);
  if (!block && why.empty())
    why = layout_why;
  return block;
}

void OnnxConverter::claim(const std::set<int>& nodes) {
  for (auto n = std::next(nodes.begin()); n != nodes.end(); ++n)
    skipped_.insert(*n);
}

const std::map<std::string, OnnxConverter::Handler>& OnnxConverter::handlers() {
  static const std::map<std::string, Handler> table = {
      {"Gemm", &OnnxConverter::gemm},
      {"MatMul", &OnnxConverter::matmul},
      {"Conv", &OnnxConverter::conv},
      {"ConvTranspose", &OnnxConverter::conv_transpose},
      {"Clip", &OnnxConverter::clip},
      {"HardSigmoid", &OnnxConverter::hard_sigmoid},
      {"HardSwish", &OnnxConverter::hard_swish},
      {"MaxPool", &OnnxConverter::pool},
      {"AveragePool", &OnnxConverter::pool},
      {"Pad", &OnnxConverter::pad},
      {"GlobalAveragePool", &OnnxConverter::global_average_pool},
      {"Relu", &OnnxConverter::named_activation},
      {"Tanh", &OnnxConverter::named_activation},
      {"Gelu", &OnnxConverter::named_activation},
      {"Flatten", &OnnxConverter::flatten},
      {"Reshape", &OnnxConverter::flatten},
      {"Dropout", &OnnxConverter::dropout},
      {"Softmax", &OnnxConverter::softmax},
      {"Gather", &OnnxConverter::gather},
      {"Add", &OnnxConverter::add},
      {"Mul", &OnnxConverter::mul},
      {"Sigmoid", &OnnxConverter::sigmoid},
      {"Split", &OnnxConverter::split},
      {"Concat", &OnnxConverter::concat},
      {"ReduceMean", &OnnxConverter::reduce_mean},
      {"Expand", &OnnxConverter::expand},
      {"Transpose", &OnnxConverter::transpose},
      {"LayerNormalization", &OnnxConverter::layer_norm},
      {"BatchNormalization", &OnnxConverter::batch_norm},
      {"InstanceNormalization", &OnnxConverter::instance_norm},
  };
  return table;
}

void OnnxConverter::convert_node(int n) {
  const auto& node = graph_.node(n);
  const std::string& op = node.op_type();
  if (op == "Constant")
    return;  // read through the index where it is used
  const auto handler = handlers().find(op);
  // An operator without a layer is named as such, whatever its input's layout: an LSTM reads
  // [sequence, batch, ...] however the model was written, so batch_first is no advice for it.
  if (handler == handlers().end())
    return problem(node, no_layer_reason(op));
  const bool sequence_first =
      std::any_of(node.input().begin(), node.input().end(),
                  [&](const std::string& t) { return sequence_first_.contains(t); });
  if (sequence_first && op != "Transpose" && !per_position(op))
    return problem(node, "a " + op +
                             " of a [sequence, batch, ...] value (batch_first=False), whose axes "
                             "ipusim reads batch first: export the model with batch_first=True");
  written_.clear();
  (this->*handler->second)(node);
  if (sequence_first && op != "Transpose") {
    // The node's outputs, and those of the nodes its layer took in (a MatMul's bias Add).
    written_.insert(written_.end(), node.output().begin(), node.output().end());
    sequence_first_.insert(written_.begin(), written_.end());
  }
}

// Operators that act on each position alone, whatever order the batch and sequence axes are in.
bool OnnxConverter::per_position(const std::string& op) {
  static const std::set<std::string> ops = {
      "Add", "Relu", "Tanh", "Gelu", "Dropout", "MatMul", "LayerNormalization"};
  return ops.contains(op);
}

// `output` holds its value [sequence, batch, ...] when `input` does.
void OnnxConverter::carry_layout(const std::string& input, const std::string& output) {
  if (sequence_first_.contains(input))
    sequence_first_.insert(output);
}

// Transpose of a sequence's batch and sequence axes: ipusim's layers hold one sample's
// [sequence, ...] either way, so the value is the same, its ONNX layout flipped.
void OnnxConverter::transpose(const onnx::NodeProto& node) {
  const Activation* in = value(node);
  if (!in)
    return;
  if (in->channels_first || in->onnx_shape.size() != 2 ||
      ints_attribute(node, "perm") != std::vector<std::int64_t>{1, 0, 2})
    return problem(node,
                   "only a Transpose of a sequence's batch and sequence axes (perm [1, 0, 2]), "
                   "as a batch_first=False model writes it");
  values_[node.output(0)] = *in;
  if (!sequence_first_.contains(node.input(0)))
    sequence_first_.insert(node.output(0));
}

// Records why `node` cannot be imported; the nodes fed by it then go unmentioned.
void OnnxConverter::problem(const onnx::NodeProto& node, const std::string& why) {
  problems_.push_back({&node, why});
  fail_outputs(node);
}

void OnnxConverter::fail_outputs(const onnx::NodeProto& node) {
  for (const auto& output : node.output())
    failed_.insert(output);
}

const onnx::TensorProto* OnnxConverter::initializer(const onnx::NodeProto& node, int input) const {
  return node.input_size() <= input ? nullptr : index_.constant(node.input(input));
}

// The activation `tensor` holds, or null: silently when it comes from a node that already
// failed, with a problem for `node` when it comes from nothing imported.
const Activation* OnnxConverter::value(const std::string& tensor, const onnx::NodeProto& node) {
  const auto found = values_.find(tensor);
  if (found != values_.end())
    return &found->second;
  if (failed_.contains(tensor))
    fail_outputs(node);
  else
    problem(node, "its input '" + tensor + "' comes from no imported node");
  return nullptr;
}

const Activation* OnnxConverter::value(const onnx::NodeProto& node) {
  return value(node.input(0), node);
}

std::string OnnxConverter::unique_id(const std::string& wanted) const {
  const std::string base = wanted.empty() ? "layer" : wanted;
  if (!layer_at_.contains(base))
    return base;
  // Layers are only ever added, so the suffixes below `next` stay taken.
  int& next = next_suffix_.try_emplace(base, 2).first->second;
  while (layer_at_.contains(base + "_" + std::to_string(next)))
    ++next;
  return base + "_" + std::to_string(next);
}

void OnnxConverter::push_layer(json layer) {
  layer_at_.emplace(layer.at("id").get<std::string>(), layers_.size());
  layers_.push_back(std::move(layer));
}

std::string OnnxConverter::id_of(const onnx::NodeProto& node) const {
  return unique_id(module_id(node.name(), node.op_type(), node.op_type()));
}

namespace {

// "/a/b.c/Op" as its parts "a", "b.c", "Op"; empty for a name that is not such a path.
std::vector<std::string> path_parts(const std::string& name) {
  std::vector<std::string> parts;
  if (name.size() < 2 || name.front() != '/')
    return parts;
  for (std::size_t start = 1; start <= name.size();) {
    const auto slash = std::min(name.find('/', start), name.size());
    if (slash == start)
      return {};
    parts.push_back(name.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

// A module path from its scopes as PyTorch names them: a child by its attribute, a Sequential's
// child by the Sequential's name and its index ("layer1", "layer1.0", "downsample",
// "downsample.0" -> "layer1.0.downsample.0").
std::string module_path(const std::vector<std::string>& scopes) {
  std::string path, last;
  for (const auto& scope : scopes) {
    if (!last.empty() && scope.rfind(last + ".", 0) == 0)
      path.erase(path.size() - last.size());
    else if (!path.empty())
      path += ".";
    path += scope;
    last = scope;
  }
  return path;
}

std::string lowercase(std::string text) {
  for (char& c : text)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

void OnnxConverter::find_scopes() {
  for (const auto& node : graph_.node()) {
    const auto parts = path_parts(node.name());
    for (std::size_t n = 1; n + 1 < parts.size(); ++n)
      inner_scopes_.insert(module_path({parts.begin(), parts.begin() + std::ptrdiff_t(n)}));
  }
}

std::string OnnxConverter::module_id(const std::string& name, const std::string& op_type,
                                     const std::string& fallback) const {
  auto parts = path_parts(name);
  if (parts.empty())
    return sanitized(name.empty() ? fallback : name);
  // A node's name ends in its operator ("Conv", "Add_1"); a pattern's (a common prefix) at a
  // module.
  const std::string& last = parts.back();
  const bool op_last =
      !op_type.empty() &&
      (last == op_type ||
       (last.rfind(op_type + "_", 0) == 0 && last.size() > op_type.size() + 1 &&
        std::all_of(last.begin() + std::ptrdiff_t(op_type.size()) + 1, last.end(),
                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })));
  std::string op = op_last ? parts.back() : "";
  if (op_last)
    parts.pop_back();
  std::string path = module_path(parts);
  if (path.empty())
    return sanitized(lowercase(op.empty() ? fallback : op));
  if (!op.empty() && inner_scopes_.contains(path))
    path += "." + lowercase(op);
  return sanitized(path);
}

// Adds `layer` reading `inputs` (ipusim ids), its output held in `output`.
void OnnxConverter::add_layer(json layer, const std::string& output, Activation produced,
                              const std::vector<std::string>& inputs, std::vector<Tensor> weights) {
  produced.layer = layer.at("id").get<std::string>();
  if (inputs.size() != 1 || inputs.front() != layers_.back().at("id"))
    layer["inputs"] = inputs;
  if (!weights.empty())
    out_.weights.emplace_back(produced.layer, std::move(weights));
  push_layer(std::move(layer));
  values_[output] = std::move(produced);
  written_.push_back(output);
}

// `text` from the file as a JSON string; an error names `what` when it is not UTF-8 (protobuf
// leaves that to the writer, and the config is JSON).
std::string utf8(const std::string& text, const std::string& what, const std::string& path) {
  try {
    (void)json(text).dump();
  } catch (const json::type_error&) {
    throw core::ConfigError(path, "", what + " is not UTF-8 text");
  }
  return text;
}

// The graph's name, unless it is an exporter's placeholder (PyTorch's "torch_jit", "main_graph")
// or empty: then the file's, as a user names the model.
std::string model_name(const std::string& graph_name, const std::string& path) {
  if (!graph_name.empty() && graph_name != "torch_jit" && graph_name != "main_graph")
    return utf8(graph_name, "the graph's name", path);
  const std::string stem = std::filesystem::path(path).stem().string();
  return stem.empty() ? "onnx_model" : utf8(stem, "the file's name", path);
}

}  // namespace onnx_detail

OnnxImport import_onnx(std::string bytes, const std::string& path,
                       const OnnxImportOptions& options) {
  onnx::ModelProto model;
  const bool parsed = model.ParseFromString(bytes);
  std::string().swap(bytes);  // the model holds the weights now; the file's copy goes
  if (!parsed || !model.has_graph()) {
    throw core::ConfigError(path, "",
                            "not an ONNX model: the file does not parse as an onnx.ModelProto "
                            "with a graph");
  }
  OnnxImport out;
  out.producer = onnx_detail::utf8(
      model.producer_name() +
          (model.producer_version().empty() ? "" : " " + model.producer_version()),
      "the producer's name", path);
  out.model = {{"name", onnx_detail::model_name(model.graph().name(), path)}};
  // Declared sizes, names and attributes, before inference and folding read them; at the
  // default domain's opset (0 when the model imports none, which normalize_onnx refuses).
  std::int64_t opset = 0;
  for (const auto& entry : model.opset_import())
    if (entry.domain().empty() || entry.domain() == "ai.onnx")
      opset = entry.version();
  check_onnx_graph(model.graph(), opset, path);
  const OnnxNormalized normalized = normalize_onnx(model, path);
  onnx_detail::OnnxConverter(model.graph(), normalized, path, options, out).convert();
  for (const auto& init : model.graph().initializer()) {
    // Only float initializers are parameters (integer ones hold shapes); counts checked above.
    if (init.data_type() == onnx::TensorProto::FLOAT ||
        init.data_type() == onnx::TensorProto::DOUBLE)
      out.initializer_elements += element_count(Shape(init.dims().begin(), init.dims().end()));
  }
  out.aliased_initializer_elements = normalized.aliased_initializer_elements;
  out.initializer_elements += out.aliased_initializer_elements;
  return out;
}

}  // namespace ipusim::models
