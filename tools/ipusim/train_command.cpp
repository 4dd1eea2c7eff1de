// ipusim train: trains a config through the simulated pipeline, each weight update one replay
// of the schedule with the kernels running (sim/numeric.hpp), and reports test accuracy and the
// simulated time beside the wall time. Progress lines are printed at every tenth of the run,
// so that the output is the same on a terminal and in a file.

#include <chrono>
#include <memory>
#include <ostream>

#include "models/npy.hpp"
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/numeric/numeric.hpp"
#include "sim/numeric/training.hpp"
#include "sim/replay/replay.hpp"
#include "tools/ipusim/command.hpp"

namespace ipusim::cli {
namespace {

constexpr std::size_t kProgressWidth = 30;

struct TrainOptions {
  ConfigArgs config;
  std::int64_t epochs = 1;
  std::int64_t steps = 0;  // 0: no cap
  std::string save;
  std::string load;
};

// How many weight updates the run makes: whole epochs of the training set, capped by --steps.
std::int64_t total_steps(const TrainOptions& o, const sim::RunSpec& spec, std::int64_t samples) {
  const std::int64_t per_update = spec.pipeline.samples_per_weight_update();
  const std::int64_t per_epoch = samples / per_update;
  if (per_epoch == 0) {
    throw core::ConfigError(spec.source_of("/pipeline/gradient_accumulation_count"),
                            "/pipeline/gradient_accumulation_count",
                            "one weight update takes " + sim::with_commas(per_update) +
                                " samples, more than the " + sim::with_commas(samples) +
                                " of the training set");
  }
  const std::int64_t steps = o.epochs * per_epoch;
  return o.steps > 0 ? std::min(steps, o.steps) : steps;
}

std::string progress_line(std::int64_t done, std::int64_t total, double mean_loss) {
  const auto filled = static_cast<std::size_t>(done * kProgressWidth / total);
  std::string percent = std::to_string(done * 100 / total) + "%";
  percent.insert(0, 4 - percent.size(), ' ');
  return "[" + std::string(filled, '#') + std::string(kProgressWidth - filled, ' ') + "] " +
         percent + "  step " + std::to_string(done) + "/" + std::to_string(total) + "  loss " +
         sim::fixed(mean_loss, 4) + " nats\n";
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

std::string header(const sim::RunSpec& spec, std::int64_t steps, std::int64_t per_epoch) {
  const auto& p = spec.pipeline;
  return "ipusim train: " + spec.model.name + " (" + spec.config_path + ") on " +
         sim::data_description(spec.data) + "\n" + spec.schedule->name() + " schedule, " +
         std::to_string(p.stages.size()) + " stage(s) on " + std::to_string(p.ipus_per_replica()) +
         " IPU(s); " + sim::with_commas(p.samples_per_weight_update()) +
         " samples per step (micro-batch " + std::to_string(p.micro_batch_size) +
         " x gradient accumulation " + std::to_string(p.gradient_accumulation_count) + ")\n" +
         "Training " + sim::with_commas(steps) + " step(s) of " + sim::with_commas(per_epoch) +
         " per epoch, " + sim::with_commas(steps * p.samples_per_weight_update()) + " samples\n";
}

std::string timing(const sim::RunSpec& spec, const sim::ReplayResult& first, std::int64_t steps,
                   double wall_seconds) {
  wall_seconds = std::max(wall_seconds, 1e-6);  // a clock too coarse for a tiny run
  const double clock = spec.hardware.clock_hz;
  const double step_seconds = double(first.step_cycles) / clock;
  const double samples = double(spec.pipeline.samples_per_weight_update());
  return "Simulated time: " + sim::fixed(step_seconds * 1e3, 4) + " ms per step (" +
         sim::with_commas(first.step_cycles) + " cycles), " +
         sim::with_commas(std::llround(samples / step_seconds)) + " samples/s; " +
         sim::fixed(step_seconds * double(steps) * 1e3, 3) + " ms for " + std::to_string(steps) +
         " step(s)\n" + "Wall time: " + sim::fixed(wall_seconds, 2) + " s (" +
         sim::with_commas(std::llround(samples * double(steps) / wall_seconds)) + " samples/s)\n";
}

// Every file --save writes, declared before training so that a path that cannot be written is
// reported at once, and no file is written unless all are.
void declare_saved_files(core::OutputSet& outputs, const std::string& directory,
                         const sim::RunSpec& spec) {
  outputs.add_folder(directory, "--save");
  std::vector<std::string> files = {"losses.npy", "inputs.npy", "labels.npy"};
  for (const char* suffix : {"initial", "final", "gradient"}) {
    const auto parameters = sim::parameter_files(spec.model, suffix);
    files.insert(files.end(), parameters.begin(), parameters.end());
  }
  for (const auto& file : files)
    outputs.add(directory + "/" + file, "--save");
}

void write_npy(core::OutputSet& outputs, const std::string& path, const models::NpyBytes& bytes) {
  outputs.write(path, {bytes.header, bytes.data});
}

// Writes what --save promises besides the parameters: losses, inputs and labels consumed.
void save_run(core::OutputSet& outputs, const std::string& directory, const sim::RunSpec& spec,
              const sim::NumericPipeline& pipeline, models::DataSource& data) {
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
  write_npy(outputs, directory + "/labels.npy",
            models::npy_bytes({static_cast<std::int64_t>(labels32.size())}, labels32));
}

void save_gradients(core::OutputSet& outputs, const std::string& directory,
                    const sim::RunSpec& spec, const sim::NumericPipeline& pipeline) {
  for (const auto& [layer, gradients] : pipeline.first_gradients()) {
    const auto names = sim::parameter_names(spec.model, layer);
    for (std::size_t i = 0; i < gradients.size(); ++i) {
      write_npy(outputs, directory + "/" + names[i] + ".gradient.npy",
                models::npy_bytes(gradients[i]));
    }
  }
}

// Runs `steps` weight updates, one replay each; returns the first replay's timing and the
// training's wall time in seconds.
std::pair<sim::ReplayResult, double> run_steps(const sim::RunSpec& spec,
                                               sim::NumericPipeline& pipeline, std::int64_t steps,
                                               std::ostream& out) {
  const auto started = std::chrono::steady_clock::now();
  const sim::CostModel cost = sim::build_cost_model(spec, *spec.schedule);
  const sim::ReplayOptions options{false, {&pipeline}};
  sim::ReplayResult first;
  Progress progress(out, steps);
  for (std::int64_t step = 0; step < steps; ++step) {
    sim::ReplayResult result = sim::replay(spec, *spec.schedule, cost, options);
    if (step == 0)
      first = std::move(result);
    progress.step_done(step + 1, pipeline.losses().back());
  }
  const auto wall = std::chrono::steady_clock::now() - started;
  return {std::move(first), std::chrono::duration<double>(wall).count()};
}

// The parameters to start from: the spec's initialisation or --load; saved with --save.
models::ParameterStore initial_parameters(const TrainOptions& o, const sim::RunSpec& spec,
                                          core::OutputSet& outputs) {
  models::ParameterStore parameters(spec.model, sim::training_options(spec));
  if (!o.load.empty())
    sim::load_parameters(o.load, spec.model, parameters);
  if (!o.save.empty())
    sim::save_parameters(outputs, o.save, "initial", spec.model, parameters);
  return parameters;
}

void train(const TrainOptions& o, std::ostream& out) {
  const sim::RunSpec spec = load(o.config);
  const sim::NumericSupport support = sim::numeric_support(spec);
  if (!support.supported)
    sim::throw_unsupported(support);
  core::OutputSet outputs;
  if (!o.save.empty())
    declare_saved_files(outputs, o.save, spec);
  models::ParameterStore parameters = initial_parameters(o, spec, outputs);
  auto data = sim::training_data(spec);
  sim::TestSet test = sim::test_data(spec);
  const std::int64_t steps = total_steps(o, spec, data->size());
  out << header(spec, steps, data->size() / spec.pipeline.samples_per_weight_update());
  sim::NumericPipeline pipeline(spec, parameters, *data, {.keep_first_gradients = !o.save.empty()});
  const auto [first, wall] = run_steps(spec, pipeline, steps, out);
  const std::int64_t correct = sim::correct_predictions(spec.model, parameters, test);
  out << "Test accuracy: " << sim::percent(double(correct) / double(test.count)) << " ("
      << sim::with_commas(correct) << " of " << sim::with_commas(test.count) << " test samples)\n";
  out << timing(spec, first, steps, wall);
  if (o.save.empty())
    return;
  save_gradients(outputs, o.save, spec, pipeline);
  sim::save_parameters(outputs, o.save, "final", spec.model, parameters);
  save_run(outputs, o.save, spec, pipeline, *data);
  outputs.commit();
  out << "Saved parameters, first gradients, losses, inputs and labels to " << o.save << "\n";
}

}  // namespace

void add_train_command(CLI::App& app, std::ostream& out) {
  auto o = std::make_shared<TrainOptions>();
  auto* command = app.add_subcommand(
      "train", "Train a config through the simulated pipeline and report test accuracy");
  add_config_options(command, o->config);
  // Bounded so that epochs x steps per epoch x samples per step stays a 64-bit count.
  command->add_option("--epochs", o->epochs, "Passes over the training set (default 1)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1'000'000}));
  command->add_option("--steps", o->steps, "Stop after this many weight updates")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  command
      ->add_option("--save", o->save,
                   "Write initial and final parameters, first gradients, losses, inputs and "
                   "labels as .npy files to this directory (created if missing), all or none")
      ->check(non_empty_path());
  command
      ->add_option("--load", o->load,
                   "Start from the parameters in this directory (<layer>.<parameter>.final.npy "
                   "or .initial.npy)")
      ->check(non_empty_path());
  command->footer("Example:\n  ipusim train configs/tf1_mnist_2ipu.json --epochs 1 --save out");
  command->callback([o, &out] { train(*o, out); });
}

}  // namespace ipusim::cli
