#include "tools/ipusim/cli.hpp"

#include <algorithm>
#include <cstring>
#include <new>
#include <ostream>

#include "sim/core/checked.hpp"
#include "sim/core/error.hpp"
#include "sim/core/printable.hpp"
#include "sim/core/suggest.hpp"
#include "sim/numeric/numeric.hpp"
#include "sim/spec/hardware.hpp"
#include "tools/ipusim/command.hpp"

namespace ipusim::cli {
namespace {

using core::ExitCode;

int report_config_error(const core::ConfigError& error, std::ostream& err) {
  err << "error: " << error.what() << "\n";
  return int(ExitCode::kConfigError);
}

std::vector<std::string> command_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const auto* command : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(command->get_name());
  return names;
}

// The command `args` names, or null.
const CLI::App* command_of(const CLI::App& app, const std::vector<std::string>& args) {
  for (const auto& arg : args) {
    for (const auto* command : app.get_subcommands([](const CLI::App*) { return true; }))
      if (command->get_name() == arg)
        return command;
  }
  return nullptr;
}

// CLI11's words for an option given without its value ("--html: 1 required TEXT:PATH missing")
// as a user reads them: "--html expects a value (PATH), none was given".
std::string plain_parse_error(const CLI::ParseError& error) {
  const std::string what = error.what();
  const std::string middle = ": 1 required ";
  const std::string tail = " missing";
  const auto colon = what.find(middle);
  if (colon == std::string::npos || !what.ends_with(tail))
    return what;
  const auto type_at = colon + middle.size();
  std::string type = what.substr(type_at, what.size() - tail.size() - type_at);
  // "TEXT:PATH": the validator's name says more than the C++ type.
  type = type.substr(type.find(':') + 1);
  return what.substr(0, colon) + " expects a value (" + type + "), none was given";
}

// "unknown command 'runn'; did you mean 'run'?" for a misspelt command, or the same for a
// misspelt option of the command given; empty when nothing is close enough to suggest.
std::string usage_hint(const CLI::App& app, const std::vector<std::string>& args) {
  const auto* command = command_of(app, args);
  if (!command) {
    if (args.empty() || args.front().empty() || args.front().front() == '-')
      return "";
    return "unknown command '" + args.front() + "'" +
           core::did_you_mean(args.front(), command_names(app)) +
           " (ipusim --help lists the commands)";
  }
  std::vector<std::string> options;
  for (const auto* option : command->get_options()) {
    for (const auto& name : option->get_lnames())
      options.push_back("--" + name);
  }
  for (const auto& arg : args) {
    if (arg.rfind("--", 0) != 0)
      continue;
    const auto name = arg.substr(0, arg.find('='));
    if (std::find(options.begin(), options.end(), name) == options.end()) {
      const auto hint = core::did_you_mean(name, options);
      if (!hint.empty())
        return "unknown option '" + name + "' of ipusim " + command->get_name() + hint;
    }
  }
  return "";
}

// What ipusim --help ends with: how to go on, the exit codes and the hardware presets.
std::string help_footer() {
  return "Run 'ipusim COMMAND --help' for a command's options and an example.\n\n" +
         exit_codes_text() + "\n" + presets_text();
}

}  // namespace

std::string exit_codes_text() {
  return "Exit codes: 0 success, 1 bad command line, 2 invalid config or option, 3 does not fit "
         "in memory (the IPUs': a valid result; or this machine's), 4 pipelined numbers differ "
         "from the reference, 70 internal error (a bug).";
}

std::string presets_text() {
  std::string presets;
  for (const auto& name : sim::hardware_preset_names())
    presets += (presets.empty() ? "" : ", ") + name;
  return "Hardware presets (hardware.preset): " + presets + ".";
}

