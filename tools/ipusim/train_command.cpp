// `ipusim train`: trains a config through the simulated pipeline and reports test accuracy and
// the simulated time beside the wall time (sim/numeric/training.hpp).

#include <memory>
#include <ostream>

#include "sim/numeric/training.hpp"
#include "tools/ipusim/command.hpp"

namespace ipusim::cli {

void add_train_command(CLI::App& app, std::ostream& out) {
  struct TrainArgs {
    ConfigArgs config;
    sim::TrainRequest request;
  };
  auto a = std::make_shared<TrainArgs>();
  auto* command = app.add_subcommand(
      "train", "Train a config through the simulated pipeline and report test accuracy");
  add_config_options(command, a->config);
  // Bounded so that epochs x steps per epoch x samples per step stays a 64-bit count.
  command->add_option("--epochs", a->request.epochs, "Passes over the training set (default 1)")
      ->check(integer_in(1, 1'000'000));
  command->add_option("--steps", a->request.steps, "Stop after this many weight updates")
      ->check(integer_in(1, std::int64_t{1} << 40));
  command
      ->add_option("--test-samples", a->request.test_samples,
                   "Measure the test accuracy on the first N test samples only; 0 skips it "
                   "(default: the whole test set)")
      ->check(integer_in(0, std::int64_t{1} << 40));
  command
      ->add_option("--save", a->request.save,
                   "Write initial and final parameters, first gradients, losses, inputs and "
                   "labels as .npy files to this directory (created if missing), all or none")
      ->check(non_empty_path());
  command
      ->add_option("--load", a->request.load,
                   "Start from the parameters in this directory (<layer>.<parameter>.final.npy "
                   "or .initial.npy)")
      ->check(non_empty_path());
  command->footer("Example:\n  ipusim train configs/tf1_mnist_2ipu.json --epochs 1 --save out");
  command->callback([a, &out] { sim::train(load(a->config), a->request, out); });
}

}  // namespace ipusim::cli
