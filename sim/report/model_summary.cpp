#include "sim/report/model_summary.hpp"

#include <algorithm>

#include "models/layers/layer_parse.hpp"
#include "models/layers/layer_types.hpp"
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"

namespace ipusim::sim {
namespace {

std::string keras_shape(const models::Shape& shape) {
  std::string out = "(None";
  for (auto dim : shape)
    out += ", " + std::to_string(dim);
  return out + ")";
}

std::int64_t total_params(const models::Model& model) {
  std::int64_t total = 0;
  for (const auto& info : model.info)
    total += info.params;
  return total;
}

// The batch norms' running mean and variance, one of each per channel: state that the forward
// pass updates, not the optimizer, so Keras counts it as non-trainable (ResNet-50's 53,120).
std::int64_t running_statistics(const models::Model& model) {
  std::int64_t count = 0;
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    if (model.layers[i].type == models::LayerType::kBatchNorm)
      count += 2 * model.info[i].output.back();
  }
  return count;
}

std::vector<std::vector<std::string>> layer_rows(const RunSpec& spec) {
  const auto& model = spec.model;
  const double batch = double(spec.pipeline.micro_batch_size);
  std::vector<int> stage_of(model.layers.size(), 0);
  std::vector<int> ipu_of(model.layers.size(), 0);
  for (int s = 0; s < int(spec.pipeline.stages.size()); ++s) {
    const auto& stage = spec.pipeline.stages[s];
    for (std::size_t sub = 0; sub < stage.substage_layers.size(); ++sub) {
      for (int layer : stage.substage_layers[sub]) {
        stage_of[layer] = s;
        ipu_of[layer] = stage.ipus[sub];
      }
    }
  }
  std::vector<std::vector<std::string>> rows = {{"Layer (type)", "Output Shape", "Param #",
                                                 "Fwd FLOPs", "Bwd FLOPs", "Activations", "Stage",
                                                 "IPU"}};
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    const auto& layer = model.layers[i];
    const auto& info = model.info[i];
    rows.push_back({layer.id + " (" + models::layer_type_name(layer.type) + ")",
                    keras_shape(info.output), with_commas(info.params),
                    si(info.forward_flops * batch, "FLOP"), si(info.backward_flops * batch, "FLOP"),
                    si(double(info.activation_bytes) * batch, "B"), std::to_string(stage_of[i]),
                    std::to_string(ipu_of[i])});
  }
  return rows;
}

std::string totals(const RunSpec& spec) {
  const auto& model = spec.model;
  const double batch = double(spec.pipeline.micro_batch_size);
  double forward = 0;
  double backward = 0;
  double activations = 0;
  for (const auto& info : model.info) {
    forward += info.forward_flops * batch;
    backward += info.backward_flops * batch;
    activations += double(info.activation_bytes) * batch;
  }
  const auto params = total_params(model);
  const auto running = running_statistics(model);
  return "Total params: " + with_commas(params + running) + "\n" +
         "Trainable params: " + with_commas(spec.pipeline.training ? params : 0) + "\n" +
         "Non-trainable params: " + with_commas((spec.pipeline.training ? 0 : params) + running) +
         "\n" + "Per micro-batch of " + std::to_string(spec.pipeline.micro_batch_size) +
         ": forward " + si(forward, "FLOP") + ", backward " + si(backward, "FLOP") +
         ", activations " + si(activations, "B") + " (" + models::dtype_name(spec.pipeline.dtype) +
         ")\n";
}

std::string stage_list(const RunSpec& spec) {
  std::string out = "Stages:\n";
  for (std::size_t s = 0; s < spec.pipeline.stages.size(); ++s) {
    const auto& stage = spec.pipeline.stages[s];
    std::string ipus;
    for (std::size_t i = 0; i < stage.ipus.size(); ++i) {
      ipus += (i == 0 ? "" : ", ") + std::to_string(stage.ipus[i]);
    }
    out += " " + std::to_string(s) + ". " + stage.name(spec.model) + "  (IPU " + ipus + ")\n";
  }
  return out;
}

}  // namespace

