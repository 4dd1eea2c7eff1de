#include "sim/numeric/training.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <ostream>

#include "models/data/npy.hpp"
#include "models/kernels/kernels.hpp"
#include "models/layers/layer_types.hpp"
#include "sim/core/config_file.hpp"
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/core/output_file.hpp"
#include "sim/numeric/numeric.hpp"
#include "sim/replay/replay.hpp"

namespace ipusim::sim {
namespace {

constexpr std::int64_t kInferenceBatch = 1000;

std::string parameter_text(const std::string& name) {
  const auto dot = name.find('.');
  return "the " + name.substr(dot + 1) + " of " + name.substr(0, dot);
}

// The parameter file to load: the final values if saved, else the initial ones.
std::string parameter_file(const std::string& directory, const std::string& name,
                           const models::Shape& shape) {
  const std::string final_path = directory + "/" + name + ".final.npy";
  const std::string initial_path = directory + "/" + name + ".initial.npy";
  // A FIFO or a folder under either name is found, and refused as what it is when read.
  if (std::filesystem::exists(final_path))
    return final_path;
  if (std::filesystem::exists(initial_path))
    return initial_path;
  throw core::ConfigError(final_path, "",
                          "file not found (nor " + name + ".initial.npy); expected a float32 " +
                              "array of shape " + models::shape_text(shape) + ", " +
                              parameter_text(name));
}

// Keras' variable names: kernel, bias, gamma (a normalisation's scale), embeddings; and
// position_table's table and class_token's token.
std::string role_name(models::ParameterSpec::Role role) {
  switch (role) {
    case models::ParameterSpec::Role::kWeight:
      return "kernel";
    case models::ParameterSpec::Role::kBias:
      return "bias";
    case models::ParameterSpec::Role::kScale:
      return "gamma";
    case models::ParameterSpec::Role::kEmbedding:
      return "embeddings";
    case models::ParameterSpec::Role::kTable:
      return "table";
    case models::ParameterSpec::Role::kToken:
      return "token";
  }
  return "?";
}

}  // namespace

models::Tensor infer(const models::Model& model, const models::ParameterStore& parameters,
                     const models::Tensor& inputs) {
  const int loss = static_cast<int>(model.layers.size()) - 1;
  const int logits = models::producers_of(model, loss).front();
  models::TensorMap values{{models::kModelInput, inputs}};
  if (!models::input_holds_ids(model))
    models::round_to_dtype(values.at(models::kModelInput), model.dtype);
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
    models::ForwardContext context;
    context.inference = true;
    context.running = parameters.running_statistics(layer);
    std::vector<models::Tensor> scratch;
    values.emplace(
        layer,
        kernel->forward(arguments, parameters.kernel_parameters(layer, scratch), context).output);
  }
  return std::move(values.at(logits));
}

Predictions correct_predictions(const models::Model& model,
                                const models::ParameterStore& parameters, TestSet& test) {
  Predictions predictions;
  models::Tensor inputs;
  std::vector<int> labels;
  for (std::int64_t done = 0; done < test.count; done += kInferenceBatch) {
    const std::int64_t count = std::min(kInferenceBatch, test.count - done);
    test.source->batch(test.first + done, count, inputs, labels);
    const models::Tensor logits = infer(model, parameters, inputs);
    const std::int64_t classes = logits.shape().back();
    for (std::size_t row = 0; row < labels.size(); ++row) {
      if (labels[row] < 0)
        continue;
      const float* x = logits.data() + static_cast<std::int64_t>(row) * classes;
      predictions.correct += std::max_element(x, x + classes) - x == labels[row] ? 1 : 0;
      ++predictions.targets;
    }
  }
  return predictions;
}

