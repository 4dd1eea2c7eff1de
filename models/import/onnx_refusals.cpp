// What the ONNX import says when it cannot import a graph (models/import/onnx_converter.hpp).
// A real export refused node by node lists 30 to 140 lines, most of them one cause repeated
// (every Slice of a packed attention projection, every ReduceMean of a layer norm written out);
// the refusal groups them by operator and reason instead, names the first node of each group
// with its inputs and their shapes (known since normalisation inferred them), and says what
// would make it importable. --verbose adds every node, as the refusal once listed them.

#include <algorithm>

#include "models/import/onnx_converter.hpp"
#include "models/layers/shape_inference.hpp"

namespace ipusim::models::onnx_detail {

// The opset whose export writes a layer norm as one LayerNormalization (PyTorch writes it
// out as ReduceMean, Sub, Pow, Sqrt and Div before).
constexpr std::int64_t kLayerNormOpset = 17;

std::string OnnxConverter::inputs_text(const onnx::NodeProto& node) const {
  std::string text;
  for (const auto& input : node.input()) {
    if (input.empty())
      continue;
    const auto shape = index_.shape(input);
    text += std::string(text.empty() ? "" : ", ") + "'" + input + "' " +
            (shape ? shape_text(*shape) : "(shape unknown)");
  }
  return text.empty() ? "no inputs" : "reading " + text;
}

// What would make `node` importable: another opset, static shapes, the supported form, or
// writing that part of the config by hand.
std::string OnnxConverter::remedy(const onnx::NodeProto& node) const {
  const std::string& op = node.op_type();
  const std::string by_hand =
      "write this part of the model in the config by hand (README, \"model\", lists the layer "
      "types)";
  if (opset_ < kLayerNormOpset && (op == "ReduceMean" || op == "Pow" || op == "Sqrt"))
    return "export again with torch.onnx.export(..., opset_version=17), which writes a layer "
           "norm as one LayerNormalization; or " +
           by_hand;
  const bool shapes_known =
      std::all_of(node.input().begin(), node.input().end(), [&](const std::string& input) {
        return input.empty() || index_.shape(input).has_value() || index_.constant(input);
      });
  if (!shapes_known)
    return "export with static input sizes (dynamic_axes on the batch axis at most), so every "
           "shape is known; or " +
           by_hand;
  if (!handlers().contains(op) && op != "Erf")
    return by_hand + ", or export the model without this operator";
  return "change the model to the form named, or " + by_hand;
}

std::string OnnxConverter::no_layer_reason(const std::string& op) {
  if (op == "Erf")
    return "an Erf that is not part of a GELU (0.5 x (1 + erf(x / sqrt 2)))";
  if (op == "LSTM" || op == "GRU" || op == "RNN")
    return "no ipusim layer for this operator (ipusim has no recurrent layer; a model without "
           "it imports)";
  return "no ipusim layer for this operator";
}

std::string OnnxConverter::refusal() const {
  // Groups by operator and reason, in the order their first nodes come.
  std::vector<std::vector<const Problem*>> groups;
  for (const Problem& p : problems_) {
    const auto same = std::find_if(groups.begin(), groups.end(), [&](const auto& group) {
      return group.front()->node->op_type() == p.node->op_type() && group.front()->why == p.why;
    });
    if (same == groups.end())
      groups.push_back({&p});
    else
      same->push_back(&p);
  }
  // An attention that does not match explains the Reshapes, Transposes and scales around its
  // Softmax, refused in turn: its reason comes first.
  std::stable_partition(groups.begin(), groups.end(), [&](const auto& group) {
    return attention_why_.contains(index_.index_of(*group.front()->node));
  });
  std::string text = "cannot import " + std::to_string(problems_.size()) + " node(s) (" +
                     std::to_string(groups.size()) + " cause(s)), so nothing was written:";
  for (const auto& group : groups) {
    const onnx::NodeProto& first = *group.front()->node;
    text += "\n  " + first.op_type() + " x" + std::to_string(group.size()) + ": " +
            group.front()->why + "\n    first: node '" + first.name() + "', " + inputs_text(first) +
            "\n    to import it: " + remedy(first);
  }
  if (!verbose_)
    return text + "\n(ipusim import --verbose lists every node)";
  text += "\nevery node:";
  for (const Problem& p : problems_)
    text += "\n  node '" + p.node->name() + "' (" + p.node->op_type() + "): " + p.why;
  return text;
}

}  // namespace ipusim::models::onnx_detail
