// `ipusim import`: a model file from a framework as an ipusim config
// (models/import/keras_import.hpp).

#include <algorithm>
#include <filesystem>
#include <memory>
#include <ostream>
#include <span>

#include "models/data/npy.hpp"
#include "models/import/keras_import.hpp"
#include "models/import/keras_weights.hpp"
#include "models/import/onnx_import.hpp"
#include "models/kernels/stage_executor.hpp"
#include "models/layers/shape_inference.hpp"
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/core/json_text.hpp"
#include "sim/numeric/numeric.hpp"
#include "sim/numeric/training.hpp"
#include "tools/ipusim/command.hpp"

namespace ipusim::cli {
namespace {

struct ImportArgs {
  std::string model_path;
  std::string output;
  std::string weights;  // a Keras model's .npz
  std::vector<std::string> splits;
  bool verbose = false;  // an ONNX refusal lists every node
};

// How an error names the model file when an output would replace it.
constexpr const char* kModelRole = "the model file this command reads";

// ONNX and .npz files above this are refused: ipusim's models hold at most a few hundred MB
// of weights.
constexpr std::int64_t kMaxModelFileBytes = std::int64_t{1} << 30;

bool is_onnx(const std::string& path) {
  return std::filesystem::path(path).extension() == ".onnx";
}

std::string read_onnx_file(const std::string& path) {
  std::string bytes;
  if (const auto why = core::read_regular_file(path, &bytes, kMaxModelFileBytes))
    throw core::ConfigError(path, "", *why);
  return bytes;
}

nlohmann::json read_model_file(const std::string& path) {
  std::string text;
  if (const auto why = core::read_regular_file(path, &text))
    throw core::ConfigError(path, "", *why);
  return core::parse_json_text(text, path);
}

// The config: the imported model, the split asked for, and a pipeline to start from: the
// default schedule (Grouped), micro-batch 32, a GAC of at least 16 that it accepts (a multiple of
// twice the stages).
nlohmann::json config_of(nlohmann::json model, const std::string& source, const ImportArgs& a) {
  const auto stages = std::int64_t(a.splits.size()) + 1;
  nlohmann::json config = {
      {"description", "Imported by ipusim import from " + a.model_path + " (" + source + ")."},
      {"model", std::move(model)},
      {"pipeline",
       {{"micro_batch_size", 32},
        {"gradient_accumulation_count", (16 + 2 * stages - 1) / (2 * stages) * (2 * stages)}}}};
  if (!a.splits.empty())
    config["pipeline"]["splits"] = a.splits;
  return config;
}

sim::RunSpec validated(const nlohmann::json& config, const ImportArgs& a) {
  try {
    return sim::build_run_spec(core::ConfigDocument::from_json(config, a.output));
  } catch (const core::ConfigError& error) {
    throw core::ConfigError(a.model_path, "",
                            "the imported model does not validate, so nothing was written: " +
                                std::string(error.what()));
  }
}

// What labels token data take for a model whose loss reads a row of logits per position: the
// next token when the model attends causally over one sequence and can name every id, as a
// causal language model trains; else masked-language modelling, BERT's 15%.
nlohmann::json token_labels(const models::Model& model, const models::Layer& embedding) {
  const bool causal = std::any_of(model.layers.begin(), model.layers.end(),
                                  [](const models::Layer& l) { return l.params.causal; });
  if (causal && model.input_shape.size() == 1 && model.classes >= embedding.params.vocab_size)
    return {{"labels", "next_token"}};
  return {{"labels", "masked_tokens"}, {"mask_probability", 0.15}};
}

// Token data for a model that looks tokens up: labelled per token when the loss takes a row of
// logits per position (token_labels), one class per sample otherwise. Returns the spec the
// config validates to with its data.
sim::RunSpec with_data(nlohmann::json& config, const ImportArgs& a) {
  sim::RunSpec spec = validated(config, a);
  const auto& layers = spec.model.layers;
  const auto embedding = std::find_if(layers.begin(), layers.end(), [](const models::Layer& l) {
    return l.type == models::LayerType::kEmbedding;
  });
  if (embedding == layers.end())
    return spec;
  const int loss = static_cast<int>(layers.size()) - 1;
  const models::Shape logits = models::input_shapes_of(spec.model, loss).front();
  config["data"] = {{"source", "synthetic_tokens"}};
  if (models::element_count(logits) > logits.back())
    config["data"].update(token_labels(spec.model, *embedding));
  return validated(config, a);
}

// The config as written, refused when ipusim could not read it back.
std::string config_text(const nlohmann::json& config, const ImportArgs& a) {
  std::string text = config.dump(2) + "\n";
  if (std::int64_t(text.size()) > core::kMaxConfigBytes)
    throw core::ConfigError(
        a.model_path, "",
        "the imported config would hold " + sim::with_commas(std::int64_t(text.size())) +
            " bytes, more than the 64 MiB (" + sim::with_commas(core::kMaxConfigBytes) +
            " bytes) ipusim reads; nothing was written");
  return text;
}

using ImportedWeights = models::LayerTensors;

// Declares and writes `<folder>/<name>.initial.npy` for each of one layer's tensors, checking
// each against the shape the validated model gives it.
void write_tensors(const std::string& id, const std::vector<std::string>& names,
                   const std::vector<models::Shape>& expected,
                   const std::vector<models::Tensor>& tensors, const std::string& folder,
                   const std::string& source, core::OutputSet& outputs) {
  IPUSIM_CHECK(names.size() == tensors.size() && expected.size() == tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (expected[i] != tensors[i].shape())
      throw core::ConfigError(source, "",
                              "the weights of layer '" + id + "' do not fit it: " + names[i] +
                                  " is " + models::shape_text(tensors[i].shape()) +
                                  " in the file and " + models::shape_text(expected[i]) +
                                  " in the imported model; nothing was written");
    const std::string path = folder + "/" + names[i] + ".initial.npy";
    outputs.add(path, "-o");
    const auto bytes = models::npy_bytes(tensors[i]);
    outputs.write(path, {bytes.header, bytes.data});
  }
}

// Writes the imported parameters, and the batch norms' running statistics, as
// `<folder>/<layer>.<parameter>.initial.npy`. Only the shapes of the model's own parameters are
// needed, not the parameters (a second copy of a large model's weights).
void write_weights(const ImportedWeights& weights, const ImportedWeights& running,
                   const sim::RunSpec& spec, const std::string& folder, const std::string& source,
                   core::OutputSet& outputs) {
  outputs.add_folder(folder, "-o", core::OutputSet::FolderLink::kRefuse);
  for (const auto& [id, tensors] : weights) {
    const int layer = spec.model.index_of(id);
    write_tensors(id, sim::parameter_names(spec.model, layer),
                  models::tensor_shapes_of(spec.model, layer).parameters, tensors, folder, source,
                  outputs);
  }
  for (const auto& [id, tensors] : running) {
    const int layer = spec.model.index_of(id);
    write_tensors(id, sim::running_statistics_names(spec.model, layer),
                  models::tensor_shapes_of(spec.model, layer).running_statistics, tensors, folder,
                  source, outputs);
  }
}

// The Keras weights file: --weights, or `<model>.npz` beside the model's JSON when it exists.
std::string keras_weights_path(const ImportArgs& a) {
  if (!a.weights.empty())
    return a.weights;
  std::filesystem::path beside(a.model_path);
  beside.replace_extension(".npz");
  return std::filesystem::is_regular_file(beside) ? beside.string() : "";
}

models::KerasWeightsFile keras_weights(const models::KerasImport& imported,
                                       const sim::RunSpec& spec, const std::string& npz) {
  return models::read_keras_weights(imported, spec.model, npz, kMaxModelFileBytes);
}

void import_keras_file(const ImportArgs& a, std::ostream& out) {
  core::OutputSet outputs;
  outputs.add(a.output, "-o");
  outputs.add_input(a.model_path, kModelRole);
  const std::string npz = keras_weights_path(a);
  if (!npz.empty())
    outputs.add_input(npz, "the weights file this command reads");
  const auto imported = models::import_keras(read_model_file(a.model_path), a.model_path);
  auto model = imported.model;
  const std::filesystem::path config_path(a.output);
  const std::string folder_name = config_path.stem().string() + ".weights";
  if (!npz.empty())
    model["initial_weights"] = folder_name;
  auto config =
      config_of(model, "Keras " + imported.keras_version + ", " + imported.keras_class, a);
  const auto spec = with_data(config, a);
  const auto moving = models::check_keras_model(imported, spec.model, a.model_path);
  const std::string folder = (config_path.parent_path() / folder_name).string();
  models::KerasWeightsFile weights;
  if (!npz.empty()) {
    weights = keras_weights(imported, spec, npz);
    write_weights(weights.weights, weights.running, spec, folder, npz, outputs);
  }
  const auto& ignored = weights.ignored;
  outputs.write(a.output, config_text(config, a));
  outputs.commit();
  out << "imported " << spec.model.name << " (" << imported.keras_class << ", Keras "
      << imported.keras_version << ") from " << a.model_path << ": " << spec.model.layers.size()
      << " layers, " << sim::with_commas(spec.model.total_params()) << " trainable parameters, "
      << sim::with_commas(moving) << " non-trainable (batch-norm moving statistics); wrote "
      << a.output;
  if (!npz.empty())
    out << " and its initial weights from " << npz << " in " << folder << "/";
  out << "\n";
  if (!ignored.empty())
    out << "not imported from " << npz << ": " << models::listed(ignored)
        << " (no layer of the model takes them)\n";
  for (const auto& note : imported.notes)
    out << "note: " << note << "\n";
}

// PyTorch stores parameters of equal values once (zero biases, a norm's ones) and reads the
// copy through an Identity; ipusim gives each layer its own, so counts them once per parameter.
std::string aliased(std::int64_t elements) {
  if (elements == 0)
    return "";
  return ", counting " + sim::with_commas(elements) +
         " stored once for several equal parameters once per parameter";
}

std::string running_statistics(std::int64_t elements) {
  if (elements == 0)
    return "";
  return ", of which " + sim::with_commas(elements) +
         " are batch-norm running statistics, imported as such";
}

// The largest of 32, 16, ..., 1 samples a micro-batch whose replay fits each IPU's memory on
// the default hardware, set in `config` and `spec` (validated at 32); a note for the user when
// it is not 32. Validation bounds the micro-batch only from above, so the spec holds at each
// smaller one without validating again (which would parse a large model again each time).
std::string fitting_micro_batch(nlohmann::json& config, sim::RunSpec& spec, const ImportArgs& a) {
  sim::SimulateOptions options;
  options.allow_oom = true;
  std::optional<sim::RunFigures> first;
  // Shared with each report, not copied into it (a copy of a large model per replay); a report
  // lives only for the statement that takes its figures.
  const std::shared_ptr<const sim::RunSpec> shared(&spec, [](const sim::RunSpec*) {});
  for (std::int64_t micro_batch = 32; micro_batch >= 1; micro_batch /= 2) {
    config["pipeline"]["micro_batch_size"] = micro_batch;
    spec.pipeline.micro_batch_size = micro_batch;
    const auto figures = sim::simulate(shared, options).figures;
    if (!first)
      first = figures;
    if (figures.fits_in_memory)
      return micro_batch == 32
                 ? ""
                 : "micro-batch " + std::to_string(micro_batch) +
                       ", the largest of 32, 16, ..., 1 that fits: at 32 the "
                       "fullest IPU would hold " +
                       sim::memory_figure(double(first->peak_memory_bytes_max)) + " of " +
                       sim::memory_figure(double(spec.hardware.memory_per_ipu_bytes));
  }
  return "the model does not fit one IPU even at micro-batch 1 (" +
         sim::memory_figure(double(first->peak_memory_bytes_max)) +
         " at 32 on the fullest IPU, of " +
         sim::memory_figure(double(spec.hardware.memory_per_ipu_bytes)) +
         "): split it over more IPUs, with --splits or `ipusim plan " + a.output +
         "` (it tries 1, 2, 4 and 8 IPUs per replica)";
}

void import_onnx_file(const ImportArgs& a, std::ostream& out) {
  core::OutputSet outputs;
  outputs.add(a.output, "-o");
  outputs.add_input(a.model_path, kModelRole);
  auto imported =
      models::import_onnx(read_onnx_file(a.model_path), a.model_path, {.verbose = a.verbose});
  const std::filesystem::path config_path(a.output);
  const std::string folder_name = config_path.stem().string() + ".weights";
  auto model = std::move(imported.model);
  model["initial_weights"] = folder_name;
  auto config = config_of(std::move(model), "ONNX, " + imported.producer, a);
  auto spec = with_data(config, a);
  const std::string fit = fitting_micro_batch(config, spec, a);
  const std::string folder = (config_path.parent_path() / folder_name).string();
  write_weights(imported.weights, imported.running_statistics, spec, folder, a.model_path, outputs);
  outputs.write(a.output, config_text(config, a));
  outputs.commit();
  out << "imported " << spec.model.name << " (ONNX, " << imported.producer << ") from "
      << a.model_path << ": " << spec.model.layers.size() << " layers, "
      << sim::with_commas(spec.model.total_params()) << " parameters ("
      << sim::with_commas(imported.initializer_elements) << " in the file's initializers"
      << aliased(imported.aliased_initializer_elements)
      << running_statistics(imported.running_statistics_elements) << "); wrote " << a.output
      << " and its initial weights in " << folder << "/\n";
  for (const auto& note : imported.notes)
    out << "note: " << note << "\n";
  if (!fit.empty())
    out << "note: " << fit << "\n";
}

}  // namespace

void add_import_command(CLI::App& app, std::ostream& out) {
  auto a = std::make_shared<ImportArgs>();
  auto* command = app.add_subcommand(
      "import",
      "Write an ipusim config from an ONNX model (.onnx, with its weights) or a Keras model "
      "(the JSON of model.to_json())");
  command
      ->add_option("model", a->model_path,
                   "The model file: .onnx, or Keras' model.to_json() output")
      ->required()
      ->check(non_empty_path());
  command->add_option("-o,--output", a->output, "The config file to write")
      ->required()
      ->check(non_empty_path());
  command
      ->add_option("--splits", a->splits,
                   "Layer names starting each pipeline stage after the first (pipeline.splits)")
      ->delimiter(',')
      ->allow_extra_args(false);
  command
      ->add_option("--weights", a->weights,
                   "A Keras model's weights as numpy.savez writes them, arrays named "
                   "<layer>/<weight> (default: <model>.npz beside the JSON, if there is one)")
      ->check(non_empty_path());
  command->add_flag("--verbose", a->verbose,
                    "When an ONNX model cannot be imported, list every node that cannot, not "
                    "only the first of each cause");
  command->footer("Example:\n  ipusim import keras_cnn.json -o cnn.json --splits max_pooling2d_1");
  command->callback([a, &out] {
    if (is_onnx(a->model_path) && !a->weights.empty())
      throw core::ConfigError(a->weights, "",
                              "--weights is for Keras models; an ONNX file carries its weights "
                              "as initializers");
    if (is_onnx(a->model_path))
      import_onnx_file(*a, out);
    else
      import_keras_file(*a, out);
  });
}

}  // namespace ipusim::cli
