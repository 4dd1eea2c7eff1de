#include "tools/ipusim/cli.hpp"

#include <ostream>

#include "sim/core/error.hpp"
#include "sim/numeric/numeric.hpp"
#include "tools/ipusim/command.hpp"

namespace ipusim::cli {
namespace {

using core::ExitCode;

constexpr const char* kVersion = "ipusim 0.1.0";

int report_config_error(const core::ConfigError& error, std::ostream& err) {
  err << "error: " << error.what() << "\n";
  return int(ExitCode::kConfigError);
}

}  // namespace

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{"ipusim: a simulator of pipelined training on Graphcore IPUs", "ipusim"};
  app.set_version_flag("--version", kVersion);
  app.require_subcommand(1);
  app.footer("Run 'ipusim COMMAND --help' for a command's options and an example.");
  add_run_command(app, out);
  add_validate_command(app, out);
  add_model_command(app, out);
  add_schedule_command(app, out);
  add_schedules_command(app, out);
  add_compare_command(app, out);
  add_sweep_command(app, out, err);
  add_merge_command(app, out, err);
  add_train_command(app, out);
  add_calibrate_command(app, out);
  add_plan_command(app, out, err);
  add_import_command(app, out);
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
    err << "error: " << error.what() << "\n";
    return int(ExitCode::kUsage);
  } catch (const core::ConfigError& error) {
    return report_config_error(error, err);
  } catch (const core::SimulationOutcome& outcome) {
    err << outcome.what() << "\n";
    return int(ExitCode::kSimulationOutcome);
  } catch (const sim::NumericMismatch& mismatch) {
    err << mismatch.what() << "\n";
    return int(ExitCode::kNumericMismatch);
  } catch (const core::InternalError& error) {
    err << error.what() << "\n";
    return int(ExitCode::kInternalError);
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

}  // namespace ipusim::cli
