#pragma once
// What every ipusim command shares: the config argument with its what-if overrides, loading
// the validated spec, and writing output files so that a failed run never leaves a partial one.
// Each command lives in its own file and registers itself with add_*_command.

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/config_file.hpp"
#include "sim/core/output_file.hpp"
#include "sim/spec/spec.hpp"

namespace ipusim::cli {

// The config file and the what-if overrides every command accepts. The short forms keep the
// text as given: it is validated like a --set, so a value CLI11 would clamp or drop is an error.
struct ConfigArgs {
  std::string path;
  std::vector<std::string> sets;
  std::optional<std::string> schedule;
  std::optional<std::string> gac;
  std::optional<std::vector<std::string>> splits;
  std::optional<std::string> micro_batch;
  std::optional<std::string> replicas;

  std::vector<core::Override> overrides() const;
};

// The values of options that take one of a fixed set, for the option and its completion.
inline const std::vector<std::string> kScheduleFormats = {"text", "json"};
inline const std::vector<std::string> kPlanObjectives = {"throughput", "memory"};
inline const std::vector<std::string> kShells = {"bash", "zsh"};
inline const std::vector<std::string> kProgressStyles = {"auto", "bar", "lines", "none"};

// Refuses an empty value of a path option: left empty, the option would be silently ignored.
CLI::Validator non_empty_path();

// Refuses anything but a whole number from `low` to `high`, saying so with the value given:
// "expected an integer from 1 to 4096, found 'abc'".
CLI::Validator integer_in(std::int64_t low, std::int64_t high);

// Adds the what-if options; with `with_path` also the positional config file. Without
// `with_batching` it leaves out --gac and --micro-batch, for a command that gives them another
// meaning (plan takes lists of values to search).
void add_config_options(CLI::App* command, ConfigArgs& args, bool with_path = true,
                        bool with_batching = true);

sim::RunSpec load(const ConfigArgs& args);

// Declares the config at `path` and the files it includes inputs of `outputs` (reading them),
// for a command that loads the config deeper down: no output may replace one of them.
void add_config_inputs(core::OutputSet& outputs, const std::string& path);

void add_run_command(CLI::App& app, std::ostream& out, std::ostream& err);
void add_validate_command(CLI::App& app, std::ostream& out);
void add_model_command(CLI::App& app, std::ostream& out);
void add_schedule_command(CLI::App& app, std::ostream& out);
void add_schedules_command(CLI::App& app, std::ostream& out);
void add_layers_command(CLI::App& app, std::ostream& out);
void add_compare_command(CLI::App& app, std::ostream& out, std::ostream& err);
void add_sweep_command(CLI::App& app, std::ostream& out, std::ostream& err);
void add_merge_command(CLI::App& app, std::ostream& out, std::ostream& err);
void add_train_command(CLI::App& app, std::ostream& out);
void add_calibrate_command(CLI::App& app, std::ostream& out, std::ostream& err);
void add_import_command(CLI::App& app, std::ostream& out);
void add_completion_command(CLI::App& app, std::ostream& out);
void add_man_command(CLI::App& app, std::ostream& out);
void add_plan_command(CLI::App& app, std::ostream& out, std::ostream& err);
void add_price_command(CLI::App& app, std::ostream& out);

}  // namespace ipusim::cli
