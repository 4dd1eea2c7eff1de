#include "models/import/onnx_tensors.hpp"

#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include <onnx/defs/schema.h>

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/core/suggest.hpp"

namespace ipusim::models {
namespace {

// A file of at most 1 GB (import's limit) holds no more elements than this, each taking a byte
// at least; a larger declared shape is a lie that would otherwise be allocated.
constexpr std::int64_t kMaxInitializerElements = std::int64_t{1} << 30;

// The fewest inputs each operator ipusim reads takes (the ones the importer and its patterns
// look at); other operators are refused by name, whatever their inputs.
int fewest_inputs(const std::string& op) {
  static const std::map<std::string, int> table = {
      {"Gemm", 2},
      {"MatMul", 2},
      {"Conv", 2},
      {"ConvTranspose", 2},
      {"Add", 2},
      {"Mul", 2},
      {"Div", 2},
      {"Reshape", 2},
      {"Gather", 2},
      {"LayerNormalization", 2},
      {"BatchNormalization", 5},
      {"InstanceNormalization", 3},
      {"MaxPool", 1},
      {"GlobalAveragePool", 1},
      {"Relu", 1},
      {"Tanh", 1},
      {"Sigmoid", 1},
      {"Clip", 1},
      {"HardSigmoid", 1},
      {"HardSwish", 1},
      {"Split", 1},
      {"Gelu", 1},
      {"Erf", 1},
      {"Flatten", 1},
      {"Dropout", 1},
      {"Softmax", 1},
      {"Concat", 1},
      {"Transpose", 1},
  };
  const auto found = table.find(op);
  return found == table.end() ? 0 : found->second;
}

const std::set<std::string> kFloatAttributesRead = {"Gemm",
                                                    "Dropout",
                                                    "LayerNormalization",
                                                    "HardSigmoid",
                                                    "BatchNormalization",
                                                    "InstanceNormalization"};

std::string node_text(const onnx::NodeProto& node) {
  return "node '" + node.name() + "' (" + node.op_type() + ")";
}

// The element count of a tensor's declared shape, checked to be one a file can hold.
std::int64_t declared_elements(const onnx::TensorProto& t, const std::string& what,
                               const std::string& path) {
  const Shape shape(t.dims().begin(), t.dims().end());
  std::int64_t count = 1;
  for (const std::int64_t d : shape) {
    if (d < 0)
      throw core::ConfigError(
          path, "",
          what + " has shape " + shape_text(shape) + ": expected dimensions of 0 or more");
    if (d != 0 && count > kMaxInitializerElements / d)
      throw core::ConfigError(path, "",
                              what + " has shape " + shape_text(shape) + ": expected at most " +
                                  std::to_string(kMaxInitializerElements) +
                                  " elements, as many as a file of at most 1 GB holds");
    count *= d;
  }
  return count;
}

// The values a tensor holds, or -1 when they cannot be counted: its raw bytes over its type's
// size, or its typed field, as ONNX's TensorProto stores them.
std::int64_t held_elements(const onnx::TensorProto& t) {
  using T = onnx::TensorProto;
  static const std::map<int, int> bytes = {
      {T::FLOAT, 4},  {T::UINT8, 1},  {T::INT8, 1},    {T::UINT16, 2},  {T::INT16, 2},
      {T::INT32, 4},  {T::INT64, 8},  {T::BOOL, 1},    {T::FLOAT16, 2}, {T::DOUBLE, 8},
      {T::UINT32, 4}, {T::UINT64, 8}, {T::BFLOAT16, 2}};
  const auto size = bytes.find(t.data_type());
  if (!t.raw_data().empty()) {
    if (size == bytes.end() || t.raw_data().size() % std::size_t(size->second) != 0)
      return -1;
    return std::int64_t(t.raw_data().size()) / size->second;
  }
  return t.float_data_size() + t.int32_data_size() + t.int64_data_size() + t.double_data_size() +
         t.uint64_data_size() + t.string_data_size();
}

// A tensor's declared size, checked to be one a file can hold and the number of values it
// holds: shape inference and folding read them (libonnx reads past an empty scalar).
void check_tensor(const onnx::TensorProto& t, const std::string& what, const std::string& path) {
  const std::int64_t declared = declared_elements(t, what, path);
  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    throw core::ConfigError(path, "",
                            what +
                                " keeps its values in an external file, which ipusim does "
                                "not read: save the model with its weights inside");
  if (held_elements(t) != declared)
    throw core::ConfigError(
        path, "",
        what + " holds " +
            (held_elements(t) < 0 ? std::string("values of another size than its type's")
                                  : std::to_string(held_elements(t)) + " values") +
            " for shape " + shape_text(Shape(t.dims().begin(), t.dims().end())));
}

// At most as many inputs as the operator's schema takes (its latest version's): a Softmax that
// also lists weights would otherwise import with them silently dropped.
void check_most_inputs(const onnx::NodeProto& node, const std::string& path) {
  const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(node.op_type(), node.domain());
  if (schema == nullptr || node.input_size() <= schema->max_input())
    return;
  throw core::ConfigError(path, "",
                          node_text(node) + ": expected at most " +
                              std::to_string(schema->max_input()) + " input(s), found " +
                              std::to_string(node.input_size()));
}

// ONNX lists nodes in topological order: each input is a graph input, an initializer or the
// output of a node before it (empty names are absent optional inputs). This also refuses a
// cycle, which no order satisfies.
void check_order(const onnx::GraphProto& graph, const std::string& path) {
  std::set<std::string> defined;
  for (const auto& input : graph.input())
    defined.insert(input.name());
  std::set<std::string> initializers;
  for (const auto& init : graph.initializer()) {
    if (!initializers.insert(init.name()).second)
      throw core::ConfigError(path, "",
                              "initializer '" + init.name() +
                                  "' is named twice: ONNX names each initializer once (which "
                                  "one a node reads would be a guess)");
    defined.insert(init.name());
  }
  for (const auto& node : graph.node()) {
    for (const auto& input : node.input()) {
      if (!input.empty() && !defined.contains(input))
        throw core::ConfigError(path, "",
                                node_text(node) + ": its input '" + input +
                                    "' is neither a graph input, an initializer nor the output "
                                    "of a node before it (ONNX lists nodes in topological order)");
    }
    for (const auto& output : node.output()) {
      if (!output.empty() && !defined.insert(output).second)
        throw core::ConfigError(path, "",
                                node_text(node) + ": its output '" + output +
                                    "' is already a graph input, an initializer or another "
                                    "node's output (ONNX writes each value once)");
    }
  }
}

// The attributes the operator's schema declares at the model's opset, with their types: a
// misspelt one ("strideG") would otherwise be ignored and its default taken.
void check_attributes(const onnx::NodeProto& node, std::int64_t opset, const std::string& path) {
  const onnx::OpSchema* schema =
      opset > 0 ? onnx::OpSchemaRegistry::Schema(node.op_type(), int(opset), node.domain())
                : onnx::OpSchemaRegistry::Schema(node.op_type(), node.domain());
  if (schema == nullptr)
    return;  // an operator ipusim does not know is refused by name later
  std::vector<std::string> names;
  for (const auto& [name, declared] : schema->attributes())
    names.push_back(name);
  for (const auto& a : node.attribute()) {
    const auto found = schema->attributes().find(a.name());
    if (found == schema->attributes().end())
      throw core::ConfigError(path, "",
                              node_text(node) + ": unknown attribute '" + a.name() + "' (" +
                                  node.op_type() + " takes " +
                                  (names.empty() ? std::string("none") : core::quoted_list(names)) +
                                  ")" + core::did_you_mean(a.name(), names));
    if (found->second.type != a.type())
      throw core::ConfigError(path, "",
                              node_text(node) + ": attribute '" + a.name() +
                                  "' is not of the type " + node.op_type() + " declares");
  }
}

// Gemm's transA and transB are 0 or 1: ONNX's reference takes any other value as an error,
// where a plain `!= 0` would read 2^62 as 1.
void check_flags(const onnx::NodeProto& node, const std::string& path) {
  if (node.op_type() != "Gemm")
    return;
  for (const auto& a : node.attribute()) {
    if ((a.name() == "transA" || a.name() == "transB") && a.i() != 0 && a.i() != 1)
      throw core::ConfigError(path, "",
                              node_text(node) + ": attribute '" + a.name() + "' is " +
                                  std::to_string(a.i()) + ": expected 0 or 1");
  }
}

void check_node(const onnx::NodeProto& node, const std::string& path) {
  const int inputs = fewest_inputs(node.op_type());
  if (node.input_size() < inputs)
    throw core::ConfigError(path, "",
                            node_text(node) + ": expected at least " + std::to_string(inputs) +
                                " input(s), found " + std::to_string(node.input_size()));
  check_most_inputs(node, path);
  if (node.output_size() < 1)
    throw core::ConfigError(path, "", node_text(node) + ": expected an output, found none");
  for (const auto& a : node.attribute()) {
    if (a.has_t())
      check_tensor(a.t(), node_text(node) + "'s tensor '" + a.name() + "'", path);
    // The float attributes ipusim copies into a config (epsilon, momentum, ratio, alpha, beta).
    if (a.type() == onnx::AttributeProto::FLOAT && !std::isfinite(a.f()) &&
        kFloatAttributesRead.contains(node.op_type()))
      throw core::ConfigError(path, "",
                              node_text(node) + ": attribute '" + a.name() + "' is " +
                                  std::to_string(a.f()) + ": expected a finite number");
  }
}

}  // namespace

void check_onnx_graph(const onnx::GraphProto& graph, std::int64_t opset, const std::string& path) {
  if (graph.node_size() > kMaxOnnxNodes)
    throw core::ConfigError(path, "",
                            "the graph has " + sim::with_commas(graph.node_size()) +
                                " nodes, more than the " + sim::with_commas(kMaxOnnxNodes) +
                                " ipusim imports: its config, a layer a node, would pass the "
                                "64 MiB ipusim reads");
  for (const auto& node : graph.node()) {
    check_node(node, path);
    check_attributes(node, opset, path);
    check_flags(node, path);
  }
  for (const auto& init : graph.initializer())
    check_tensor(init, "initializer '" + init.name() + "'", path);
  check_order(graph, path);
}

namespace {

// Decodes float32 initializer `t` into a tensor of `shape`, its element i going to place(i),
// each checked to be finite in the same pass (place is called for i = 0, 1, ... in turn): the
// values are read once, from float_data or the raw little-endian bytes, with no copy between
// the file's and the tensor's.
template <class Place>
Tensor decoded(const onnx::TensorProto& t, const std::string& path, Shape shape, Place place) {
  const std::string what = "initializer '" + t.name() + "'";
  if (t.data_type() != onnx::TensorProto::FLOAT)
    throw core::ConfigError(path, "", what + " is not float32");
  const auto count = static_cast<std::size_t>(declared_elements(t, what, path));
  const bool raw = t.float_data().empty() && count > 0;
  const std::size_t held =
      raw ? (t.raw_data().size() == count * sizeof(float) ? count : 0) : t.float_data().size();
  if (held != count)
    throw core::ConfigError(path, "",
                            what + " holds " + std::to_string(held) + " values for shape " +
                                shape_text(Shape(t.dims().begin(), t.dims().end())));
  Tensor out(std::move(shape));
  const char* bytes = t.raw_data().data();
  const float* typed = t.float_data().data();
  for (std::size_t i = 0; i < count; ++i) {
    float value;
    if (raw)
      std::memcpy(&value, bytes + i * sizeof(float), sizeof(float));
    else
      value = typed[i];
    if (!std::isfinite(value))
      throw core::ConfigError(path, "",
                              what + " holds " + std::to_string(value) + " at element " +
                                  std::to_string(i) + ": expected finite weights");
    out[std::int64_t(place(i))] = value;
  }
  return out;
}

}  // namespace

Tensor onnx_float_tensor(const onnx::TensorProto& t, const std::string& path) {
  return decoded(t, path, Shape(t.dims().begin(), t.dims().end()), [](std::size_t i) { return i; });
}

Tensor onnx_transposed_float_matrix(const onnx::TensorProto& t, const std::string& path) {
  IPUSIM_CHECK(t.dims_size() == 2);
  const auto rows = std::size_t(t.dims(0)), cols = std::size_t(t.dims(1));
  // Element (r, c) of the source goes to (c, r), the source read row by row.
  return decoded(t, path, Shape{t.dims(1), t.dims(0)},
                 [rows, cols, r = std::size_t{0}, c = std::size_t{0}](std::size_t) mutable {
                   const std::size_t at = c * rows + r;
                   if (++c == cols) {
                     c = 0;
                     ++r;
                   }
                   return at;
                 });
}

Tensor onnx_conv_kernel_tensor(const onnx::TensorProto& t, const std::string& path) {
  IPUSIM_CHECK(t.dims_size() == 4);
  const auto o_n = std::size_t(t.dims(0)), i_n = std::size_t(t.dims(1)),
             kh = std::size_t(t.dims(2)), kw = std::size_t(t.dims(3));
  // The source is read by output, input, row and column, the column fastest.
  return decoded(t, path, Shape{t.dims(2), t.dims(3), t.dims(1), t.dims(0)},
                 [=, o = std::size_t{0}, i = std::size_t{0}, y = std::size_t{0},
                  x = std::size_t{0}](std::size_t) mutable {
                   const std::size_t at = ((y * kw + x) * i_n + i) * o_n + o;
                   if (++x == kw) {
                     x = 0;
                     if (++y == kh) {
                       y = 0;
                       if (++i == i_n) {
                         i = 0;
                         ++o;
                       }
                     }
                   }
                   return at;
                 });
}

}  // namespace ipusim::models
