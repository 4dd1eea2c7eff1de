// `ipusim calibrate`: fits the operation cost model to measured cycles (sim/calibrate) and
// writes the fitted values as a config to include.

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "sim/calibrate/calibrate.hpp"
#include "sim/core/printable.hpp"
#include "tools/ipusim/command.hpp"
#include "tools/ipusim/progress.hpp"

namespace ipusim::cli {

namespace {

struct CalibrateOptions {
  ConfigArgs config;
  std::string measured;
  std::string output;
  std::vector<std::string> fit;
  std::string progress = "auto";
  bool quiet = false;
};

// Reads the measurements, fits, and writes the preset and the report.
void run_calibrate(const CalibrateOptions& o, std::ostream& out, std::ostream& err) {
  core::OutputSet outputs;
  if (!o.output.empty())
    outputs.add(o.output, "-o");
  outputs.add_input(o.measured, "the --measured file this command reads");
  const auto measured = sim::read_measurements(o.measured);
  for (const auto& measurement : measured) {
    if (!measurement.config.empty())
      outputs.add_input(measurement.config, "a config the --measured file names");
  }
  const auto config = core::ConfigDocument::load(o.config.path, o.config.overrides());
  core::add_inputs(outputs, config);
  const auto notify = [&err, quiet = o.quiet](const std::string& notice) {
    if (!quiet)
      err << "note: " << notice << "\n" << std::flush;  // before the progress, which is unescaped
  };
  auto& progress_err = core::unescaped(err);
  const auto style = progress_style(o.progress, o.quiet, progress_err);
  Progress progress(progress_err, style, progress_pace_from_environment());
  std::function<void(std::size_t, std::size_t)> on_replay;
  if (style != ProgressStyle::kNone)
    on_replay = [&progress](std::size_t done, std::size_t least) {
      progress.update(done, least, "replays", true);
    };
  const auto calibration = sim::calibrate(config, measured, o.fit, notify, on_replay);
  if (!o.output.empty())
    outputs.write(o.output, sim::calibrated_preset(calibration).dump(2) + "\n");
  outputs.commit();
  out << sim::render_calibration(calibration);
  if (!o.output.empty())
    out << "Wrote " << o.output
        << ": list it in the config's include, after the hardware preset.\n";
}

}  // namespace

void add_calibrate_command(CLI::App& app, std::ostream& out, std::ostream& err) {
  auto o = std::make_shared<CalibrateOptions>();
  auto* command = app.add_subcommand(
      "calibrate", "Fit the cost model's per-operation parameters to cycles measured on IPUs");
  add_config_options(command, o->config);
  command
      ->add_option("--measured", o->measured,
                   "The measurements: a .csv or .json file of per-stage or per-step cycles, "
                   "each for the config with a list of --set overrides")
      ->required()
      ->check(non_empty_path());
  command
      ->add_option("-o,--output", o->output,
                   "Write the fitted parameters as {\"hardware\": {\"operations\": ...}}, a "
                   "config to add to the config's include list")
      ->check(non_empty_path());
  command
      ->add_option(
          "--fit", o->fit,
          "Fit only these parameters (comma separated, e.g. plan_scale,gather.efficiency); the "
          "others keep the config's values (default: all)")
      ->delimiter(',');
  add_progress_option(command, o->progress);
  command->add_flag("--quiet", o->quiet,
                    "Print no note of how long the fit's replays will take, and no progress");
  command->footer(
      "Example:\n  ipusim calibrate configs/bert_large_4ipu.json --measured bert.csv "
      "-o calibrated.json");
  command->callback([o, &out, &err] { run_calibrate(*o, out, err); });
}

}  // namespace ipusim::cli
