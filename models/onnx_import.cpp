#include "models/onnx_import.hpp"

#include <onnx/onnx_pb.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "models/onnx_patterns.hpp"
#include "models/onnx_tensors.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {
namespace {

using nlohmann::json;

// The layout of an activation as ONNX holds it: [C, H, W] images or flat features.
struct Activation {
  std::string layer;  // the ipusim layer producing it
  Shape onnx_shape;   // without the batch axis
  bool channels_first = false;
};

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

// A float as the shortest decimal that reads back as it (1e-12, not 9.99999996e-13), so the
// config shows what the exporter wrote.
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

// A value's name in an ipusim layer id: letters, digits, '_' and '-'.
std::string sanitized(std::string id) {
  for (char& c : id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-')
      c = '_';
  }
  return id;
}

bool is_constant_of(const Tensor& t, std::int64_t rows, std::int64_t width) {
  return t.shape() == Shape{rows, width} || t.shape() == Shape{1, rows, width};
}

class Converter {
 public:
  Converter(const onnx::GraphProto& graph, const std::string& path, OnnxImport& out)
      : graph_(graph), path_(path), out_(out), index_(graph) {}

  void convert() {
    add_input();
    find_patterns();
    for (int n = 0; n < graph_.node_size(); ++n) {
      if (const auto a = attention_at_.find(n); a != attention_at_.end())
        attention(a->second);
      else if (const auto g = gelu_at_.find(n); g != gelu_at_.end())
        activation(g->second, "gelu", graph_.node(n));
      else if (!skipped_.contains(n))
        convert_node(n);
    }
    if (!problems_.empty()) {
      throw core::ConfigError(path_, "",
                              "cannot import " + std::to_string(problem_count_) +
                                  " node(s), so nothing was written:" + problems_);
    }
    if (!softmax_end_) {
      throw core::ConfigError(path_, "",
                              "the graph does not end in a Softmax, so ipusim has no loss to "
                              "train it with; export the model with its final Softmax");
    }
    layers_.push_back({{"id", unique_id("loss")}, {"type", "softmax_cross_entropy"}});
    out_.model["layers"] = layers_;
    for (const auto& init : graph_.initializer())  // each count checked by check_onnx_graph
      out_.initializer_elements += element_count(Shape(init.dims().begin(), init.dims().end()));
  }

 private:
  void add_input() {
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
      layers_.push_back({{"id", "input"}, {"type", "input"}});
      values_[input.name()] = {"input", shape, image};
      return;
    }
    throw core::ConfigError(path_, "", "the graph has no input besides its initializers");
  }