std::vector<std::string> parameter_names(const models::Model& model, int layer) {
  const models::Layer& spec = model.layers[static_cast<std::size_t>(layer)];
  std::vector<std::string> names;
  if (spec.type == models::LayerType::kInput)
    return names;
  const auto kernel =
      models::make_kernel(spec, models::input_shapes_of(model, layer), model.dtype, 0);
  std::vector<models::ParameterSpec> parameters = kernel->parameters();
  // A tied layer's first parameter is its embedding's word matrix, named (and saved) there.
  if (!spec.tied_to.empty())
    parameters.erase(parameters.begin());
  std::map<std::string, int> seen;
  for (const models::ParameterSpec& parameter : parameters) {
    const std::string role = role_name(parameter.role);
    const int count = seen[role]++;
    names.push_back(spec.id + "." + role + (count > 0 ? "_" + std::to_string(count) : ""));
  }
  return names;
}

std::vector<std::string> running_statistics_names(const models::Model& model, int layer) {
  const models::Layer& spec = model.layers[static_cast<std::size_t>(layer)];
  if (spec.type != models::LayerType::kBatchNorm)
    return {};
  return {spec.id + ".moving_mean", spec.id + ".moving_variance"};
}

std::vector<std::string> parameter_files(const models::Model& model, const std::string& suffix) {
  std::vector<std::string> files;
  for (int layer = 0; layer < static_cast<int>(model.layers.size()); ++layer) {
    for (const auto& name : parameter_names(model, layer))
      files.push_back(name + "." + suffix + ".npy");
    if (suffix != "gradient") {
      for (const auto& name : running_statistics_names(model, layer))
        files.push_back(name + "." + suffix + ".npy");
    }
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
    const auto running_names = running_statistics_names(model, layer);
    const auto running = parameters.running_statistics(layer);
    for (std::size_t i = 0; i < running_names.size(); ++i) {
      const auto bytes = models::npy_bytes(running[i]);
      outputs.write(directory + "/" + running_names[i] + "." + suffix + ".npy",
                    {bytes.header, bytes.data});
    }
  }
}

// Replaces `values` by the files of `names` in `directory`, checking each file's shape.
void load_tensors(const std::string& directory, const std::vector<std::string>& names,
                  std::span<models::Tensor> values, models::DType dtype) {
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
    models::round_to_dtype(loaded, dtype);
    values[i] = std::move(loaded);
  }
}

// A batch norm's moving mean and variance when the folder has either (then both must be
// there); without them they stay at 0 and 1, so a folder saved without them still loads.
void load_running_statistics(const std::string& directory, const models::Model& model, int layer,
                             models::ParameterStore& parameters) {
  const auto names = running_statistics_names(model, layer);
  const bool any = std::any_of(names.begin(), names.end(), [&](const std::string& name) {
    return std::filesystem::exists(directory + "/" + name + ".final.npy") ||
           std::filesystem::exists(directory + "/" + name + ".initial.npy");
  });
  if (any)
    load_tensors(directory, names, parameters.mutable_running_statistics(layer), model.dtype);
}

void load_parameters(const std::string& directory, const models::Model& model,
                     models::ParameterStore& parameters) {
  for (int layer = 0; layer < static_cast<int>(model.layers.size()); ++layer) {
    load_tensors(directory, parameter_names(model, layer), parameters.mutable_parameters(layer),
                 model.dtype);
    load_running_statistics(directory, model, layer, parameters);
  }
}

// --- Training ------------------------------------------------------------------------------

