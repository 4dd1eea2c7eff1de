#include "models/onnx_import.hpp"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <map>
#include <set>

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

float float_attribute(const onnx::NodeProto& node, const std::string& name, float fallback) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name)
      return a.f();
  }
  return fallback;
}

// A float initializer as a tensor (float_data or raw little-endian bytes).
Tensor tensor_of(const onnx::TensorProto& t, const std::string& path) {
  Shape shape(t.dims().begin(), t.dims().end());
  if (t.data_type() != onnx::TensorProto::FLOAT)
    throw core::ConfigError(path, "", "initializer '" + t.name() + "' is not float32");
  const auto count = static_cast<std::size_t>(element_count(shape));
  std::vector<float> values(t.float_data().begin(), t.float_data().end());
  if (values.empty() && t.raw_data().size() == count * sizeof(float)) {
    values.resize(count);
    std::memcpy(values.data(), t.raw_data().data(), t.raw_data().size());
  }
  if (values.size() != count) {
    throw core::ConfigError(path, "",
                            "initializer '" + t.name() + "' holds " +
                                std::to_string(values.size()) + " values for shape " +
                                shape_text(shape));
  }
  return Tensor(std::move(shape), values);
}

Tensor transposed(const Tensor& m) {
  const std::int64_t rows = m.dim(0), cols = m.dim(1);
  Tensor out({cols, rows});
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c)
      out[c * rows + r] = m[r * cols + c];
  }
  return out;
}

// A dense kernel whose rows follow a channels-first flatten of [C, H, W], reordered to the
// channels-last flatten ipusim's input has.
Tensor rows_channels_last(const Tensor& kernel, const Shape& chw) {
  const std::int64_t c_n = chw[0], h_n = chw[1], w_n = chw[2], units = kernel.dim(1);
  Tensor out(kernel.shape());
  for (std::int64_t c = 0; c < c_n; ++c) {
    for (std::int64_t h = 0; h < h_n; ++h) {
      for (std::int64_t w = 0; w < w_n; ++w) {
        const std::int64_t from = (c * h_n + h) * w_n + w, to = (h * w_n + w) * c_n + c;
        std::memcpy(out.data() + to * units, kernel.data() + from * units,
                    sizeof(float) * std::size_t(units));
      }
    }
  }
  return out;
}

// ONNX's [out, in, kh, kw] convolution kernel as ipusim's [kh, kw, in, out].
Tensor conv_kernel(const Tensor& w) {
  const std::int64_t o_n = w.dim(0), i_n = w.dim(1), kh = w.dim(2), kw = w.dim(3);
  Tensor out({kh, kw, i_n, o_n});
  for (std::int64_t o = 0; o < o_n; ++o)
    for (std::int64_t i = 0; i < i_n; ++i)
      for (std::int64_t y = 0; y < kh; ++y)
        for (std::int64_t x = 0; x < kw; ++x)
          out[((y * kw + x) * i_n + i) * o_n + o] = w[((o * i_n + i) * kh + y) * kw + x];
  return out;
}

class Converter {
 public:
  Converter(const onnx::GraphProto& graph, const std::string& path, OnnxImport& out)
      : graph_(graph), path_(path), out_(out) {
    for (const auto& init : graph.initializer())
      initializers_.emplace(init.name(), &init);
  }