  // A sample's shape as the graph declares it: dimensions from 1 up, 2^30 elements at most (a
  // larger one is no model ipusim simulates, and its sizes would overflow).
  void check_sample_shape(const std::string& name, const Shape& shape) const {
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
  void find_patterns() {
    for (const auto& node : graph_.node()) {
      const int n = index_.index_of(node);
      if (node.op_type() == "Softmax") {
        std::string why;
        if (auto block = match_attention(index_, node, why)) {
          claim(block->nodes);
          attention_at_.emplace(*block->nodes.begin(), std::move(*block));
        } else if (!why.empty()) {
          attention_why_[n] = why;
        }
      } else if (node.op_type() == "Erf") {
        if (auto gelu = match_gelu(index_, node)) {
          claim(gelu->nodes);
          gelu_at_.emplace(*gelu->nodes.begin(), std::move(*gelu));
        }
      }
    }
  }

  void claim(const std::set<int>& nodes) {
    for (auto n = std::next(nodes.begin()); n != nodes.end(); ++n)
      skipped_.insert(*n);
  }

  using Handler = void (Converter::*)(const onnx::NodeProto&);

  static const std::map<std::string, Handler>& handlers() {
    static const std::map<std::string, Handler> table = {
        {"Gemm", &Converter::gemm},
        {"MatMul", &Converter::matmul},
        {"Conv", &Converter::conv},
        {"MaxPool", &Converter::max_pool},
        {"Relu", &Converter::named_activation},
        {"Tanh", &Converter::named_activation},
        {"Gelu", &Converter::named_activation},
        {"Flatten", &Converter::flatten},
        {"Reshape", &Converter::flatten},
        {"Dropout", &Converter::dropout},
        {"Softmax", &Converter::softmax},
        {"Gather", &Converter::gather},
        {"Add", &Converter::add},
        {"Concat", &Converter::concat},
        {"LayerNormalization", &Converter::layer_norm},
        {"BatchNormalization", &Converter::batch_norm},
    };
    return table;
  }

  void convert_node(int n) {
    const auto& node = graph_.node(n);
    const std::string& op = node.op_type();
    if (op == "Constant")
      return;  // read through the index where it is used
    if (const auto handler = handlers().find(op); handler != handlers().end())
      (this->*handler->second)(node);
    else
      problem(node, op == "Erf" ? "an Erf that is not part of a GELU (0.5 x (1 + erf(x / sqrt 2)))"
                                : "no ipusim layer for this operator");
  }

  // Records why `node` cannot be imported; the nodes fed by it then go unmentioned.
  void problem(const onnx::NodeProto& node, const std::string& why) {
    problems_ += "\n  node '" + node.name() + "' (" + node.op_type() + "): " + why;
    ++problem_count_;
    fail_outputs(node);
  }

  void fail_outputs(const onnx::NodeProto& node) {
    for (const auto& output : node.output())
      failed_.insert(output);
  }

  const onnx::TensorProto* initializer(const onnx::NodeProto& node, int input) const {
    return node.input_size() <= input ? nullptr : index_.constant(node.input(input));
  }

  // The activation `tensor` holds, or null: silently when it comes from a node that already
  // failed, with a problem for `node` when it comes from nothing imported.
  const Activation* value(const std::string& tensor, const onnx::NodeProto& node) {
    const auto found = values_.find(tensor);
    if (found != values_.end())
      return &found->second;
    if (failed_.contains(tensor))
      fail_outputs(node);
    else
      problem(node, "its input '" + tensor + "' comes from no imported node");
    return nullptr;
  }

  const Activation* value(const onnx::NodeProto& node) { return value(node.input(0), node); }

  std::string unique_id(const std::string& wanted) const {
    std::string id = wanted.empty() ? "layer" : wanted;
    for (int n = 2;
         std::any_of(layers_.begin(), layers_.end(),
                     [&](const json& l) { return l.at("id").get_ref<const std::string&>() == id; });
         ++n)
      id = wanted + "_" + std::to_string(n);
    return id;
  }

  std::string id_of(const onnx::NodeProto& node) const {
    return unique_id(sanitized(node.name().empty() ? node.op_type() : node.name()));
  }

  // Adds `layer` reading `inputs` (ipusim ids), its output held in `output`.
  void add_layer(json layer, const std::string& output, Activation produced,
                 const std::vector<std::string>& inputs, std::vector<Tensor> weights = {}) {
    produced.layer = layer.at("id").get<std::string>();
    if (inputs.size() != 1 || inputs.front() != layers_.back().at("id"))
      layer["inputs"] = inputs;
    if (!weights.empty())
      out_.weights.emplace_back(produced.layer, std::move(weights));
    layers_.push_back(std::move(layer));
    values_[output] = std::move(produced);
  }

  // A dense layer on `in` with kernel [in, units] in ONNX's row order, written to `output`.
  void dense(const onnx::NodeProto& node, const Activation& in, Tensor kernel,
             const onnx::TensorProto* bias, const std::string& output) {
    if (in.channels_first || in.onnx_shape.size() > 2) {
      problem(node, "a dense layer over values of shape " + shape_text(in.onnx_shape) +
                        " (features or [sequence, features] are supported)");
      return;
    }
    if (kernel.rank() != 2 || kernel.dim(0) != in.onnx_shape.back()) {
      problem(node, "a weight of shape " + shape_text(kernel.shape()) + " for features of width " +
                        std::to_string(in.onnx_shape.back()) + " (expected [" +
                        std::to_string(in.onnx_shape.back()) + ", units])");
      return;
    }
    if (flattened_from_.contains(in.layer))
      kernel = onnx_rows_channels_last(kernel, flattened_from_.at(in.layer));
    const std::int64_t units = kernel.dim(1);
    json layer = {
        {"id", id_of(node)}, {"type", "dense"}, {"units", units}, {"bias", bias != nullptr}};
    std::vector<Tensor> weights{std::move(kernel)};
    if (bias)
      weights.push_back(onnx_float_tensor(*bias, path_));
    Shape shape = in.onnx_shape;
    shape.back() = units;
    add_layer(std::move(layer), output, {"", shape, false}, {in.layer}, std::move(weights));
  }

  void gemm(const onnx::NodeProto& node) {
    const Activation* in = value(node);
    const auto* b = initializer(node, 1);
    if (!in || !b || int_attribute(node, "transA", 0) != 0 ||
        float_attribute(node, "alpha", 1) != 1 || float_attribute(node, "beta", 1) != 1) {
      if (in)
        problem(node, "only A x B + C with B and C initializers (transA 0, alpha and beta 1)");
      return;
    }
    Tensor kernel = onnx_float_tensor(*b, path_);
    if (kernel.rank() != 2)
      return problem(node, "a weight '" + b->name() + "' of shape " + shape_text(kernel.shape()) +
                               " (expected a 2-D [in, units] or, with transB, [units, in])");
    if (int_attribute(node, "transB", 0) != 0)
      kernel = onnx_transposed_matrix(kernel);
    dense(node, *in, std::move(kernel), initializer(node, 2), node.output(0));
  }

  // MatMul by an initializer, with the Add of a constant that alone reads it as the bias.
  void matmul(const onnx::NodeProto& node) {
    const Activation* in = value(node);
    const auto* b = initializer(node, 1);
    if (!in || !b || b->dims_size() != 2) {
      if (in)
        problem(node, "only a product with a 2-D initializer (a dense layer)");
      return;
    }
    const onnx::TensorProto* bias = nullptr;
    std::string output = node.output(0);
    if (const auto* next = index_.sole_consumer(output); next && next->op_type() == "Add") {
      bias = index_.constant(next->input(next->input(0) == output ? 1 : 0));
      if (bias) {
        skipped_.insert(index_.index_of(*next));
        output = next->output(0);
      }
    }
    dense(node, *in, onnx_float_tensor(*b, path_), bias, output);
  }

  // "valid" for no padding, "same" for the padding that keeps a stride-1 output's size.
  std::string padding(const onnx::NodeProto& node, const std::vector<std::int64_t>& kernel) {
    const auto pads = ints_attribute(node, "pads");
    if (std::all_of(pads.begin(), pads.end(), [](std::int64_t p) { return p == 0; }))
      return "valid";
    const std::vector<std::int64_t> same = {(kernel[0] - 1) / 2, (kernel[1] - 1) / 2, kernel[0] / 2,
                                            kernel[1] / 2};
    return pads == same ? "same" : "";
  }

  static std::int64_t out_size(std::int64_t in, std::int64_t k, std::int64_t s,
                               const std::string& pad) {
    return pad == "same" ? (in + s - 1) / s : (in - k) / s + 1;
  }

  // Why a 2-D window cannot slide over an [C, H, W] image, or "" when it can: a kernel and
  // strides of two sizes from 1 up, and (unpadded) a kernel no larger than the image.
  static std::string window_problem(const std::vector<std::int64_t>& kernel,
                                    const std::vector<std::int64_t>& strides, const Shape& image,
                                    const std::string& pad) {
    const auto two_positive = [](const std::vector<std::int64_t>& v) {
      return v.size() == 2 && v[0] >= 1 && v[1] >= 1;
    };
    if (!two_positive(kernel))
      return "kernel_shape " + shape_text(kernel) + " (expected two sizes of 1 or more)";
    if (!two_positive(strides))
      return "strides " + shape_text(strides) + " (expected two strides of 1 or more)";
    if (pad == "valid" && (image[1] < kernel[0] || image[2] < kernel[1]))
      return "a kernel " + shape_text(kernel) + " larger than its image " + shape_text(image);
    return "";
  }

  void conv(const onnx::NodeProto& node) {
    const Activation* in = value(node);
    const auto* w = initializer(node, 1);
    if (!in || !w || !in->channels_first) {
      if (in)
        problem(node, "only a convolution of an image by an initializer kernel");
      return;
    }
    const Tensor kernel = onnx_float_tensor(*w, path_);
    if (kernel.rank() != 4 || kernel.dim(1) != in->onnx_shape[0])
      return problem(node, "a kernel '" + w->name() + "' of shape " + shape_text(kernel.shape()) +
                               " (expected [out, " + std::to_string(in->onnx_shape[0]) +
                               ", kh, kw] for an image of shape " + shape_text(in->onnx_shape) +
                               ")");
    const std::vector<std::int64_t> k = {kernel.dim(2), kernel.dim(3)};
    auto strides = ints_attribute(node, "strides");
    if (strides.empty())
      strides = {1, 1};
    const auto dilations = ints_attribute(node, "dilations");
    const std::string pad = padding(node, k);
    if (int_attribute(node, "group", 1) != 1 || pad.empty() ||
        std::any_of(dilations.begin(), dilations.end(), [](std::int64_t d) { return d != 1; })) {
      problem(node, "only ungrouped, undilated convolutions with no or 'same' padding");
      return;
    }
    const auto shape_attribute = ints_attribute(node, "kernel_shape");
    std::string why =
        window_problem(shape_attribute.empty() ? k : shape_attribute, strides, in->onnx_shape, pad);
    if (why.empty() && !shape_attribute.empty() && shape_attribute != k)
      why = "kernel_shape " + shape_text(shape_attribute) + " for a kernel of shape " +
            shape_text(kernel.shape());
    if (!why.empty())
      return problem(node, why);
    json layer = {{"id", id_of(node)},
                  {"type", "conv2d"},
                  {"filters", kernel.dim(0)},
                  {"kernel", k},
                  {"stride", strides},
                  {"padding", pad},
                  {"bias", initializer(node, 2) != nullptr}};
    std::vector<Tensor> weights{onnx_conv_kernel(kernel)};
    if (const auto* bias = initializer(node, 2))
      weights.push_back(onnx_float_tensor(*bias, path_));
    const Shape& s = in->onnx_shape;
    const Shape out = {kernel.dim(0), out_size(s[1], k[0], strides[0], pad),
                       out_size(s[2], k[1], strides[1], pad)};
    add_layer(std::move(layer), node.output(0), {"", out, true}, {in->layer}, std::move(weights));
  }

  void max_pool(const onnx::NodeProto& node) {
    const Activation* in = value(node);
    if (!in)
      return;
    const auto k = ints_attribute(node, "kernel_shape");
    auto strides = ints_attribute(node, "strides");
    if (strides.empty())
      strides = k;
    if (!in->channels_first || k.size() != 2 || padding(node, k) != "valid") {
      problem(node, "only a 2-D max pool of an image without padding");
      return;
    }
    if (const auto why = window_problem(k, strides, in->onnx_shape, "valid"); !why.empty())
      return problem(node, why);
    const Shape& s = in->onnx_shape;
    const Shape out = {s[0], out_size(s[1], k[0], strides[0], "valid"),
                       out_size(s[2], k[1], strides[1], "valid")};
    add_layer({{"id", id_of(node)},
               {"type", "maxpool2d"},
               {"pool", k},
               {"stride", strides},
               {"padding", "valid"}},
              node.output(0), {"", out, true}, {in->layer});
  }

  void named_activation(const onnx::NodeProto& node) {
    const std::string& op = node.op_type();
    if (op == "Gelu" && string_attribute(node, "approximate", "none") != "none") {
      problem(node, "only the exact GELU (approximate 'none'), which ipusim's gelu computes");
      return;
    }
    activation({{index_.index_of(node)}, node.input(0), node.output(0), ""},
               op == "Relu"   ? "relu"
               : op == "Tanh" ? "tanh"
                              : "gelu",
               node);
  }

  // An activation (its nodes, input and output as a GELU pattern's): folded into the dense or
  // convolution before it when nothing else reads that layer's output, a layer of its own
  // otherwise.
  void activation(const GeluPattern& nodes, const std::string& name, const onnx::NodeProto& node) {
    const Activation* in = value(nodes.input, node);
    if (!in) {
      failed_.insert(nodes.output);  // a GELU's output is not its first node's
      return;
    }
    auto& last = layers_.back();
    if (last.at("id") == in->layer && last.contains("bias") && !last.contains("activation") &&
        index_.read_only_by(nodes.input, nodes.nodes)) {
      last["activation"] = name;
      values_[nodes.output] = *in;
      return;
    }
    const std::string id = nodes.name.empty() ? id_of(node) : unique_id(sanitized(nodes.name));
    add_layer({{"id", id}, {"type", name}}, nodes.output, *in, {in->layer});
  }

  void flatten(const onnx::NodeProto& node) {
    const Activation* in = value(node);
    if (!in)
      return;
    if (node.op_type() == "Flatten" && int_attribute(node, "axis", 1) != 1) {
      problem(node, "only a Flatten from axis 1");
      return;
    }
    if (node.op_type() == "Reshape") {
      const auto* shape = initializer(node, 1);
      if (!shape || shape->int64_data_size() + int(shape->raw_data().size() / 8) != 2) {
        problem(node, "only a Reshape to [batch, features]");
        return;
      }
    }
    const std::string id = id_of(node);
    if (in->channels_first)
      flattened_from_[id] = in->onnx_shape;
    add_layer({{"id", id}, {"type", "flatten"}}, node.output(0),
              {"", {element_count(in->onnx_shape)}, false}, {in->layer});
  }

  void dropout(const onnx::NodeProto& node) {
    const Activation* in = value(node);
    if (!in)
      return;
    float rate = float_attribute(node, "ratio", 0.5f);
    if (const auto* ratio = initializer(node, 1)) {
      const Tensor t = onnx_float_tensor(*ratio, path_);
      if (t.elements() != 1)
        return problem(node, "a ratio '" + ratio->name() + "' of shape " + shape_text(t.shape()) +
                                 " (expected one value)");
      rate = t[0];
    }
    if (!(rate >= 0 && rate < 1))
      return problem(node, "a ratio of " + std::to_string(rate) +
                               " (expected one from 0 up to, not including, 1)");
    add_layer({{"id", id_of(node)}, {"type", "dropout"}, {"rate", decimal(rate)}}, node.output(0),
              *in, {in->layer});
  }

  // The per-sample axis an ONNX axis (counting the batch, possibly negative) names; -1 for the
  // batch axis or one out of range.
  static std::int64_t sample_axis(std::int64_t axis, const Activation& in) {
    const auto rank = static_cast<std::int64_t>(in.onnx_shape.size()) + 1;
    const std::int64_t a = axis < 0 ? axis + rank : axis;
    return a >= 1 && a < rank ? a - 1 : -1;
  }

  // Whether an ONNX axis is ipusim's last (the one its layer norm, softmax and batch norm use).
  static bool is_last_axis(std::int64_t axis, const Activation& in) {
    return !in.channels_first && sample_axis(axis, in) + 1 == std::int64_t(in.onnx_shape.size());
  }

  void softmax(const onnx::NodeProto& node) {
    if (const auto why = attention_why_.find(index_.index_of(node)); why != attention_why_.end()) {
      problem(node, why->second);
      return;
    }
    const bool ends = graph_.output_size() == 1 && graph_.output(0).name() == node.output(0);
    const Activation* in = value(node);
    if (!in)
      return;
    if (ends) {
      softmax_end_ = true;
      return;
    }
    if (!is_last_axis(int_attribute(node, "axis", -1), *in)) {
      problem(node, "only a Softmax over the last axis of features or a sequence's features");
      return;
    }
    add_layer({{"id", id_of(node)}, {"type", "softmax"}}, node.output(0), *in, {in->layer});
  }

  // Gather of the model input's token ids from a [vocabulary, hidden] initializer: a plain
  // embedding lookup (positions and a layer norm may be folded in by what follows).
  void gather(const onnx::NodeProto& node) {
    const auto* table = initializer(node, 0);
    const Activation* ids = node.input_size() == 2 ? value(node.input(1), node) : nullptr;
    if (!ids || failed_.contains(node.input(0)))
      return fail_outputs(node);
    if (!table || table->dims_size() != 2 || int_attribute(node, "axis", 0) != 0 ||
        ids->layer != "input" || ids->onnx_shape.size() != 1) {
      problem(node,
              "only a lookup of the model input's token ids in a [vocabulary, hidden] "
              "initializer (an embedding)");
      return;
    }
    const std::int64_t vocab = table->dims(0), hidden = table->dims(1);
    const std::int64_t sequence = ids->onnx_shape[0];
    add_layer({{"id", id_of(node)},
               {"type", "embedding"},
               {"vocab_size", vocab},
               {"hidden", hidden},
               {"sequence_length", sequence},
               {"positions", false},
               {"layer_norm", false}},
              node.output(0), {"", {sequence, hidden}, false}, {ids->layer},
              {onnx_float_tensor(*table, path_)});
  }

  void add(const onnx::NodeProto& node) {
    if (node.input_size() != 2)
      return problem(node, "an Add of other than two values");
    const auto* constant = initializer(node, 0) ? initializer(node, 0) : initializer(node, 1);
    const std::string other = node.input(initializer(node, 0) ? 1 : 0);
    if (constant) {
      if (const Activation* in = value(other, node))
        add_positions(node, *in, *constant);
      return;
    }
    const Activation* a = value(node.input(0), node);
    const Activation* b = a ? value(node.input(1), node) : nullptr;
    if (!a || !b)
      return;
    if (a->onnx_shape != b->onnx_shape || a->channels_first != b->channels_first) {
      problem(node, "an Add of values of shapes " + shape_text(a->onnx_shape) + " and " +
                        shape_text(b->onnx_shape) + " (ipusim adds values of one shape)");
      return;
    }
    add_layer({{"id", id_of(node)}, {"type", "add"}}, node.output(0), *a, {a->layer, b->layer});
  }

  // A [sequence, hidden] table added to a plain lookup's output: the lookup's position table.
  void add_positions(const onnx::NodeProto& node, const Activation& in,
                     const onnx::TensorProto& constant) {
    auto layer = std::find_if(layers_.begin(), layers_.end(),
                              [&](const json& l) { return l.at("id") == in.layer; });
    Tensor table = onnx_float_tensor(constant, path_);
    const bool lookup = layer->at("type") == "embedding" && layer->contains("positions");
    if (!lookup || !is_constant_of(table, in.onnx_shape[0], in.onnx_shape[1]) ||
        !index_.read_at_most_once(node.input(node.input(0) == constant.name() ? 1 : 0))) {
      problem(node,
              "an Add of a constant other than a bias after MatMul or a [sequence, hidden] "
              "position table after a Gather");
      return;
    }
    layer->erase("positions");
    auto& weights = weights_of(in.layer);
    weights.insert(weights.begin() + 1, table.reshaped({in.onnx_shape[0], in.onnx_shape[1]}));
    values_[node.output(0)] = in;
  }

  std::vector<Tensor>& weights_of(const std::string& layer) {
    const auto found = std::find_if(out_.weights.begin(), out_.weights.end(),
                                    [&](const auto& entry) { return entry.first == layer; });
    IPUSIM_CHECK(found != out_.weights.end());
    return found->second;
  }

  void concat(const onnx::NodeProto& node) {
    std::vector<const Activation*> parts;
    for (const auto& input : node.input()) {
      const Activation* in = value(input, node);
      if (!in)
        return;
      parts.push_back(in);
    }
    const Activation& first = *parts.front();
    const std::int64_t axis = sample_axis(int_attribute(node, "axis", 0), first);
    Shape shape = first.onnx_shape;
    std::vector<std::string> inputs;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const Activation& part = *parts[i];
      if (axis < 0 || part.channels_first != first.channels_first ||
          part.onnx_shape.size() != shape.size())
        return problem(node, "only a Concat of values of one layout along a per-sample axis");
      if (i > 0)
        shape[std::size_t(axis)] += part.onnx_shape[std::size_t(axis)];
      inputs.push_back(part.layer);
    }
    // ONNX's [C, H, W] axes are ipusim's [H, W, C] ones 2, 0 and 1.
    const std::int64_t ipusim_axis = first.channels_first ? (axis + 2) % 3 : axis;
    add_layer({{"id", id_of(node)}, {"type", "concat"}, {"axis", ipusim_axis}}, node.output(0),
              {"", shape, first.channels_first}, inputs);
  }