namespace {

// The commands, in the order `ipusim --help` lists them.
void add_commands(CLI::App& app, std::ostream& out, std::ostream& err) {
  add_run_command(app, out, err);
  add_validate_command(app, out);
  add_model_command(app, out);
  add_schedule_command(app, out);
  add_schedules_command(app, out);
  add_layers_command(app, out);
  add_compare_command(app, out, err);
  add_sweep_command(app, out, err);
  add_merge_command(app, out, err);
  add_train_command(app, out);
  add_calibrate_command(app, out, err);
  add_plan_command(app, out, err);
  add_price_command(app, out);
  add_import_command(app, out);
  add_completion_command(app, out);
  add_man_command(app, out);
}

// What a command that ran out of the machine's memory says: what it was asked to hold, and how to
// ask for less.
std::string out_of_host_memory(const std::vector<std::string>& args) {
  std::string command = "ipusim";
  for (const auto& arg : args) {
    if (arg.starts_with("-"))
      break;
    command += " " + arg;
  }
  return "error: " + command +
         " ran out of this machine's memory: what it was asked to build (the model's tensors, "
         "the schedule's tasks, the search's settings, or an output held whole) is larger than "
         "the memory free here; ask for less (a smaller model or micro-batch, fewer micro-batches "
         "or settings) or run where more memory is free\n";
}

// Runs the command `args` names and returns its exit code.
int run_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{"ipusim: a simulator of pipelined training on Graphcore IPUs", "ipusim"};
  app.set_version_flag("--version", kVersion);
  app.require_subcommand(1);
  app.footer(help_footer());
  add_commands(app, out, err);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return int(ExitCode::kOk);
  } catch (const CLI::CallForAllHelp&) {
    out << app.help("", CLI::AppFormatMode::All);
    return int(ExitCode::kOk);
  } catch (const CLI::CallForVersion&) {
    out << kVersion << "\n";
    return int(ExitCode::kOk);
  } catch (const CLI::ParseError& error) {
    const auto hint = usage_hint(app, args);
    err << "error: " << (hint.empty() ? plain_parse_error(error) : hint) << "\n";
    return int(ExitCode::kUsage);
  } catch (const core::ConfigError& error) {
    return report_config_error(error, err);
  } catch (const core::SimulationOutcome& outcome) {
    err << outcome.what() << "\n";
    return int(ExitCode::kSimulationOutcome);
  } catch (const sim::NumericMismatch& mismatch) {
    err << mismatch.what() << "\n";
    return int(ExitCode::kNumericMismatch);
  } catch (const core::Overflow& overflow) {
    // The spec's bounds keep a run's sizes in range; hardware figures far off can still take
    // a product past 64 bits, which is the user's input, not a bug.
    err << "error: the run is too large to simulate: its " << overflow.what()
        << " does not fit in 64 bits; check the hardware figures and the pipeline's sizes\n";
    return int(ExitCode::kConfigError);
  } catch (const core::InternalError& error) {
    err << error.what() << "\n";
    return int(ExitCode::kInternalError);
  } catch (const std::bad_alloc&) {
    err << out_of_host_memory(args);
    return int(ExitCode::kSimulationOutcome);
  } catch (const std::exception& error) {
    // Anything else escaped the checks that should have turned it into one of the above.
    err << "internal error (this is a bug in ipusim): " << error.what() << "\n";
    return int(ExitCode::kInternalError);
  } catch (...) {
    err << "internal error (this is a bug in ipusim): an unknown exception\n";
    return int(ExitCode::kInternalError);
  }
  return int(ExitCode::kOk);
}

// A write to a full disk or a closed stream fails quietly: the stream only remembers it. So the
// output is checked once, after the command, and a command whose output was lost does not exit
// 0 (a command that failed keeps its own code).
int check_output(core::PrintableStream& out, std::ostream& err, int code) {
  const auto failure = out.finish();
  if (!failure)
    return code;
  err << "error: cannot write the standard output: "
      << (*failure != 0 ? std::strerror(*failure) : "the write failed") << "\n";
  return code == int(ExitCode::kOk) ? int(ExitCode::kConfigError) : code;
}

}  // namespace

int run(const std::vector<std::string>& args, std::ostream& raw_out, std::ostream& raw_err) {
  // Everything shown passes through core::printable: names from files reach the terminal
  // without their control characters acting on it.
  core::PrintableStream out(raw_out);
  core::PrintableStream err(raw_err);
  return check_output(out, err, run_command(args, out, err));
}

}  // namespace ipusim::cli
