#include "sim/numeric/training.hpp"

#include <filesystem>

#include "models/kernels.hpp"
#include "models/layer_types.hpp"
#include "models/npy.hpp"
#include "sim/core/error.hpp"
#include "sim/core/output_file.hpp"

namespace ipusim::sim {
namespace {

constexpr std::int64_t kTrainingSamples = 60000;  // Fashion-MNIST's split, mirrored by synthetic
constexpr std::int64_t kTestSamples = 10000;
constexpr std::int64_t kInferenceBatch = 1000;

bool is_fashion_mnist(const DataSpec& data) {
  return data.source == "fashion-mnist";
}

// Opens Fashion-MNIST's split, reporting unusable files as a config error on the data path.
std::unique_ptr<models::DataSource> fashion_mnist(const RunSpec& spec,
                                                  models::FashionMnistSplit split) {
  if (spec.model.classes < 10) {
    throw core::ConfigError(spec.source_of("/data/source"), "/data/source",
                            "fashion-mnist has 10 classes but the model's loss has " +
                                std::to_string(spec.model.classes));
  }
  try {
    return std::make_unique<models::FashionMnist>(spec.data.path, split, spec.model.input_shape);
  } catch (const models::DataError& error) {
    throw core::ConfigError(spec.source_of("/data/path"), "/data/path", error.what());
  }
}

std::unique_ptr<models::DataSource> synthetic(const RunSpec& spec, std::int64_t size) {
  return std::make_unique<models::SyntheticSource>(spec.data.seed, size, spec.model.input_shape,
                                                   spec.model.classes);
}

std::string parameter_text(const std::string& name) {
  const auto dot = name.find('.');
  return "the " + name.substr(dot + 1) + " of " + name.substr(0, dot);
}

// The parameter file to load: the final values if saved, else the initial ones.
std::string parameter_file(const std::string& directory, const std::string& name,
                           const models::Shape& shape) {
  const std::string final_path = directory + "/" + name + ".final.npy";
  const std::string initial_path = directory + "/" + name + ".initial.npy";
  if (std::filesystem::exists(final_path))
    return final_path;
  if (std::filesystem::exists(initial_path))
    return initial_path;
  throw core::ConfigError(final_path, "",
                          "file not found (nor " + name + ".initial.npy); expected a float32 " +
                              "array of shape " + models::shape_text(shape) + ", " +
                              parameter_text(name));
}

}  // namespace

NumericSupport numeric_support(const RunSpec& spec) {
  for (const models::Layer& layer : spec.model.layers) {
    if (layer.type == models::LayerType::kInput || models::has_kernel(layer.type))
      continue;
    return {false, layer.file.empty() ? spec.config_path : layer.file, layer.pointer,
            "layer '" + layer.id + "' (" + models::layer_type_name(layer.type) +
                ") models cost only: it has no numeric kernel, so the kernels cannot run"};
  }
  if (!spec.model.trainable) {
    return {false, spec.source_of("/model/layers"), "/model/layers",
            "numeric mode compares losses, but the model has no softmax_cross_entropy loss"};
  }
  if (spec.pipeline.replication_factor > 1) {
    return {false, spec.source_of("/pipeline/replication_factor"), "/pipeline/replication_factor",
            "numeric mode runs one replica, but replication_factor is " +
                std::to_string(spec.pipeline.replication_factor)};
  }
  return {true, "", "", ""};
}

void throw_unsupported(const NumericSupport& support) {
  throw core::ConfigError(support.file, support.pointer, support.reason);
}

std::unique_ptr<models::DataSource> training_data(const RunSpec& spec) {
  auto source = is_fashion_mnist(spec.data) ? fashion_mnist(spec, models::FashionMnistSplit::kTrain)
                                            : synthetic(spec, kTrainingSamples);
  if (spec.data.shuffle)
    source->shuffle_each_epoch(spec.data.seed);
  return source;
}

TestSet test_data(const RunSpec& spec) {
  if (is_fashion_mnist(spec.data)) {
    auto source = fashion_mnist(spec, models::FashionMnistSplit::kTest);
    const std::int64_t count = source->size();
    return {std::move(source), 0, count};
  }
  return {synthetic(spec, kTrainingSamples + kTestSamples), kTrainingSamples, kTestSamples};
}

std::string data_description(const DataSpec& data) {
  if (is_fashion_mnist(data))
    return "fashion-mnist (" + data.path + ")";
  return "synthetic (seed " + std::to_string(data.seed) + ")";
}

models::Tensor infer(const models::Model& model, const models::ParameterStore& parameters,
                     const models::Tensor& inputs) {
  const int loss = static_cast<int>(model.layers.size()) - 1;
  const int logits = models::producers_of(model, loss).front();
  models::TensorMap values{{models::kModelInput, inputs}};
  models::round_to_dtype(values.at(models::kModelInput), model.dtype);
  const models::ForwardContext context;
  for (const int layer : model.graph.topological_order()) {
    const models::Layer& spec = model.layers[static_cast<std::size_t>(layer)];
    const std::vector<int> producers = models::producers_of(model, layer);
    if (layer == loss)
      continue;
    // Dropout is the identity at inference (inverted dropout scales while training).
    if (spec.type == models::LayerType::kInput || spec.type == models::LayerType::kDropout) {
      values.emplace(layer, values.at(producers.front()));
      continue;
    }
    const auto kernel = models::make_kernel(spec, models::input_shapes_of(model, layer),
                                            model.dtype, parameters.seed());
    std::vector<const models::Tensor*> arguments;
    for (const int producer : producers)
      arguments.push_back(&values.at(producer));
    values.emplace(layer, kernel->forward(arguments, parameters.parameters(layer), context).output);
  }
  return std::move(values.at(logits));
}

std::int64_t correct_predictions(const models::Model& model,
                                 const models::ParameterStore& parameters, TestSet& test) {
  std::int64_t correct = 0;
  models::Tensor inputs;
  std::vector<int> labels;
  for (std::int64_t done = 0; done < test.count; done += kInferenceBatch) {
    const std::int64_t count = std::min(kInferenceBatch, test.count - done);
    test.source->batch(test.first + done, count, inputs, labels);
    const models::Tensor logits = infer(model, parameters, inputs);
    const std::int64_t classes = logits.sample_elements();
    for (std::int64_t i = 0; i < count; ++i) {
      std::int64_t best = 0;
      for (std::int64_t c = 1; c < classes; ++c) {
        if (logits[i * classes + c] > logits[i * classes + best])
          best = c;
      }
      correct += best == labels[static_cast<std::size_t>(i)] ? 1 : 0;
    }
  }
  return correct;
}

std::vector<std::string> parameter_names(const models::Model& model, int layer) {
  const models::Layer& spec = model.layers[static_cast<std::size_t>(layer)];
  std::vector<std::string> names;
  if (spec.type == models::LayerType::kInput)
    return names;
  const auto kernel =
      models::make_kernel(spec, models::input_shapes_of(model, layer), model.dtype, 0);
  int weights = 0;
  int biases = 0;
  for (const models::ParameterSpec& parameter : kernel->parameters()) {
    const bool weight = parameter.role == models::ParameterSpec::Role::kWeight;
    int& seen = weight ? weights : biases;
    const std::string role = weight ? "kernel" : "bias";
    names.push_back(spec.id + "." + role + (seen > 0 ? "_" + std::to_string(seen) : ""));
    ++seen;
  }
  return names;
}

std::vector<std::string> parameter_files(const models::Model& model, const std::string& suffix) {
  std::vector<std::string> files;
  for (int layer = 0; layer < static_cast<int>(model.layers.size()); ++layer) {
    for (const auto& name : parameter_names(model, layer))
      files.push_back(name + "." + suffix + ".npy");
  }
  return files;
}

void save_parameters(core::OutputSet& outputs, const std::string& directory,
                     const std::string& suffix, const models::Model& model,
                     const models::ParameterStore& parameters) {
  for (int layer = 0; layer < static_cast<int>(model.layers.size()); ++layer) {
    const std::vector<std::string> names = parameter_names(model, layer);
    const auto values = parameters.parameters(layer);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const auto bytes = models::npy_bytes(values[i]);
      outputs.write(directory + "/" + names[i] + "." + suffix + ".npy", {bytes.header, bytes.data});
    }
  }
}

void load_parameters(const std::string& directory, const models::Model& model,
                     models::ParameterStore& parameters) {
  for (int layer = 0; layer < static_cast<int>(model.layers.size()); ++layer) {
    const std::vector<std::string> names = parameter_names(model, layer);
    const auto values = parameters.mutable_parameters(layer);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const std::string path = parameter_file(directory, names[i], values[i].shape());
      models::Tensor loaded;
      try {
        loaded = models::read_npy_f32(path);
      } catch (const models::DataError& error) {
        throw core::ConfigError(error.path(), "", error.problem());
      }
      if (loaded.shape() != values[i].shape()) {
        throw core::ConfigError(path, "",
                                "holds an array of shape " + models::shape_text(loaded.shape()) +
                                    ", expected " + models::shape_text(values[i].shape()) + ", " +
                                    parameter_text(names[i]));
      }
      models::round_to_dtype(loaded, model.dtype);
      values[i] = std::move(loaded);
    }
  }
}

}  // namespace ipusim::sim