  // A feature vector initializer, or ones / zeros when the node leaves it out.
  Tensor feature_vector(const onnx::NodeProto& node, int input, std::int64_t width,
                        float fallback) {
    const auto* t = initializer(node, input);
    return t ? onnx_float_tensor(*t, path_) : Tensor({width}, fallback);
  }

  void layer_norm(const onnx::NodeProto& node) {
    const Activation* in = value(node);
    if (!in)
      return;
    if (!initializer(node, 1) || !is_last_axis(int_attribute(node, "axis", -1), *in)) {
      problem(node, "only a layer normalization over the last axis with an initializer scale");
      return;
    }
    const std::int64_t width = in->onnx_shape.back();
    add_layer({{"id", id_of(node)},
               {"type", "layer_norm"},
               {"epsilon", decimal(float_attribute(node, "epsilon", 1e-5f))}},
              node.output(0), *in, {in->layer},
              {feature_vector(node, 1, width, 1.0f), feature_vector(node, 2, width, 0.0f)});
  }

  // Batch normalization of image channels or features, with its running mean and variance.
  void batch_norm(const onnx::NodeProto& node) {
    const Activation* in = value(node);
    if (!in)
      return;
    const bool channels = in->channels_first || in->onnx_shape.size() == 1;
    if (!channels || node.input_size() != 5 || !initializer(node, 1) || !initializer(node, 2)) {
      problem(node,
              "only a batch normalization of image channels or features with initializer "
              "scale, bias, mean and variance");
      return;
    }
    const std::int64_t width = in->onnx_shape.front();
    std::vector<Tensor> running;
    for (int i : {3, 4}) {
      if (const auto* t = initializer(node, i)) {
        running.push_back(onnx_float_tensor(*t, path_));
        out_.running_statistics_elements += running.back().elements();
      }
    }
    const std::string id = id_of(node);
    if (running.size() == 2)
      out_.running_statistics.emplace_back(id, std::move(running));
    add_layer({{"id", id},
               {"type", "batch_norm"},
               {"epsilon", decimal(float_attribute(node, "epsilon", 1e-5f))},
               {"momentum", decimal(float_attribute(node, "momentum", 0.9f))}},
              node.output(0), *in, {in->layer},
              {feature_vector(node, 1, width, 1.0f), feature_vector(node, 2, width, 0.0f)});
  }