  void convert() {
    add_input();
    for (int n = 0; n < graph_.node_size(); ++n) {
      if (!skipped_.contains(n))
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
    layers_.push_back({{"id", "loss"}, {"type", "softmax_cross_entropy"}});
    out_.model["layers"] = layers_;
    for (const auto& [name, init] : initializers_)
      out_.initializer_elements += element_count(Shape(init->dims().begin(), init->dims().end()));
  }

 private:
  void add_input() {
    for (const auto& input : graph_.input()) {
      if (initializers_.contains(input.name()))
        continue;
      Shape shape;
      for (const auto& dim : input.type().tensor_type().shape().dim())
        shape.push_back(dim.has_dim_value() ? dim.dim_value() : 1);
      if (shape.size() < 2)
        throw core::ConfigError(path_, "", "input '" + input.name() + "' has no batch axis");
      shape.erase(shape.begin());
      const bool image = shape.size() == 3;
      out_.model["input"] = {{"shape", image ? Shape{shape[1], shape[2], shape[0]} : shape}};
      layers_.push_back({{"id", "input"}, {"type", "input"}});
      values_[input.name()] = {"input", shape, image};
      return;
    }
    throw core::ConfigError(path_, "", "the graph has no input besides its initializers");
  }

  void convert_node(int n) {
    const auto& node = graph_.node(n);
    const std::string& op = node.op_type();
    if (op == "Gemm")
      gemm(node);
    else if (op == "MatMul")
      matmul(n);
    else if (op == "Conv")
      conv(node);
    else if (op == "MaxPool")
      max_pool(node);
    else if (op == "Relu" || op == "Tanh")
      activation(node, op == "Relu" ? "relu" : "tanh");
    else if (op == "Flatten" || op == "Reshape")
      flatten(node);
    else if (op == "Dropout")
      dropout(node);
    else if (op == "Softmax")
      softmax(n);
    else
      problem(node, "no ipusim layer for this operator");
  }

  // Records why `node` cannot be imported; the nodes fed by it then go unmentioned.
  void problem(const onnx::NodeProto& node, const std::string& why) {
    problems_ += "\n  node '" + node.name() + "' (" + node.op_type() + "): " + why;
    ++problem_count_;
    for (const auto& output : node.output())
      failed_.insert(output);
  }

  const onnx::TensorProto* initializer(const onnx::NodeProto& node, int input) const {
    if (node.input_size() <= input)
      return nullptr;
    const auto found = initializers_.find(node.input(input));
    return found == initializers_.end() ? nullptr : found->second;
  }

  const Activation* value(const onnx::NodeProto& node) {
    const auto found = values_.find(node.input(0));
    if (found != values_.end())
      return &found->second;
    if (failed_.contains(node.input(0))) {
      for (const auto& output : node.output())
        failed_.insert(output);
    } else {
      problem(node, "its input '" + node.input(0) + "' comes from no imported node");
    }
    return nullptr;
  }

  std::string id_of(const onnx::NodeProto& node) {
    std::string id =
        node.name().empty() ? node.op_type() + std::to_string(layers_.size()) : node.name();
    for (char& c : id) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-')
        c = '_';
    }
    return id;
  }

  void add_layer(json layer, const onnx::NodeProto& node, Activation produced,
                 std::vector<Tensor> weights = {}) {
    produced.layer = layer.at("id").get<std::string>();
    if (!weights.empty())
      out_.weights.emplace_back(produced.layer, std::move(weights));
    layers_.push_back(std::move(layer));
    values_[node.output(0)] = std::move(produced);
  }

  // A dense layer on `in` with kernel [in, units] in ONNX's row order.
  void dense(const onnx::NodeProto& node, const Activation& in, Tensor kernel,
             const onnx::TensorProto* bias) {
    if (in.onnx_shape.size() != 1) {
      problem(node, "a dense layer over features of shape " + shape_text(in.onnx_shape));
      return;
    }
    if (flattened_from_.contains(in.layer))
      kernel = rows_channels_last(kernel, flattened_from_.at(in.layer));
    const std::int64_t units = kernel.dim(1);
    json layer = {
        {"id", id_of(node)}, {"type", "dense"}, {"units", units}, {"bias", bias != nullptr}};
    std::vector<Tensor> weights{std::move(kernel)};
    if (bias)
      weights.push_back(tensor_of(*bias, path_));
    add_layer(std::move(layer), node, {"", {units}, false}, std::move(weights));
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
    Tensor kernel = tensor_of(*b, path_);
    if (int_attribute(node, "transB", 0) != 0)
      kernel = transposed(kernel);
    dense(node, *in, std::move(kernel), initializer(node, 2));
  }

