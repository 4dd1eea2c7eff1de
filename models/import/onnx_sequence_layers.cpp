// ONNX operators of sequences, norms and joins as ipusim layers: Softmax, Gather as an
// embedding, Add, Concat, the normalisations and attention (models/import/onnx_converter.hpp).

#include <algorithm>
#include <cmath>

#include "models/import/onnx_converter.hpp"
#include "models/import/onnx_tensors.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models::onnx_detail {

// The per-sample axis an ONNX axis (counting the batch, possibly negative) names; -1 for the
// batch axis or one out of range.
std::int64_t OnnxConverter::sample_axis(std::int64_t axis, const Activation& in) {
  const auto rank = static_cast<std::int64_t>(in.onnx_shape.size()) + 1;
  const std::int64_t a = axis < 0 ? axis + rank : axis;
  return a >= 1 && a < rank ? a - 1 : -1;
}

// Whether an ONNX axis is ipusim's last (the one its layer norm, softmax and batch norm use).
bool OnnxConverter::is_last_axis(std::int64_t axis, const Activation& in) {
  return !in.channels_first && sample_axis(axis, in) + 1 == std::int64_t(in.onnx_shape.size());
}

void OnnxConverter::softmax(const onnx::NodeProto& node) {
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
void OnnxConverter::gather(const onnx::NodeProto& node) {
  if (node.input_size() == 2 && values_.contains(node.input(0)))
    return select_token(node, values_.at(node.input(0)));
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

void OnnxConverter::add(const onnx::NodeProto& node) {
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
  if (sequence_first_.contains(node.input(0)) != sequence_first_.contains(node.input(1)))
    return problem(node,
                   "an Add of a [sequence, batch, ...] value and a [batch, sequence, ...] "
                   "one");
  if (a->onnx_shape != b->onnx_shape || a->channels_first != b->channels_first) {
    problem(node, "an Add of values of shapes " + shape_text(a->onnx_shape) + " and " +
                      shape_text(b->onnx_shape) + " (ipusim adds values of one shape)");
    return;
  }
  add_layer({{"id", id_of(node)}, {"type", "add"}}, node.output(0), *a, {a->layer, b->layer});
}

// A [sequence, hidden] table added to a plain lookup's output: the lookup's position table.
void OnnxConverter::add_positions(const onnx::NodeProto& node, const Activation& in,
                                  const onnx::TensorProto& constant) {
  json* layer = &layers_.at(layer_at_.at(in.layer));
  Tensor table = onnx_float_tensor(constant, path_);
  const bool lookup = layer->at("type") == "embedding" && layer->contains("positions");
  if (!lookup || !is_constant_of(table, in.onnx_shape[0], in.onnx_shape[1]) ||
      !index_.read_at_most_once(node.input(node.input(0) == constant.name() ? 1 : 0))) {
    if (!position_table(node, in, constant))
      problem(node,
              "an Add of a constant other than a bias after MatMul, a [sequence, hidden] "
              "position table after a Gather, or a learned tensor of the value's shape");
    return;
  }
  layer->erase("positions");
  auto& weights = weights_of(in.layer);
  weights.insert(weights.begin() + 1, table.reshaped({in.onnx_shape[0], in.onnx_shape[1]}));
  values_[node.output(0)] = in;
}

std::vector<Tensor>& OnnxConverter::weights_of(const std::string& layer) {
  const auto found = std::find_if(out_.weights.begin(), out_.weights.end(),
                                  [&](const auto& entry) { return entry.first == layer; });
  IPUSIM_CHECK(found != out_.weights.end());
  return found->second;
}

void OnnxConverter::concat(const onnx::NodeProto& node) {
  if (class_token(node))
    return;
  // torch.cat of one tensor (DenseNet's first dense layer) is the tensor itself.
  if (node.input_size() == 1) {
    if (const Activation* in = value(node.input(0), node))
      values_[node.output(0)] = *in;
    return;
  }
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
Tensor OnnxConverter::feature_vector(const onnx::NodeProto& node, int input, std::int64_t width,
                                     float fallback) {
  const auto* t = initializer(node, input);
  return t ? onnx_float_tensor(*t, path_) : Tensor({width}, fallback);
}

void OnnxConverter::layer_norm(const onnx::NodeProto& node) {
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
void OnnxConverter::batch_norm(const onnx::NodeProto& node) {
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

namespace {

// Columns [part x width, (part + 1) x width) of a [rows, columns] matrix, or of a vector.
Tensor columns_of(const Tensor& t, std::int64_t part, std::int64_t width) {
  const Shape& shape = t.shape();
  const std::int64_t rows = shape.size() == 2 ? shape[0] : 1;
  const std::int64_t cols = shape.back();
  std::vector<float> out;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = part * width; c < (part + 1) * width && c < cols; ++c)
      out.push_back(t.data()[r * cols + c]);
  Shape sliced = shape;
  sliced.back() = std::int64_t(out.size()) / rows;
  return Tensor(sliced, out);
}

}  // namespace

std::vector<Tensor> OnnxConverter::projection_weights(const AttentionProjection& p,
                                                      std::int64_t hidden) const {
  Tensor w = p.transposed ? onnx_transposed_float_matrix(*p.weight, path_)
                          : onnx_float_tensor(*p.weight, path_);
  Tensor b = onnx_float_tensor(*p.bias, path_);
  if (p.part < 0)
    return {std::move(w), std::move(b)};
  return {columns_of(w, p.part, hidden), columns_of(b, p.part, hidden)};
}

// Why an attention block cannot be one ipusim attention layer, or "".
std::string OnnxConverter::attention_problem(const AttentionPattern& block, const Activation& in,
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

void OnnxConverter::attention(const AttentionPattern& block) {
  const auto& first = graph_.node(*block.nodes.begin());
  const Activation* in = value(block.input, first);
  std::vector<Tensor> weights;
  for (const auto& p : in ? block.projections : std::vector<AttentionProjection>{}) {
    for (auto& t : projection_weights(p, in->onnx_shape.back()))
      weights.push_back(std::move(t));
  }
  std::string why = in ? attention_problem(block, *in, weights) : "";
  if (why.empty() && in && sequence_first_.contains(block.input) != block.sequence_first)
    why =
        "an attention whose input's batch and sequence axes are of one size, so that which "
        "is which cannot be told (export with another batch or sequence length)";
  if (!in || !why.empty()) {
    if (!why.empty())
      problem(first, why);
    failed_.insert(block.output);  // the block's output is not its first node's
    return;
  }
  json layer = {{"id", unique_id(module_id(block.name, "", "attention"))},
                {"type", "attention"},
                {"heads", block.heads}};
  if (block.dropout > 0)
    layer["dropout"] = decimal(static_cast<float>(block.dropout));
  if (block.causal)
    layer["causal"] = true;
  add_layer(std::move(layer), block.output, *in, {in->layer}, std::move(weights));
}

}  // namespace ipusim::models::onnx_detail