  // Why an attention block cannot be one ipusim attention layer, or "".
  static std::string attention_problem(const AttentionPattern& block, const Activation& in,
                                       const std::vector<Tensor>& weights) {
    const std::int64_t hidden = in.onnx_shape.back();
    const bool square = std::all_of(weights.begin(), weights.end(), [&](const Tensor& w) {
      return w.shape() == Shape{hidden, hidden} || w.shape() == Shape{hidden};
    });
    if (in.channels_first || in.onnx_shape.size() != 2 || !square)
      return "an attention over values of shape " + shape_text(in.onnx_shape) +
             " whose projections are not all [hidden, hidden] (ipusim's attention keeps the "
             "width)";
    if (block.heads * block.head_size != hidden)
      return "an attention of " + std::to_string(block.heads) + " heads of size " +
             std::to_string(block.head_size) + " over values of width " + std::to_string(hidden) +
             " (expected heads x head size = width)";
    if (!(block.dropout >= 0 && block.dropout < 1))
      return "an attention dropout ratio of " + std::to_string(block.dropout) +
             " (expected one from 0 up to, not including, 1)";
    return "";
  }

  void attention(const AttentionPattern& block) {
    const auto& first = graph_.node(*block.nodes.begin());
    const Activation* in = value(block.input, first);
    std::vector<Tensor> weights;
    for (const auto* t : in ? block.parameters : std::vector<const onnx::TensorProto*>{})
      weights.push_back(onnx_float_tensor(*t, path_));
    const std::string why = in ? attention_problem(block, *in, weights) : "";
    if (!in || !why.empty()) {
      if (!why.empty())
        problem(first, why);
      failed_.insert(block.output);  // the block's output is not its first node's
      return;
    }
    json layer = {{"id", unique_id(sanitized(block.name.empty() ? "attention" : block.name))},
                  {"type", "attention"},
                  {"heads", block.heads}};
    if (block.dropout > 0)
      layer["dropout"] = decimal(static_cast<float>(block.dropout));
    add_layer(std::move(layer), block.output, *in, {in->layer}, std::move(weights));
  }