  // MatMul by an initializer, with the Add of an initializer that follows it as the bias.
  void matmul(int n) {
    const auto& node = graph_.node(n);
    const Activation* in = value(node);
    const auto* b = initializer(node, 1);
    if (!in || !b) {
      if (in)
        problem(node, "only a product with an initializer (a dense layer)");
      return;
    }
    const onnx::TensorProto* bias = nullptr;
    if (n + 1 < graph_.node_size()) {
      const auto& next = graph_.node(n + 1);
      if (next.op_type() == "Add" && next.input(0) == node.output(0) && initializer(next, 1)) {
        bias = initializer(next, 1);
        skipped_.insert(n + 1);
        renamed_[node.output(0)] = next.output(0);
      }
    }
    dense(node, *in, tensor_of(*b, path_), bias);
    if (const auto r = renamed_.find(node.output(0)); r != renamed_.end())
      values_[r->second] = values_[node.output(0)];
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

  void conv(const onnx::NodeProto& node) {
    const Activation* in = value(node);
    const auto* w = initializer(node, 1);
    if (!in || !w || !in->channels_first) {
      if (in)
        problem(node, "only a convolution of an image by an initializer kernel");
      return;
    }
    const Tensor kernel = tensor_of(*w, path_);
    const std::vector<std::int64_t> k = {kernel.dim(2), kernel.dim(3)};
    auto strides = ints_attribute(node, "strides");
    strides.resize(2, strides.empty() ? 1 : strides[0]);
    const auto dilations = ints_attribute(node, "dilations");
    const std::string pad = padding(node, k);
    if (int_attribute(node, "group", 1) != 1 || pad.empty() ||
        std::any_of(dilations.begin(), dilations.end(), [](std::int64_t d) { return d != 1; })) {
      problem(node, "only ungrouped, undilated convolutions with no or 'same' padding");
      return;
    }
    json layer = {{"id", id_of(node)},
                  {"type", "conv2d"},
                  {"filters", kernel.dim(0)},
                  {"kernel", k},
                  {"stride", strides},
                  {"padding", pad},
                  {"bias", initializer(node, 2) != nullptr}};
    std::vector<Tensor> weights{conv_kernel(kernel)};
    if (const auto* bias = initializer(node, 2))
      weights.push_back(tensor_of(*bias, path_));
    const Shape& s = in->onnx_shape;
    add_layer(std::move(layer), node,
              {"",
               {kernel.dim(0), out_size(s[1], k[0], strides[0], pad),
                out_size(s[2], k[1], strides[1], pad)},
               true},
              std::move(weights));
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
    const Shape& s = in->onnx_shape;
    add_layer({{"id", id_of(node)},
               {"type", "maxpool2d"},
               {"pool", k},
               {"stride", strides},
               {"padding", "valid"}},
              node,
              {"",
               {s[0], out_size(s[1], k[0], strides[0], "valid"),
                out_size(s[2], k[1], strides[1], "valid")},
               true});
  }

  void activation(const onnx::NodeProto& node, const std::string& name) {
    const Activation* in = value(node);
    if (!in)
      return;
    auto& last = layers_.back();
    if (last.at("id") != in->layer || !last.contains("bias") ||
        last.value("activation", "") != "") {
      problem(node, "only an activation right after the dense or convolution it follows");
      return;
    }
    last["activation"] = name;
    values_[node.output(0)] = *in;
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
    add_layer({{"id", id}, {"type", "flatten"}}, node,
              {"", {element_count(in->onnx_shape)}, false});
  }

  void dropout(const onnx::NodeProto& node) {
    const Activation* in = value(node);
    if (!in)
      return;
    float rate = float_attribute(node, "ratio", 0.5f);
    if (const auto* ratio = initializer(node, 1))
      rate = tensor_of(*ratio, path_)[0];
    add_layer({{"id", id_of(node)}, {"type", "dropout"}, {"rate", rate}}, node, *in);
  }

  void softmax(int n) {
    const auto& node = graph_.node(n);
    const bool ends = n + 1 == graph_.node_size() && graph_.output_size() == 1 &&
                      graph_.output(0).name() == node.output(0);
    if (!ends) {
      problem(node, "only a Softmax ending the graph (it becomes the loss)");
      return;
    }
    if (value(node))
      softmax_end_ = true;
  }

  const onnx::GraphProto& graph_;
  const std::string& path_;
  OnnxImport& out_;
  std::map<std::string, const onnx::TensorProto*> initializers_;
  std::map<std::string, Activation> values_;
  std::map<std::string, std::string> renamed_;
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
  Converter(model.graph(), path, out).convert();
  return out;
}

}  // namespace ipusim::models