namespace {

constexpr std::size_t kProgressWidth = 30;

// How many weight updates the run makes: whole epochs of the training set, capped by --steps.
std::int64_t total_steps(const TrainRequest& request, const RunSpec& spec, std::int64_t samples) {
  const std::int64_t per_update = spec.pipeline.samples_per_weight_update();
  const std::int64_t per_epoch = samples / per_update;
  if (per_epoch == 0) {
    throw core::ConfigError(spec.source_of("/pipeline/gradient_accumulation_count"),
                            "/pipeline/gradient_accumulation_count",
                            "one weight update takes " + with_commas(per_update) +
                                " samples, more than the " + with_commas(samples) +
                                " of the training set");
  }
  const std::int64_t steps = request.epochs * per_epoch;
  return request.steps > 0 ? std::min(steps, request.steps) : steps;
}

std::string progress_line(std::int64_t done, std::int64_t total, double mean_loss) {
  const auto filled = static_cast<std::size_t>(done * kProgressWidth / total);
  std::string share = std::to_string(done * 100 / total) + "%";
  share.insert(0, 4 - share.size(), ' ');
  return "[" + std::string(filled, '#') + std::string(kProgressWidth - filled, ' ') + "] " + share +
         "  step " + std::to_string(done) + "/" + std::to_string(total) + "  loss " +
         fixed(mean_loss, 4) + " nats\n";
}

// Prints a progress line each time another tenth of the steps is done, with the mean loss of
// the micro-batches since the previous line.
class Progress {
 public:
  Progress(std::ostream& out, std::int64_t total) : out_(out), total_(total) {}

  void step_done(std::int64_t done, const std::vector<float>& losses) {
    for (const float loss : losses)
      sum_ += loss;
    count_ += static_cast<std::int64_t>(losses.size());
    if (done * 10 / total_ == (done - 1) * 10 / total_ && done != total_)
      return;
    out_ << progress_line(done, total_, sum_ / double(count_));
    sum_ = 0;
    count_ = 0;
  }