  const onnx::GraphProto& graph_;
  const std::string& path_;
  OnnxImport& out_;
  OnnxGraphIndex index_;
  std::map<int, AttentionPattern> attention_at_;  // by the block's first node
  std::map<int, GeluPattern> gelu_at_;
  std::map<int, std::string> attention_why_;  // by Softmax: why its attention is refused
  std::map<std::string, Activation> values_;
  std::map<std::string, Shape> flattened_from_;  // by flatten layer: the [C, H, W] it flattens
  std::set<int> skipped_;
  std::set<std::string> failed_;  // outputs of nodes that could not be imported
  json layers_ = json::array();
  std::string problems_;
  int problem_count_ = 0;
  bool softmax_end_ = false;
};

}  // namespace

OnnxImport import_onnx(const std::string& bytes, const std::string& path) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes) || !model.has_graph()) {
    throw core::ConfigError(path, "",
                            "not an ONNX model: the file does not parse as an onnx.ModelProto "
                            "with a graph");
  }
  OnnxImport out;
  out.producer = model.producer_name() +
                 (model.producer_version().empty() ? "" : " " + model.producer_version());
  out.model = {{"name", model.graph().name().empty() ? "onnx_model" : model.graph().name()}};
  check_onnx_graph(model.graph(), path);
  Converter(model.graph(), path, out).convert();
  return out;
}

}  // namespace ipusim::models
