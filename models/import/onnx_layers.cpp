// ONNX operators of images and features as ipusim layers: Gemm and MatMul as dense, Conv,
// MaxPool, GlobalAveragePool, activations, Flatten and Dropout; and whether the graph ends in
// logits (models/import/onnx_converter.hpp).

#include <algorithm>
#include <cmath>

#include "models/import/onnx_converter.hpp"
#include "models/import/onnx_tensors.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models::onnx_detail {

// A dense layer on `in` with kernel [in, units] in ONNX's row order, written to `output`.
void OnnxConverter::dense(const onnx::NodeProto& node, const Activation& in, Tensor kernel,
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

void OnnxConverter::gemm(const onnx::NodeProto& node) {
  const Activation* in = value(node);
  const auto* b = initializer(node, 1);
  if (!in || !b || int_attribute(node, "transA", 0) != 0 ||
      float_attribute(node, "alpha", 1) != 1 || float_attribute(node, "beta", 1) != 1) {
    if (in)
      problem(node, "only A x B + C with B and C initializers (transA 0, alpha and beta 1)");
    return;
  }
  // nn.Linear's [units, in] weight (transB) is decoded straight into [in, units].
  const bool transposed = int_attribute(node, "transB", 0) != 0 && b->dims_size() == 2;
  Tensor kernel =
      transposed ? onnx_transposed_float_matrix(*b, path_) : onnx_float_tensor(*b, path_);
  if (kernel.rank() != 2)
    return problem(node, "a weight '" + b->name() + "' of shape " + shape_text(kernel.shape()) +
                             " (expected a 2-D [in, units] or, with transB, [units, in])");
  dense(node, *in, std::move(kernel), initializer(node, 2), node.output(0));
}

// MatMul by an initializer, with the Add of a constant that alone reads it as the bias.
void OnnxConverter::matmul(const onnx::NodeProto& node) {
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

// A node's window over an [C, H, W] image: its kernel, strides (1 by default, as ONNX's) and
// pads as ONNX's `pads` give them, [top, left, bottom, right]; `auto_pad` SAME_UPPER is
// TensorFlow's "same", which ipusim has as such.
OnnxConverter::Window OnnxConverter::window_of(const onnx::NodeProto& node,
                                               const std::vector<std::int64_t>& kernel) {
  Window w;
  w.kernel = kernel;
  w.strides = ints_attribute(node, "strides");
  if (w.strides.empty())
    w.strides = {1, 1};
  w.dilations = ints_attribute(node, "dilations");
  if (w.dilations.empty())
    w.dilations = {1, 1};
  w.pads = ints_attribute(node, "pads");
  if (w.pads.empty())
    w.pads = {0, 0, 0, 0};
  w.ceil_mode = int_attribute(node, "ceil_mode", 0) != 0;
  const std::string auto_pad = string_attribute(node, "auto_pad", "NOTSET");
  w.same = auto_pad == "SAME_UPPER";
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && !w.same)
    w.problem = "auto_pad " + auto_pad + " (ipusim pads as SAME_UPPER, VALID or explicit pads)";
  else if (w.same || auto_pad == "VALID")
    w.pads = {0, 0, 0, 0};
  return w;
}

// The config's "padding": "same", "valid" for no padding, else the four pads.
json OnnxConverter::Window::padding() const {
  if (same)
    return "same";
  if (std::all_of(pads.begin(), pads.end(), [](std::int64_t p) { return p == 0; }))
    return "valid";
  return pads;
}

// PyTorch's and ONNX's output size along axis `a` (0 rows, 1 columns) of an image axis of
// `in`: floor((in + pads - k) / s) + 1, or with ceil_mode rounded up unless the last window
// would start past the input and its leading pad.
std::int64_t OnnxConverter::Window::out(std::int64_t in, int a) const {
  const std::int64_t k = span(a), s = strides[std::size_t(a)];
  if (same)
    return (in + s - 1) / s;
  const std::int64_t before = pads[std::size_t(a)],
                     room = in + before + pads[std::size_t(a) + 2] - k;
  std::int64_t out = (ceil_mode ? (room + s - 1) / s : room / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + before)
    --out;
  return out;
}

std::int64_t OnnxConverter::Window::span(int a) const {
  return (kernel[std::size_t(a)] - 1) * dilations[std::size_t(a)] + 1;
}

// Why the window cannot slide over an [C, H, W] image, or "" when it can: a kernel, strides and
// dilations of two sizes from 1 up, four pads from 0 up, and a kernel spanning no more than the
// padded image.
std::string OnnxConverter::Window::problem_over(const Shape& image) const {
  const auto all_from = [](const std::vector<std::int64_t>& v, std::size_t n, std::int64_t low) {
    return v.size() == n &&
           std::all_of(v.begin(), v.end(), [&](std::int64_t x) { return x >= low; });
  };
  if (!problem.empty())
    return problem;
  if (!all_from(kernel, 2, 1))
    return "kernel_shape " + shape_text(kernel) + " (expected two sizes of 1 or more)";
  if (!all_from(strides, 2, 1))
    return "strides " + shape_text(strides) + " (expected two strides of 1 or more)";
  if (!all_from(dilations, 2, 1))
    return "dilations " + shape_text(dilations) + " (expected two dilations of 1 or more)";
  // Compared in doubles: a hostile dilation times the kernel may pass 64 bits.
  const auto spans = [&](std::size_t a) {
    return double(kernel[a] - 1) * double(dilations[a]) + 1;
  };
  if (!all_from(pads, 4, 0) || pads[0] > spans(0) || pads[2] > spans(0) || pads[1] > spans(1) ||
      pads[3] > spans(1))
    return "pads " + shape_text(pads) + " (expected four pads from 0 up to the kernel's span)";
  if (!same && (double(image[1] + pads[0] + pads[2]) < spans(0) ||
                double(image[2] + pads[1] + pads[3]) < spans(1)))
    return "a kernel " + shape_text(kernel) +
           (dilations == std::vector<std::int64_t>{1, 1} ? ""
                                                         : " dilated by " + shape_text(dilations)) +
           " larger than its padded image " + shape_text(image);
  if (same && std::max(spans(0), spans(1)) > double(std::int64_t{1} << 40))
    return "a kernel " + shape_text(kernel) + " dilated by " + shape_text(dilations) +
           " spanning more than 2^40 inputs";
  return "";
}

// Why a Conv's or ConvTranspose's kernel and groups do not fit an image of `channels`, or a
// ConvTranspose is dilated, or "". `in_axis` is the kernel's axis of input channels: 1 for Conv's
// [filters, C / group, kh, kw], 0 for ConvTranspose's [C, filters / group, kh, kw].
std::string OnnxConverter::kernel_problem(const onnx::NodeProto& node, const Shape& kernel,
                                          std::int64_t channels, int in_axis) const {
  const std::int64_t group = int_attribute(node, "group", 1);
  const auto dilations = ints_attribute(node, "dilations");
  if (in_axis == 0 &&
      std::any_of(dilations.begin(), dilations.end(), [](std::int64_t d) { return d != 1; }))
    return "dilations " + shape_text(dilations) +
           " (ipusim's transposed convolutions are "
           "undilated)";
  if (group < 1 || channels % group != 0)
    return "group " + std::to_string(group) + " that does not divide the " +
           std::to_string(channels) + " input channels";
  const std::int64_t per_group = in_axis == 1 ? channels / group : channels;
  const std::string layout = in_axis == 1 ? "[out, " + std::to_string(per_group) + ", kh, kw]"
                                          : "[" + std::to_string(per_group) + ", out, kh, kw]";
  if (kernel.size() != 4 || kernel[std::size_t(in_axis)] != per_group ||
      (in_axis == 1 && kernel[0] % group != 0))
    return "a kernel '" + node.input(1) + "' of shape " + shape_text(kernel) + " (expected " +
           layout + " for " + std::to_string(channels) + " channels in " + std::to_string(group) +
           (group == 1 ? " group)" : " groups)");
  return "";
}

void OnnxConverter::conv(const onnx::NodeProto& node) {
  const Activation* in = value(node);
  const auto* w = initializer(node, 1);
  if (in && pooled_conv(node, *in))
    return;
  if (!in || !w || !in->channels_first) {
    if (in)
      problem(node, "only a convolution of an image by an initializer kernel");
    return;
  }
  // [filters, C / groups, kh, kw] decoded straight into [kh, kw, C / groups, filters]: each
  // group's filters are consecutive in both, so the ungrouped transposition serves.
  const Shape shape(w->dims().begin(), w->dims().end());
  Tensor kernel =
      shape.size() == 4 ? onnx_conv_kernel_tensor(*w, path_) : onnx_float_tensor(*w, path_);
  if (const auto why = kernel_problem(node, shape, in->onnx_shape[0], 1); !why.empty())
    return problem(node, why);
  const std::vector<std::int64_t> k = {shape[2], shape[3]};
  const auto shape_attribute = ints_attribute(node, "kernel_shape");
  const Window window = window_of(node, shape_attribute.empty() ? k : shape_attribute);
  std::string why = window.problem_over(in->onnx_shape);
  if (why.empty() && !shape_attribute.empty() && shape_attribute != k)
    why = "kernel_shape " + shape_text(shape_attribute) + " for a kernel of shape " +
          shape_text(shape);
  if (!why.empty())
    return problem(node, why);
  json layer = {{"id", id_of(node)},
                {"type", "conv2d"},
                {"filters", shape[0]},
                {"kernel", k},
                {"stride", window.strides},
                {"padding", window.padding()},
                {"bias", initializer(node, 2) != nullptr}};
  if (const std::int64_t group = int_attribute(node, "group", 1); group != 1)
    layer["groups"] = group;
  if (window.dilations != std::vector<std::int64_t>{1, 1})
    layer["dilation"] = window.dilations;
  std::vector<Tensor> weights{std::move(kernel)};
  if (const auto* bias = initializer(node, 2))
    weights.push_back(onnx_float_tensor(*bias, path_));
  const Shape& s = in->onnx_shape;
  const Shape out = {shape[0], window.out(s[1], 0), window.out(s[2], 1)};
  add_layer(std::move(layer), node.output(0), {"", out, true}, {in->layer}, std::move(weights));
}

// MaxPool and AveragePool as maxpool2d and avgpool2d. ONNX steps by 1 along each axis without
// strides (ipusim's pools step by the pool), so the layer always names its stride.
void OnnxConverter::pool(const onnx::NodeProto& node) {
  const Activation* in = value(node);
  if (!in)
    return;
  const bool max = node.op_type() == "MaxPool";
  const auto k = ints_attribute(node, "kernel_shape");
  const auto dilations = ints_attribute(node, "dilations");
  if (!in->channels_first || k.size() != 2 ||
      std::any_of(dilations.begin(), dilations.end(), [](std::int64_t d) { return d != 1; }) ||
      (max && node.output_size() > 1))
    return problem(node, "only a 2-D, undilated pool of an image (without MaxPool's indices)");
  Window window = window_of(node, k);
  if (const auto why = window.problem_over(in->onnx_shape); !why.empty())
    return problem(node, why);
  const auto pads = padded_.find(node.input(0));
  const bool padded = pads != padded_.end();
  if (padded) {
    const auto huge = [](std::int64_t p) { return p > (std::int64_t{1} << 40); };
    if (window.same || window.pads.size() != 4 ||
        std::any_of(window.pads.begin(), window.pads.end(), huge))
      return problem(node, "a pool of a Pad without its own four explicit pads (each up to 2^40)");
    for (std::size_t i = 0; i < 4; ++i)
      window.pads[i] += pads->second[i];
    if (const auto why = window.problem_over(in->onnx_shape); !why.empty())
      return problem(node, why);
  }
  if (!window.same && (2 * window.pads[0] > k[0] || 2 * window.pads[2] > k[0] ||
                       2 * window.pads[1] > k[1] || 2 * window.pads[3] > k[1]))
    return problem(node, "pads " + shape_text(window.pads) + " over half the pool " +
                             shape_text(k) + " (PyTorch's rule, which ipusim keeps)");
  json layer = {{"id", id_of(node)},
                {"type", max ? "maxpool2d" : "avgpool2d"},
                {"pool", k},
                {"stride", window.strides},
                {"padding", window.padding()}};
  if (window.ceil_mode)
    layer["ceil_mode"] = true;
  if (!max)
    layer["count_include_pad"] = padded || int_attribute(node, "count_include_pad", 0) != 0;
  const Shape& s = in->onnx_shape;
  const Shape out = {s[0], window.out(s[1], 0), window.out(s[2], 1)};
  add_layer(std::move(layer), node.output(0), {"", out, true}, {in->layer});
}

// The image passes on unpadded, its pads kept for the AveragePool that reads it: the zeros count
// in the pool's mean, as count_include_pad counts them.
void OnnxConverter::pad(const onnx::NodeProto& node) {
  const Activation* in = value(node);
  if (!in)
    return;
  const auto* pool = index_.sole_consumer(node.output(0));
  const auto pads =
      node.input_size() > 1 ? index_.constant_values(node.input(1)) : std::vector<double>{};
  const auto fill = node.input_size() > 2 && !node.input(2).empty()
                        ? index_.constant_values(node.input(2))
                        : std::vector<double>{0};
  const bool spatial = pads.size() == 8 && pads[0] == 0 && pads[1] == 0 && pads[4] == 0 &&
                       pads[5] == 0 && std::all_of(pads.begin(), pads.end(), [](double p) {
                         return p >= 0 && p <= 64 && p == std::floor(p);
                       });
  if (!in->channels_first || in->onnx_shape.size() != 3 || pool == nullptr ||
      pool->op_type() != "AveragePool" ||
      string_attribute(node, "mode", "constant") != "constant" || fill != std::vector<double>{0} ||
      !spatial)
    return problem(node,
                   "only a Pad of zeros (at most 64) around an image's height and width that one "
                   "AveragePool reads (PyTorch's AvgPool2d with count_include_pad)");
  padded_[node.output(0)] = {std::int64_t(pads[2]), std::int64_t(pads[3]), std::int64_t(pads[6]),
                             std::int64_t(pads[7])};
  values_[node.output(0)] = *in;
}

// ONNX keeps the pooled [C, 1, 1]; ipusim's [C] holds the same values in the same order, so the
// result is not channels-first: a Flatten after it reorders nothing.
void OnnxConverter::global_average_pool(const onnx::NodeProto& node) {
  const Activation* in = value(node);
  if (!in)
    return;
  if (!in->channels_first || in->onnx_shape.size() != 3) {
    problem(node, "only a global average pool of an image");
    return;
  }
  add_layer({{"id", id_of(node)}, {"type", "global_average_pool2d"}}, node.output(0),
            {"", {in->onnx_shape[0], 1, 1}, false}, {in->layer});
}

void OnnxConverter::named_activation(const onnx::NodeProto& node) {
  const std::string& op = node.op_type();
  const std::string approximate = string_attribute(node, "approximate", "none");
  if (op == "Gelu" && approximate != "none" && approximate != "tanh")
    return problem(node, "a GELU approximated by '" + approximate +
                             "' (ipusim's gelu is exact or "
                             "approximate 'tanh')");
  activation({{index_.index_of(node)}, node.input(0), node.output(0), ""},
             op == "Relu"            ? "relu"
             : op == "Tanh"          ? "tanh"
             : approximate == "tanh" ? "gelu_tanh"
                                     : "gelu",
             node);
}

// An activation (its nodes, input and output as a GELU pattern's): folded into the dense or
// convolution before it when nothing else reads that layer's output, a layer of its own
// otherwise.
void OnnxConverter::activation(const GeluPattern& nodes, const std::string& name,
                               const onnx::NodeProto& node) {
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
  const std::string id =
      nodes.name.empty() ? id_of(node) : unique_id(module_id(nodes.name, "", name));
  json layer = {{"id", id}, {"type", name}};
  if (name == "gelu_tanh")  // a layer of its own is a gelu with its approximation named
    layer = {{"id", id}, {"type", "gelu"}, {"approximate", "tanh"}};
  add_layer(std::move(layer), nodes.output, *in, {in->layer});
}

// A Reshape to [batch, features]: by the shapes normalisation inferred (a target PyTorch
// computes from the input's Shape is folded by then), or by a constant target of two values
// when inference could not tell.
bool OnnxConverter::reshapes_to_features(const onnx::NodeProto& node) const {
  const auto in = index_.shape(node.input(0)), out = index_.shape(node.output(0));
  if (in && out)
    return out->size() == 2 && !in->empty() && out->front() == in->front();
  const auto* shape = initializer(node, 1);
  return shape && shape->int64_data_size() + int(shape->raw_data().size() / 8) == 2;
}

void OnnxConverter::flatten(const onnx::NodeProto& node) {
  const Activation* in = value(node);
  if (!in)
    return;
  if (node.op_type() == "Flatten" && int_attribute(node, "axis", 1) != 1) {
    problem(node, "only a Flatten from axis 1");
    return;
  }
  if (node.op_type() == "Reshape") {
    const auto target = index_.constant_values(node.input(1));
    if (std::any_of(target.begin(), target.end(), [](double d) { return d < -1; }))
      return problem(node,
                     "a Reshape to a size below -1 (ONNX takes -1, inferred, and 0, "
                     "copied, and no other negative size)");
  }
  if (node.op_type() == "Reshape" && patches(node, *in))
    return;
  if (node.op_type() == "Reshape" && !reshapes_to_features(node)) {
    problem(node, "only a Reshape to [batch, features]");
    return;
  }
  // ONNX flattens [C, H, W] channel by channel, ipusim holds [H, W, C]: the flatten takes ONNX's
  // order, so that every value after it (a dense's rows, a norm's or an added parameter, GLU's
  // halves, a concat) is in the order the file's weights and operators assume.
  json layer = {{"id", id_of(node)}, {"type", "flatten"}};
  if (in->channels_first && in->onnx_shape.size() > 1 && in->onnx_shape[0] > 1 &&
      element_count(in->onnx_shape) > in->onnx_shape[0])
    layer["order"] = "channels_first";
  add_layer(std::move(layer), node.output(0), {"", {element_count(in->onnx_shape)}, false},
            {in->layer});
}

void OnnxConverter::dropout(const onnx::NodeProto& node) {
  const Activation* in = value(node);
  if (!in)
    return;
  // From opset 12 (ipusim reads 13 on) the ratio is an input, 0.5 when absent; an attribute of
  // that name is refused by check_onnx_graph as one Dropout's schema lacks.
  float rate = 0.5f;
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

// Logits: the graph's one output is the last layer's, a dense layer's without an activation
// over two or more classes (per sample or per token), or any layer's vector of two or more
// classes a sample (SqueezeNet ends in a convolution's pooled, flattened channels). PyTorch
// exports classifiers so, with the loss outside the model; the import appends ipusim's
// softmax_cross_entropy, nn.CrossEntropyLoss's equivalent, and notes it.
bool OnnxConverter::ends_in_logits() {
  if (graph_.output_size() != 1 || layers_.empty())
    return false;
  const auto found = values_.find(graph_.output(0).name());
  const json& last = layers_.back();
  if (found == values_.end() || found->second.layer != last.at("id"))
    return false;
  const bool dense_logits = last.at("type") == "dense" &&
                            last.value("activation", "none") == "none" &&
                            last.at("units").get<std::int64_t>() >= 2;
  const Shape& shape = found->second.onnx_shape;
  const bool class_vector = shape.size() == 1 && shape[0] >= 2;
  if (!dense_logits && !class_vector)
    return false;
  out_.notes.push_back("the graph ends in logits (layer '" + found->second.layer + "', " +
                       last.at("type").get<std::string>() +
                       "); the import appends a softmax_cross_entropy loss, as PyTorch's "
                       "nn.CrossEntropyLoss applies it outside the model");
  return true;
}

}  // namespace ipusim::models::onnx_detail