 private:
  std::ostream& out_;
  std::int64_t total_;
  double sum_ = 0;
  std::int64_t count_ = 0;
};

std::string header(const RunSpec& spec, std::int64_t steps, std::int64_t per_epoch) {
  const auto& p = spec.pipeline;
  return "ipusim train: " + spec.model.name + " (" + spec.config_path + ") on " +
         data_description(spec.data) + "\n" + spec.schedule->name() + " schedule, " +
         std::to_string(p.stages.size()) + " stage(s) on " + std::to_string(p.ipus_per_replica()) +
         " IPU(s); " + with_commas(p.samples_per_weight_update()) +
         " samples per step (micro-batch " + std::to_string(p.micro_batch_size) +
         " x gradient accumulation " + std::to_string(p.gradient_accumulation_count) + ")\n" +
         "Training " + with_commas(steps) + " step(s) of " + with_commas(per_epoch) +
         " per epoch, " + with_commas(steps * p.samples_per_weight_update()) + " samples\n";
}

std::string timing(const RunSpec& spec, const ReplayResult& first, std::int64_t steps,
                   double wall_seconds) {
  wall_seconds = std::max(wall_seconds, 1e-6);  // a clock too coarse for a tiny run
  const double clock = spec.hardware.clock_hz;
  const double step_seconds = double(first.step_cycles) / clock;
  const double samples = double(spec.pipeline.samples_per_weight_update());
  return "Simulated time: " + fixed(step_seconds * 1e3, 4) + " ms per step (" +
         with_commas(first.step_cycles) + " cycles), " +
         with_commas(std::llround(samples / step_seconds)) + " samples/s; " +
         fixed(step_seconds * double(steps) * 1e3, 3) + " ms for " + std::to_string(steps) +
         " step(s)\n" + "Wall time: " + fixed(wall_seconds, 2) + " s (" +
         with_commas(std::llround(samples * double(steps) / wall_seconds)) + " samples/s)\n";
}

// Every file --save writes, declared before training so that a path that cannot be written is
// reported at once, and no file is written unless all are.
void declare_saved_files(core::OutputSet& outputs, const std::string& directory,
                         const RunSpec& spec) {
  outputs.add_folder(directory, "--save");
  std::vector<std::string> files = {"losses.npy", "inputs.npy", "labels.npy"};
  for (const char* suffix : {"initial", "final", "gradient"}) {
    const auto parameters = parameter_files(spec.model, suffix);
    files.insert(files.end(), parameters.begin(), parameters.end());
  }
  for (const auto& file : files)
    outputs.add(directory + "/" + file, "--save");
}

// The parameter files load_parameters may read from `directory`, declared inputs: an output
// there would replace them.
void declare_loaded_files(core::OutputSet& outputs, const std::string& directory,
                          const models::Model& model, const std::string& role) {
  for (const char* suffix : {"initial", "final"}) {
    for (const auto& file : parameter_files(model, suffix))
      outputs.add_input(directory + "/" + file, role);
  }
}

// The model's initial_weights folder, relative to the config that names it; empty without one.
std::filesystem::path initial_weights_folder(const RunSpec& spec) {
  std::filesystem::path folder = spec.model.initial_weights;
  const std::filesystem::path config = spec.source_of("/model/initial_weights");
  if (!folder.empty() && folder.is_relative() && std::filesystem::is_regular_file(config))
    folder = config.parent_path() / folder;
  return folder;
}

void write_npy(core::OutputSet& outputs, const std::string& path, const models::NpyBytes& bytes) {
  outputs.write(path, {bytes.header, bytes.data});
}

// Writes what --save promises besides the parameters: losses, inputs and labels consumed.
void save_run(core::OutputSet& outputs, const std::string& directory, const RunSpec& spec,
              const NumericPipeline& pipeline, models::DataSource& data) {
  const auto& losses = pipeline.losses();
  const auto micro_batches = spec.pipeline.gradient_accumulation_count;
  models::Tensor flat({static_cast<std::int64_t>(losses.size()), micro_batches});
  for (std::size_t s = 0; s < losses.size(); ++s) {
    for (std::int64_t m = 0; m < micro_batches; ++m)
      flat[static_cast<std::int64_t>(s) * micro_batches + m] = losses[s][m];
  }
  models::Tensor inputs;
  std::vector<int> labels;
  data.batch(0, pipeline.steps() * spec.pipeline.samples_per_weight_update(), inputs, labels);
  const std::vector<std::int32_t> labels32(labels.begin(), labels.end());
  write_npy(outputs, directory + "/losses.npy", models::npy_bytes(flat));
  write_npy(outputs, directory + "/inputs.npy", models::npy_bytes(inputs));
  models::Shape labels_shape{static_cast<std::int64_t>(labels32.size())};
  if (data.labels_per_sample() > 1)
    labels_shape = {labels_shape[0] / data.labels_per_sample(), data.labels_per_sample()};
  write_npy(outputs, directory + "/labels.npy", models::npy_bytes(labels_shape, labels32));
}

void save_gradients(core::OutputSet& outputs, const std::string& directory, const RunSpec& spec,
                    const NumericPipeline& pipeline) {
  for (const auto& [layer, gradients] : pipeline.first_gradients()) {
    const auto names = parameter_names(spec.model, layer);
    for (std::size_t i = 0; i < gradients.size(); ++i) {
      write_npy(outputs, directory + "/" + names[i] + ".gradient.npy",
                models::npy_bytes(gradients[i]));
    }
  }
}

// Runs `steps` weight updates, one replay each; returns the first replay's timing and the
// training's wall time in seconds.
std::pair<ReplayResult, double> run_steps(const RunSpec& spec, NumericPipeline& pipeline,
                                          std::int64_t steps, std::ostream& out) {
  const auto started = std::chrono::steady_clock::now();
  const CostModel cost = build_cost_model(spec);
  const ReplayOptions options{false, {&pipeline}, {}};
  ReplayResult first;
  Progress progress(out, steps);
  for (std::int64_t step = 0; step < steps; ++step) {
    ReplayResult result = replay(spec, cost, options);
    if (step == 0)
      first = std::move(result);
    progress.step_done(step + 1, pipeline.losses().back());
  }
  const auto wall = std::chrono::steady_clock::now() - started;
  return {std::move(first), std::chrono::duration<double>(wall).count()};
}

// The parameters to start from: the spec's initialisation or --load; saved with --save.
models::ParameterStore initial_parameters(const TrainRequest& request, const RunSpec& spec,
                                          core::OutputSet& outputs) {
  models::ParameterStore parameters = starting_parameters(spec);
  if (!request.load.empty())
    load_parameters(request.load, spec.model, parameters);
  if (!request.save.empty())
    save_parameters(outputs, request.save, "initial", spec.model, parameters);
  return parameters;
}

}  // namespace

