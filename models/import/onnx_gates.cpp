// ONNX gates as ipusim layers: Sigmoid, Mul(x, Sigmoid(x)) as a swish (PyTorch's SiLU exports
// so), and Mul of two layers' outputs as a multiply (models/import/onnx_converter.hpp).

#include "models/import/onnx_converter.hpp"
#include "models/import/onnx_tensors.hpp"

namespace ipusim::models::onnx_detail {
namespace {

// ipusim's shape of a value ONNX holds as `in`: an image [C, H, W] is [H, W, C].
Shape gate_shape(const Activation& in) {
  const Shape& s = in.onnx_shape;
  if (in.channels_first && s.size() == 3)
    return {s[1], s[2], s[0]};
  return s;
}

// ipusim's multiply rule (models/layers/types/multiply.cpp): `second` broadcasts to `first`
// aligned at the last axis, each of its axes the first's or 1. Images must have equal ranks:
// ONNX aligns [C, H, W] at W, ipusim's [H, W, C] at C.
bool gate_broadcasts(const Shape& first, const Shape& second) {
  if (second.size() > first.size())
    return false;
  const std::size_t skip = first.size() - second.size();
  for (std::size_t k = 0; k < second.size(); ++k) {
    if (second[k] != 1 && second[k] != first[skip + k])
      return false;
  }
  return true;
}

}  // namespace

void OnnxConverter::sigmoid(const onnx::NodeProto& node) {
  const Activation* in = value(node);
  if (!in)
    return;
  const std::string& x = node.input(0);
  const std::string& s = node.output(0);
  const onnx::NodeProto* mul = index_.sole_consumer(s);
  const bool swish =
      mul != nullptr && mul->op_type() == "Mul" && mul->input_size() == 2 &&
      ((mul->input(0) == x && mul->input(1) == s) || (mul->input(0) == s && mul->input(1) == x));
  if (!swish) {
    add_layer({{"id", id_of(node)}, {"type", "sigmoid"}}, s, *in, {in->layer});
    return;
  }
  skipped_.insert(index_.index_of(*mul));  // the Mul comes later and is this layer's
  add_layer({{"id", unique_id(module_id(node.name(), "Sigmoid", "swish"))}, {"type", "swish"}},
            mul->output(0), *in, {in->layer});
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
  const bool images = a->channels_first || b->channels_first;
  const bool same_layout =
      a->channels_first == b->channels_first && (!images || first.size() == second.size());
  if (same_layout && gate_broadcasts(first, second)) {
    add_layer({{"id", id_of(node)}, {"type", "multiply"}}, node.output(0), *a,
              {a->layer, b->layer});
  } else if (same_layout && gate_broadcasts(second, first)) {
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
