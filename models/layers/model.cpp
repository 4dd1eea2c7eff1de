#include "models/layers/model.hpp"

#include <algorithm>
#include <optional>

#include "models/layers/layer_parse.hpp"
#include "models/layers/layer_types.hpp"
#include "models/layers/shape_inference.hpp"
#include "sim/core/checked.hpp"
#include "sim/core/error.hpp"
#include "sim/core/suggest.hpp"

namespace ipusim::models {
namespace {

using core::ConfigNode;

constexpr const char* kMaxElementsText = "2^40 (1,099,511,627,776)";

std::optional<std::int64_t> checked_element_count(const Shape& shape) {
  try {
    return element_count(shape);
  } catch (const core::Overflow&) {
    return std::nullopt;
  }
}

void read_input(const ConfigNode& node, Model& model) {
  node.expect_only_keys({"shape", "dtype"});
  const ConfigNode shape = node.at("shape");
  if (shape.size() == 0)
    shape.fail("expected a shape with at least one dimension, found []");
  model.input_shape = shape.as_int_list(1, core::kMaxCount);
  const auto elements = checked_element_count(model.input_shape);
  if (!elements || *elements > core::kMaxCount) {
    shape.fail("a sample of shape " + shape_text(model.input_shape) + " has more than " +
               kMaxElementsText + " elements");
  }
  model.dtype =
      node.get_enum("dtype", "fp32", {"fp32", "fp16"}) == "fp16" ? DType::kFp16 : DType::kFp32;
}

std::vector<Layer> read_layers(const ConfigNode& node) {
  if (node.size() == 0)
    node.fail("a model needs at least one layer");
  std::vector<Layer> layers;
  // Reserved, as a layer is large and growing would hold up to twice the model; each item is
  // viewed in turn, not all at once (items() would hold a view of every layer).
  layers.reserve(node.size());
  for (std::size_t i = 0; i < node.size(); ++i) {
    Layer layer = parse_layer(node.at(i));
    // Without "inputs" a layer continues from the one before it; the first takes the model input.
    if (layer.inputs.empty() && !layers.empty() && layer.type != LayerType::kInput)
      layer.inputs.push_back(layers.back().id);
    layers.push_back(std::move(layer));
  }
  return layers;
}

[[noreturn]] void fail_at(const Layer& layer, const std::string& message) {
  throw core::ConfigError(layer.file, layer.pointer, message);
}

// Checked before the graph, whose "output not used" message would hide what is wrong.
void check_loss_rules(const std::vector<Layer>& layers) {
  const Layer* loss = nullptr;
  for (const Layer& layer : layers) {
    if (layer.type != LayerType::kSoftmaxCrossEntropy)
      continue;
    if (loss != nullptr) {
      fail_at(layer, "the model has two loss layers, '" + loss->id + "' and '" + layer.id +
                         "'; a model trains exactly one loss, its last layer");
    }
    loss = &layer;
  }
  if (loss != nullptr && loss != &layers.back()) {
    const Layer& next = *(loss + 1);
    fail_at(*loss, layer_label(*loss) + " is the loss and must be the last layer, but '" + next.id +
                       "' follows it");
  }
}

// Whether `layer` outputs numbers of the model input unchanged: an input layer, or a view
// (flatten, reshape, slice) of such numbers. Token ids, types and masks travel this way.
bool passes_model_input(const Model& model, int layer) {
  if (!layer_type_row(model.layers[layer].type).view)
    return false;
  const auto& producers = model.graph.inputs_of(layer);
  return producers.empty() || passes_model_input(model, producers.front());
}

std::vector<InputShape> input_shapes(const Model& model, int layer) {
  const auto& producers = model.graph.inputs_of(layer);
  if (producers.empty())
    return {{"", true, model.input_shape}};
  std::vector<InputShape> inputs;
  for (const int producer : producers) {
    inputs.push_back({model.layers[producer].id, passes_model_input(model, producer),
                      model.info[producer].output});
  }
  return inputs;
}

// Bounds that keep every later product of a layer's figures and a micro-batch within 64 bits.
void check_output_scale(const Layer& layer, const Shape& output) {
  const auto elements = checked_element_count(output);
  if (!elements || *elements > core::kMaxCount) {
    fail_at(layer, layer_label(layer) + " gives " + shape_text(output) + ", more than " +
                       kMaxElementsText + " elements per sample");
  }
}

LayerInfo infer_layer(const Model& model, int i) {
  const Layer& layer = model.layers[i];
  try {
    const auto inputs = input_shapes(model, i);
    const Shape output = infer_output_shape(layer, inputs);
    check_output_scale(layer, output);
    std::vector<Shape> shapes;
    for (const InputShape& input : inputs)
      shapes.push_back(input.shape);
    LayerInfo info = layer_info(layer, shapes, output, model.dtype);
    info.reads_only_data = std::all_of(inputs.begin(), inputs.end(),
                                       [](const InputShape& input) { return input.model_input; });
    if (info.params > core::kMaxCount)
      fail_at(layer, layer_label(layer) + " has more than " + kMaxElementsText + " parameters");
    return info;
  } catch (const core::Overflow& overflow) {
    fail_at(layer, layer_label(layer) + " is too large: its " + overflow.what() +
                       " does not fit in 64 bits");
  }
}

[[noreturn]] void fail_tie(const Layer& layer, const std::string& message) {
  throw core::ConfigError(layer.file, layer.pointer + "/tied_to", message);
}

// A dense layer tied to an embedding multiplies by the transposed word matrix, [hidden, vocab];
// the matrix is counted once, as the embedding's, and only the bias is the dense layer's own.
void tie_weights(Model& model, int i) {
  const Layer& layer = model.layers[i];
  const int target = model.index_of(layer.tied_to);
  if (target < 0) {
    fail_tie(layer, layer_label(layer) + " is tied to '" + layer.tied_to + "', which is no layer" +
                        core::did_you_mean(layer.tied_to, model.layer_ids()));
  }
  const Layer& embedding = model.layers[target];
  if (embedding.type != LayerType::kEmbedding) {
    fail_tie(layer, layer_label(layer) + " is tied to " + layer_label(embedding) +
                        ", but only an embedding's word matrix can be shared");
  }
  const std::int64_t inner = input_shapes(model, i).front().shape.back();
  const auto& p = embedding.params;
  if (inner != p.hidden || layer.params.units != p.vocab_size) {
    fail_tie(layer, layer_label(layer) + " maps " + std::to_string(inner) + " to " +
                        std::to_string(layer.params.units) + " features, but the word matrix of '" +
                        embedding.id + "' maps its hidden " + std::to_string(p.hidden) +
                        " to a vocabulary of " + std::to_string(p.vocab_size));
  }
  LayerInfo& info = model.info[i];
  info.params = layer.params.bias ? layer.params.units : 0;
  info.param_tensors = layer.params.bias ? 1 : 0;
  info.weight_elements = info.params;
  info.weight_bytes = info.params * dtype_bytes(model.dtype);
}

void infer_layers(Model& model) {
  model.info.resize(model.layers.size());
  for (const int i : model.graph.topological_order())
    model.info[i] = infer_layer(model, i);
  for (int i = 0; i < int(model.layers.size()); ++i) {
    if (!model.layers[i].tied_to.empty())
      tie_weights(model, i);
  }
}

// The loss's logits fix the class count; a "classes" field, when given, must agree.
void settle_classes(const ConfigNode& node, Model& model) {
  const auto classes = node.find("classes");
  model.classes = classes ? classes->as_positive_int() : 0;
  if (!model.trainable)
    return;
  const Layer& loss = model.layers.back();
  const InputShape logits = input_shapes(model, int(model.layers.size()) - 1).front();
  if (classes && logits.shape.back() != model.classes) {
    fail_at(loss, layer_label(loss) + " needs logits for " + std::to_string(model.classes) +
                      " classes (the model's \"classes\"), but " + input_text(logits));
  }
  model.classes = logits.shape.back();
}

}  // namespace

int Model::index_of(const std::string& id) const {
  for (int i = 0; i < int(layers.size()); ++i) {
    if (layers[i].id == id)
      return i;
  }
  return -1;
}

std::vector<std::string> Model::layer_ids() const {
  std::vector<std::string> ids;
  for (const Layer& layer : layers)
    ids.push_back(layer.id);
  return ids;
}

std::int64_t Model::total_params() const {
  std::int64_t total = 0;
  for (const LayerInfo& layer : info)
    total += layer.params;
  return total;
}

std::int64_t Model::weight_tensors() const {
  std::int64_t total = 0;
  for (const LayerInfo& layer : info)
    total += layer.param_tensors;
  return total;
}

bool input_holds_ids(const Model& model) {
  for (const Layer& layer : model.layers) {
    if (layer.type == LayerType::kEmbedding)
      return true;
  }
  return false;
}

Model parse_model(const ConfigNode& node) {
  node.expect_only_keys({"name", "input", "classes", "layers", "initial_weights"});
  Model model;
  model.name = node.get_string("name", "model");
  if (model.name.size() > kMaxNameBytes)
    node.at("name").fail("the model name is " + std::to_string(model.name.size()) +
                         " bytes long; the most is " + std::to_string(kMaxNameBytes) +
                         " (every report copies it)");
  if (const auto weights = node.find("initial_weights")) {
    model.initial_weights = weights->as_string();
    if (model.initial_weights.empty())
      weights->fail("expected a directory of .npy files, found an empty string");
  }
  read_input(node.at("input"), model);
  model.layers = read_layers(node.at("layers"));
  check_loss_rules(model.layers);
  model.trainable = model.layers.back().type == LayerType::kSoftmaxCrossEntropy;
  model.graph = LayerGraph(model.layers);
  infer_layers(model);
  settle_classes(node, model);
  return model;
}

Model with_compute_dtype(Model model, DType dtype) {
  if (model.dtype == dtype)
    return model;
  model.dtype = dtype;
  infer_layers(model);
  return model;
}

}  // namespace ipusim::models
