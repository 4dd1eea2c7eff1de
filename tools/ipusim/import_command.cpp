// `ipusim import`: a model file from a framework as an ipusim config (models/keras_import.hpp).

#include <algorithm>
#include <filesystem>
#include <memory>
#include <ostream>

#include "models/keras_import.hpp"
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/core/json_text.hpp"
#include "tools/ipusim/command.hpp"

namespace ipusim::cli {
namespace {

struct ImportArgs {
  std::string model_path;
  std::string output;
  std::vector<std::string> splits;
};

nlohmann::json read_model_file(const std::string& path) {
  if (std::filesystem::path(path).extension() == ".onnx")
    throw core::ConfigError(path, "",
                            "ONNX import is not built yet; ipusim imports the JSON that Keras' "
                            "model.to_json() writes");
  std::string text;
  if (const auto why = core::read_regular_file(path, &text))
    throw core::ConfigError(path, "", *why);
  return core::parse_json_text(text, path);
}

// The config: the imported model, the split asked for, and a pipeline to start from: the
// default schedule (Grouped), micro-batch 32, a GAC of at least 16 that it accepts (a multiple of
// twice the stages).
nlohmann::json config_of(const models::KerasImport& imported, const ImportArgs& a) {
  const auto stages = std::int64_t(a.splits.size()) + 1;
  nlohmann::json config = {
      {"description", "Imported by ipusim import from " + a.model_path + " (Keras " +
                          imported.keras_version + ", " + imported.keras_class + ")."},
      {"model", imported.model},
      {"pipeline",
       {{"micro_batch_size", 32},
        {"gradient_accumulation_count", std::max<std::int64_t>(16, 2 * stages)}}}};
  if (!a.splits.empty())
    config["pipeline"]["splits"] = a.splits;
  return config;
}

}  // namespace

void add_import_command(CLI::App& app, std::ostream& out) {
  auto a = std::make_shared<ImportArgs>();
  auto* command = app.add_subcommand(
      "import", "Write an ipusim config from a Keras model (the JSON of model.to_json())");
  command->add_option("model", a->model_path, "The model file: Keras' model.to_json() output")
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
  command->footer("Example:\n  ipusim import keras_cnn.json -o cnn.json --splits max_pooling2d_1");
  command->callback([a, &out] {
    core::OutputSet outputs;
    outputs.add(a->output, "-o");
    const auto imported = models::import_keras(read_model_file(a->model_path), a->model_path);
    const auto config = config_of(imported, *a);
    std::optional<sim::RunSpec> spec;
    try {
      spec = sim::build_run_spec(core::ConfigDocument::from_json(config, a->output));
    } catch (const core::ConfigError& error) {
      throw core::ConfigError(a->model_path, "",
                              "the imported model does not validate, so nothing was written: " +
                                  std::string(error.what()));
    }
    const auto moving = models::check_keras_model(imported, spec->model, a->model_path);
    outputs.write(a->output, config.dump(2) + "\n");
    outputs.commit();
    out << "imported " << spec->model.name << " (" << imported.keras_class << ", Keras "
        << imported.keras_version << ") from " << a->model_path << ": " << spec->model.layers.size()
        << " layers, " << sim::with_commas(spec->model.total_params()) << " trainable parameters, "
        << sim::with_commas(moving) << " non-trainable (batch-norm moving statistics); wrote "
        << a->output << "\n";
  });
}

}  // namespace ipusim::cli