std::string render_model_summary(const RunSpec& spec) {
  std::string out = "Model: \"" + spec.model.name + "\"  (" + spec.config_path + ")\n";
  const auto table =
      render_table(layer_rows(spec), {false, false, true, true, true, true, true, true});
  const auto rule_width = table.substr(0, table.find('\n')).size();
  const std::string rule(rule_width, '=');
  const auto header_end = table.find('\n') + 1;
  out += rule + "\n" + table.substr(0, header_end) + rule + "\n" + table.substr(header_end) + rule +
         "\n";
  out += totals(spec) + "\n" + stage_list(spec);
  for (const auto& note : spec.notes)
    out += "Note: " + note + "\n";
  return out;
}

std::string one_line_summary(const RunSpec& spec) {
  const auto& p = spec.pipeline;
  return spec.model.name + ": " + std::to_string(spec.model.layers.size()) + " layers, " +
         with_commas(total_params(spec.model)) + " parameters, " + std::to_string(p.stages.size()) +
         " stage(s) on " + std::to_string(p.ipus_per_replica()) + " IPU(s) x " +
         std::to_string(p.replication_factor) + " replica(s) of " + spec.hardware.preset + ", " +
         p.schedule + " schedule, gradient accumulation " +
         std::to_string(p.gradient_accumulation_count) + ", micro-batch " +
         std::to_string(p.micro_batch_size) + ", repeat count " + std::to_string(p.repeat_count);
}

namespace {

// "the model input", "one", "one or two", "two" or "two or more".
std::string inputs_text(models::LayerType type) {
  const auto common = models::common_layer_keys(type);
  if (std::find(common.begin(), common.end(), "inputs") == common.end())
    return "the model input";
  switch (models::layer_type_row(type).inputs) {
    case models::LayerInputs::kOne:
      return "one";
    case models::LayerInputs::kOneOrTwo:
      return "one or two";
    case models::LayerInputs::kTwo:
      return "two";
    case models::LayerInputs::kTwoOrMore:
      return "two or more";
  }
  core::fail_invariant("inputs is one of LayerInputs' values", __FILE__, __LINE__);
}

std::string joined(const std::vector<std::string>& words) {
  std::string text;
  for (const auto& word : words)
    text += (text.empty() ? "" : ", ") + word;
  return text;
}

}  // namespace

std::string render_layer_types() {
  std::vector<std::vector<std::string>> rows = {{"type", "inputs", "keys"}};
  for (const auto& name : models::layer_type_names()) {
    const auto type = *models::layer_type_from_name(name);
    rows.push_back({name, inputs_text(type), joined(models::layer_type_keys(type))});
  }
  return render_table(rows, {false, false, false}) + "Every layer also takes " +
         joined(models::common_layer_keys(models::LayerType::kDense)) +
         " (an input layer all but inputs); 'ipusim layers TYPE' gives a type's keys.\n";
}

std::string render_layer_type(models::LayerType type) {
  const auto& row = models::layer_type_row(type);
  const std::string inputs = inputs_text(type);
  std::string out = std::string(row.name) + ": takes " + inputs +
                    (inputs == "one"               ? " input"
                     : inputs == "the model input" ? ""
                                                   : " inputs") +
                    (row.view ? "; a view: it moves and computes nothing" : "") + "\n";
  if (row.keys.empty()) {
    out += "No keys of its own.\n";
  } else {
    std::vector<std::vector<std::string>> rows = {{"key", "value", "default", "meaning"}};
    for (const models::LayerKey& key : row.keys) {
      rows.push_back(
          {key.name, core::key_value_text(key), core::key_default_text(key), key.meaning});
    }
    out += render_table(rows, {false, false, false, false});
  }
  return out + "It also takes " + joined(models::common_layer_keys(type)) + ".\n";
}

}  // namespace ipusim::sim