void declare_run_inputs(core::OutputSet& outputs, const RunSpec& spec) {
  if (spec.document)
    core::add_inputs(outputs, *spec.document);
  if (const auto folder = initial_weights_folder(spec); !folder.empty()) {
    declare_loaded_files(outputs, folder.string(), spec.model,
                         "a file of the config's initial_weights this command reads");
  }
  if (spec.data.source != "fashion-mnist")
    return;
  for (const auto split : {models::FashionMnistSplit::kTrain, models::FashionMnistSplit::kTest}) {
    const auto [images, labels] = models::fashion_mnist_files(spec.data.path, split);
    outputs.add_input(images, "a Fashion-MNIST file this command reads");
    outputs.add_input(labels, "a Fashion-MNIST file this command reads");
  }
}

models::ParameterStore starting_parameters(const RunSpec& spec) {
  models::ParameterStore parameters(spec.model, training_options(spec));
  if (spec.model.initial_weights.empty())
    return parameters;
  const std::filesystem::path folder = initial_weights_folder(spec);
  if (!std::filesystem::is_directory(folder)) {
    throw core::ConfigError(
        spec.source_of("/model/initial_weights"), "/model/initial_weights",
        "expected a directory of .npy files, but " + folder.string() + " is not one");
  }
  load_parameters(folder.string(), spec.model, parameters);
  return parameters;
}

// "Test accuracy: 81.8% (8,180 of 10,000 test samples)" over the first `samples` (-1: all).
std::string test_accuracy(const RunSpec& spec, const models::ParameterStore& parameters,
                          std::int64_t samples, const models::DataSource& data) {
  if (samples == 0)
    return "Test accuracy: not measured (--test-samples 0)\n";
  TestSet test = test_data(spec);
  if (samples > 0)
    test.count = std::min(test.count, samples);
  const Predictions predictions = correct_predictions(spec.model, parameters, test);
  const char* unit = data.labels_per_sample() == 1         ? " test samples"
                     : spec.data.labels == "masked_tokens" ? " masked test tokens"
                                                           : " test tokens";
  return "Test accuracy: " + percent(double(predictions.correct) / double(predictions.targets)) +
         " (" + with_commas(predictions.correct) + " of " + with_commas(predictions.targets) +
         unit + ")\n";
}

void train(const RunSpec& spec, const TrainRequest& request, std::ostream& out) {
  const NumericSupport support = numeric_support(spec);
  if (!support.supported)
    throw_unsupported(support);
  core::OutputSet outputs;
  if (!request.save.empty())
    declare_saved_files(outputs, request.save, spec);
  declare_run_inputs(outputs, spec);
  if (!request.load.empty())
    declare_loaded_files(outputs, request.load, spec.model, "a --load file this command reads");
  models::ParameterStore parameters = initial_parameters(request, spec, outputs);
  auto data = training_data(spec);
  const std::int64_t steps = total_steps(request, spec, data->size());
  out << header(spec, steps, data->size() / spec.pipeline.samples_per_weight_update());
  NumericPipeline pipeline(spec, parameters, *data,
                           {.keep_first_gradients = !request.save.empty()});
  const auto [first, wall] = run_steps(spec, pipeline, steps, out);
  out << test_accuracy(spec, parameters, request.test_samples, *data);
  out << timing(spec, first, steps, wall);
  if (request.save.empty())
    return;
  save_gradients(outputs, request.save, spec, pipeline);
  save_parameters(outputs, request.save, "final", spec.model, parameters);
  save_run(outputs, request.save, spec, pipeline, *data);
  outputs.commit();
  out << "Saved parameters, first gradients, losses, inputs and labels to " << request.save << "\n";
}

}  // namespace ipusim::sim
