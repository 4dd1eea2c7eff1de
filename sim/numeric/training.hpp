#pragma once
// What numeric runs need around the pipeline: the data a spec asks for, whether numeric mode
// can run, test accuracy by inference through the whole model, parameters as .npy files named
// by layer and parameter ("dense128.kernel.final.npy"), and training a config end to end.
//
// Data: Fashion-MNIST's training and test files, or the seeded synthetic source. The synthetic
// set mirrors Fashion-MNIST's sizes: samples 0 .. 59,999 train and 60,000 .. 69,999 test, all
// drawn around the same class prototypes.

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "models/data/data.hpp"
#include "models/kernels/stage_executor.hpp"
#include "sim/spec/spec.hpp"

namespace ipusim::core {
class OutputSet;
}

namespace ipusim::sim {

// Whether numeric mode can run on `spec`; otherwise why not, naming the config entry.
struct NumericSupport {
  bool supported = false;
  std::string file;     // the config file that sets that entry
  std::string pointer;  // JSON pointer of the entry that prevents it
  std::string reason;
};
NumericSupport numeric_support(const RunSpec& spec);
// Throws the core::ConfigError that `support` describes.
[[noreturn]] void throw_unsupported(const NumericSupport& support);

// The training stream; throws core::ConfigError (at /data) when the files are missing or
// truncated or do not fit the model.
std::unique_ptr<models::DataSource> training_data(const RunSpec& spec);

// The test images: `count` samples of `source` from stream index `first`.
struct TestSet {
  std::unique_ptr<models::DataSource> source;
  std::int64_t first = 0;
  std::int64_t count = 0;
};
TestSet test_data(const RunSpec& spec);

// "fashion-mnist (/usr/share/datasets/fashion-mnist)" or "synthetic (seed 0)".
std::string data_description(const DataSpec& data);

// The model's logits for `inputs` (batch first), by a forward pass without dropout and without
// the loss, on the parameters as they are.
models::Tensor infer(const models::Model& model, const models::ParameterStore& parameters,
                     const models::Tensor& inputs);

// How many of the test targets infer() classifies right (arg-max of the logits): one per
// sample, or with masked tokens one per masked token.
struct Predictions {
  std::int64_t correct = 0;
  std::int64_t targets = 0;
};
Predictions correct_predictions(const models::Model& model,
                                const models::ParameterStore& parameters, TestSet& test);

// "<layer id>.<parameter>" of each parameter tensor of `layer`, named by role as Keras names
// them: "kernel" for weights, "bias" for biases (a normalisation's beta too), "gamma" for a
// normalisation's scale, "embeddings" for lookup tables; numbered from the second of a role
// ("kernel_1").
std::vector<std::string> parameter_names(const models::Model& model, int layer);

// "<layer>.moving_mean" and "<layer>.moving_variance" of a batch norm (Keras' names for its
// running statistics); none for other layers.
std::vector<std::string> running_statistics_names(const models::Model& model, int layer);

// "<layer>.<parameter>.<suffix>.npy" for every parameter tensor of the model, and for a batch
// norm's running statistics unless `suffix` is "gradient": the files save_parameters writes,
// for declaring them before a run.
std::vector<std::string> parameter_files(const models::Model& model, const std::string& suffix);

// Writes every parameter tensor to `<directory>/<layer>.<parameter>.<suffix>.npy` in `outputs`,
// which must hold those paths (see parameter_files) and writes them at its commit.
void save_parameters(core::OutputSet& outputs, const std::string& directory,
                     const std::string& suffix, const models::Model& model,
                     const models::ParameterStore& parameters);

// Reads `<layer>.<parameter>.final.npy`, or `.initial.npy` when there is no final one, for every
// parameter tensor, and a batch norm's running statistics when the folder has them; throws
// core::ConfigError naming the file and the expected shape.
void load_parameters(const std::string& directory, const models::Model& model,
                     models::ParameterStore& parameters);

// Declares the files a run of `spec` reads inputs of `outputs`, so that no output replaces one:
// the config and its includes, the initial_weights folder's parameter files, and the
// Fashion-MNIST files when the data are those.
void declare_run_inputs(core::OutputSet& outputs, const RunSpec& spec);

// The parameters a numeric run starts from: the seeded initialisation, or the model's
// initial_weights folder (relative to the config that names it) when it has one.
models::ParameterStore starting_parameters(const RunSpec& spec);

// What `ipusim train` asks for besides the config.
struct TrainRequest {
  std::int64_t epochs = 1;
  std::int64_t steps = 0;          // 0: no cap
  std::string save;                // directory for the .npy files, or empty
  std::string load;                // directory to start from, or empty
  std::int64_t test_samples = -1;  // classify the first this many test samples; -1: all, 0: none
};

// Trains `spec` through the simulated pipeline, each weight update one replay of the schedule
// with the kernels running, and prints to `out` what it does, a progress line at every tenth of
// the steps (the same on a terminal and in a file), the test accuracy and the simulated time
// beside the wall time (the accuracy over the first `test_samples`, or none). With `save`, writes
// the initial and final parameters, the first gradients, the losses, inputs and labels, all or
// none. Throws core::ConfigError when numeric mode cannot run on `spec` or one weight update needs
// more samples than the training set.
void train(const RunSpec& spec, const TrainRequest& request, std::ostream& out);

}  // namespace ipusim::sim
