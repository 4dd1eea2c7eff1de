// ONNX gates as ipusim layers: Sigmoid, Mul(x, Sigmoid(x)) as a swish (PyTorch's SiLU exports
// so), Mul of two layers' outputs as a multiply, and a squeeze-and-excite's 1x1 convolutions of
// pooled channels as dense layers (models/import/onnx_converter.hpp).

#include <algorithm>

#include "models/import/onnx_converter.hpp"
#include "models/import/onnx_tensors.hpp"

namespace ipusim::models::onnx_detail {
namespace {

// A global average pool's [C, 1, 1], which ipusim holds as [C] (and what squeeze-and-excite
// computes from it: 1x1 convolutions, activations).
bool pooled_channels(const Activation& in) {
  const Shape& s = in.onnx_shape;
  return !in.channels_first && s.size() == 3 && s[1] == 1 && s[2] == 1;
}

// ipusim's shape of a value ONNX holds as `in`: an image [C, H, W] is [H, W, C], pooled
// channels [C, 1, 1] are [C].
Shape gate_shape(const Activation& in) {
  const Shape& s = in.onnx_shape;
  if (in.channels_first && s.size() == 3)
    return {s[1], s[2], s[0]};
  if (pooled_channels(in))
    return {s[0]};
  return s;
}

}  // namespace

// A squeeze-and-excite's 1x1 convolution of pooled channels: a dense layer on ipusim's [C].
bool OnnxConverter::pooled_conv(const onnx::NodeProto& node, const Activation& in) {
  const auto* w = initializer(node, 1);
  if (w == nullptr || !pooled_channels(in))
    return false;
  const Tensor kernel = onnx_float_tensor(*w, path_);
  const auto pads = ints_attribute(node, "pads");
  const std::int64_t channels = in.onnx_shape[0];
  if (kernel.rank() != 4 || kernel.dim(1) != channels || kernel.dim(2) != 1 || kernel.dim(3) != 1 ||
      int_attribute(node, "group", 1) != 1 ||
      std::any_of(pads.begin(), pads.end(), [](std::int64_t p) { return p != 0; })) {
    problem(node, "a convolution of pooled channels " + shape_text(in.onnx_shape) +
                      " other than an ungrouped, unpadded 1x1 one (a squeeze-and-excite's)");
    return true;
  }
  const std::int64_t units = kernel.dim(0);
  Tensor matrix({channels, units});  // [out, in, 1, 1] to dense's [in, out]
  for (std::int64_t o = 0; o < units; ++o) {
    for (std::int64_t c = 0; c < channels; ++c)
      matrix[c * units + o] = kernel[o * channels + c];
  }
  const auto* bias = initializer(node, 2);
  std::vector<Tensor> weights{std::move(matrix)};
  if (bias)
    weights.push_back(onnx_float_tensor(*bias, path_));
  add_layer({{"id", id_of(node)}, {"type", "dense"}, {"units", units}, {"bias", bias != nullptr}},
            node.output(0), {"", {units, 1, 1}, false}, {in.layer}, std::move(weights));
  return true;
}

const onnx::NodeProto* OnnxConverter::times_own_input(const onnx::NodeProto& node) const {
  const std::string& x = node.input(0);
  const std::string& s = node.output(0);
  const onnx::NodeProto* mul = index_.sole_consumer(s);
  const bool gated =
      mul != nullptr && mul->op_type() == "Mul" && mul->input_size() == 2 &&
      ((mul->input(0) == x && mul->input(1) == s) || (mul->input(0) == s && mul->input(1) == x));
  return gated ? mul : nullptr;
}

void OnnxConverter::gate_or_activation(const onnx::NodeProto& node, const std::string& alone,
                                       const std::string& gated) {
  const Activation* in = value(node);
  if (!in)
    return;
  const onnx::NodeProto* mul = times_own_input(node);
  if (!mul) {
    add_layer({{"id", id_of(node)}, {"type", alone}}, node.output(0), *in, {in->layer});
    return;
  }
  skipped_.insert(index_.index_of(*mul));  // the Mul comes later and is this layer's
  add_layer({{"id", unique_id(module_id(node.name(), node.op_type(), gated))}, {"type", gated}},
            mul->output(0), *in, {in->layer});
}

void OnnxConverter::sigmoid(const onnx::NodeProto& node) {
  gate_or_activation(node, "sigmoid", "swish");
}

// The halves a and b of an equal Split, b's Sigmoid, and their Mul: PyTorch's GLU as one glu
// layer, its Sigmoid and Mul skipped.
void OnnxConverter::split(const onnx::NodeProto& node) {
  const Activation* in = value(node);
  if (!in)
    return;
  const onnx::NodeProto* gate =
      node.output_size() == 2 ? index_.sole_consumer(node.output(1)) : nullptr;
  const onnx::NodeProto* mul =
      gate && gate->op_type() == "Sigmoid" ? index_.sole_consumer(gate->output(0)) : nullptr;
  const bool glu = mul && mul->op_type() == "Mul" && mul->input_size() == 2 &&
                   index_.sole_consumer(node.output(0)) == mul && mul->input(0) == node.output(0) &&
                   mul->input(1) == gate->output(0);
  std::vector<double> sizes = index_.constant_values(node.input_size() > 1 ? node.input(1) : "");
  for (const std::int64_t size : ints_attribute(node, "split"))
    sizes.push_back(double(size));
  const std::int64_t axis = sample_axis(int_attribute(node, "axis", 0), *in);
  if (!glu || in->channels_first || axis < 0 ||
      (!sizes.empty() && sizes != std::vector{sizes[0], sizes[0]}))
    return problem(node,
                   "a Split other than a GLU's (two equal halves a and b of a value that is "
                   "not an image, then a Mul of a by the Sigmoid of b)");
  Shape out = in->onnx_shape;
  if (out[std::size_t(axis)] % 2 != 0)
    return problem(node, "a GLU's Split of an odd axis, " + shape_text(in->onnx_shape));
  out[std::size_t(axis)] /= 2;
  skipped_.insert({index_.index_of(*gate), index_.index_of(*mul)});
  add_layer({{"id", unique_id(module_id(node.name(), node.op_type(), "glu"))},
             {"type", "glu"},
             {"axis", axis}},
            mul->output(0), {"", out, false}, {in->layer});
}

void OnnxConverter::mul(const onnx::NodeProto& node) {
  if (initializer(node, 0) || initializer(node, 1))
    return problem(node, "a Mul by a constant (ipusim's multiply takes two layers' outputs)");
  const Activation* a = value(node.input(0), node);
  const Activation* b = a ? value(node.input(1), node) : nullptr;
  if (!a || !b)
    return;
  const Shape first = gate_shape(*a);
  const Shape second = gate_shape(*b);
  // ONNX aligns an image [C, H, W] at W and ipusim's [H, W, C] at C: they agree when the other
  // value is an image too or pooled channels, of the same ONNX rank.
  const bool images = a->channels_first || b->channels_first;
  const bool layouts =
      a->channels_first == b->channels_first || pooled_channels(*a) || pooled_channels(*b);
  const bool same_layout = layouts && (!images || a->onnx_shape.size() == b->onnx_shape.size());
  if (same_layout && broadcasts_to(second, first)) {
    add_layer({{"id", id_of(node)}, {"type", "multiply"}}, node.output(0), *a,
              {a->layer, b->layer});
  } else if (same_layout && broadcasts_to(first, second)) {
    add_layer({{"id", id_of(node)}, {"type", "multiply"}}, node.output(0), *b,
              {b->layer, a->layer});
  } else {
    problem(node, "a Mul of values of shapes " + shape_text(a->onnx_shape) + " and " +
                      shape_text(b->onnx_shape) +
                      " (ipusim's multiply broadcasts one to the other's shape by numpy's rule, "
                      "an image only by one of its rank)");
  }
}

}  // namespace ipusim::models::onnx_detail
