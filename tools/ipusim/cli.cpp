#include "tools/ipusim/cli.hpp"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <ostream>

#include "schedules/build.hpp"
#include "schedules/render.hpp"
#include "sim/core/error.hpp"
#include "sim/model_summary.hpp"
#include "sim/report.hpp"
#include "sim/spec.hpp"

namespace ipusim::cli {
namespace {

using core::ExitCode;

constexpr const char* kVersion = "ipusim 0.1.0";

// The config file and the what-if overrides every command accepts.
struct ConfigArgs {
  std::string path;
  std::vector<std::string> sets;
  std::string schedule;
  std::int64_t gac = 0;
  std::vector<std::string> splits;
  std::int64_t micro_batch = 0;
  std::int64_t replicas = 0;

  std::vector<core::Override> overrides() const {
    std::vector<core::Override> out;
    if (!schedule.empty()) {
      out.push_back(
          {"/pipeline/pipeline_schedule", "\"" + schedule + "\"", "--schedule " + schedule});
    }
    if (gac > 0)
      add(out, "/pipeline/gradient_accumulation_count", gac, "--gac");
    if (micro_batch > 0)
      add(out, "/pipeline/micro_batch_size", micro_batch, "--micro-batch");
    if (replicas > 0)
      add(out, "/pipeline/replication_factor", replicas, "--replicas");
    if (!splits.empty()) {
      out.push_back({"/pipeline/splits", nlohmann::json(splits).dump(), "--splits"});
    }
    for (const auto& set : sets)
      out.push_back(core::parse_set_argument(set));
    return out;
  }

 private:
  static void add(std::vector<core::Override>& out, const std::string& path, std::int64_t value,
                  const std::string& flag) {
    out.push_back({path, std::to_string(value), flag + " " + std::to_string(value)});
  }
};

void add_config_options(CLI::App* command, ConfigArgs& args) {
  command->add_option("config", args.path, "The run's JSON config file")->required();
  command
      ->add_option("--set", args.sets,
                   "Override a config value: PATH=VALUE, PATH dotted (pipeline.repeat_count) "
                   "or a JSON pointer (/pipeline/repeat_count); repeatable")
      ->type_name("PATH=VALUE");
  command->add_option("--schedule", args.schedule, "Same as --set pipeline.pipeline_schedule=NAME");
  command->add_option("--gac", args.gac, "Same as --set pipeline.gradient_accumulation_count=N");
  command
      ->add_option("--splits", args.splits, "Same as --set pipeline.splits=[...] (comma separated)")
      ->delimiter(',');
  command->add_option("--micro-batch", args.micro_batch,
                      "Same as --set pipeline.micro_batch_size=N");
  command->add_option("--replicas", args.replicas, "Same as --set pipeline.replication_factor=N");
}

sim::RunSpec load(const ConfigArgs& args) {
  return sim::load_run_spec(args.path, args.overrides());
}

struct Options {
  ConfigArgs config;
  std::string format = "text";
  std::string json_path;
  bool quiet = false;
  bool allow_oom = false;
};

// Writes next to the target and renames, so a failed run never leaves a partial file.
void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".partial";
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    file << text;
    if (!file)
      throw core::ConfigError(path, "", "cannot write the output file");
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error)
    throw core::ConfigError(path, "", "cannot write the output file: " + error.message());
}

void add_run(CLI::App& app, Options& o, std::ostream& out) {
  auto* command = app.add_subcommand(
      "run", "Simulate one config: step time, throughput, utilisation per phase, memory");
  add_config_options(command, o.config);
  command->add_option("--json", o.json_path, "Also write the report as JSON to this file");
  command->add_flag("--quiet", o.quiet, "Print only errors");
  command->add_flag("--allow-oom", o.allow_oom,
                    "Finish the run when an IPU runs out of memory and report the overflow");
  command->footer("Example:\n  ipusim run configs/tf1_mnist_2ipu.json --gac 64 --json report.json");
  command->callback([&] {
    const auto spec = load(o.config);
    const auto report = sim::simulate(spec, {o.allow_oom});
    if (!o.json_path.empty())
      write_file_atomically(o.json_path, sim::to_json(report).dump(2) + "\n");
    if (!o.quiet)
      out << sim::render_text(report);
  });
}

void add_validate(CLI::App& app, Options& o, std::ostream& out) {
  auto* command = app.add_subcommand("validate", "Check a config and print a one-line summary");
  add_config_options(command, o.config);
  command->footer("Example:\n  ipusim validate configs/tf1_mnist_2ipu.json --gac 32");
  command->callback([&] {
    const auto spec = load(o.config);
    out << "ok: " << sim::one_line_summary(spec) << "\n";
    for (const auto& note : spec.notes)
      out << "note: " << note << "\n";
  });
}

void add_model(CLI::App& app, Options& o, std::ostream& out) {
  auto* command = app.add_subcommand(
      "model", "Print the layers (shapes, parameters, FLOPs, activations) and the stages");
  add_config_options(command, o.config);
  command->footer("Example:\n  ipusim model configs/tf1_mnist_2ipu.json --splits dense128,dense64");
  command->callback([&] { out << sim::render_model_summary(load(o.config)); });
}

void add_schedule(CLI::App& app, Options& o, std::ostream& out) {
  auto* command = app.add_subcommand(
      "schedule", "Print the pipeline schedule: the step table (or order per IPU), phases, stash");
  add_config_options(command, o.config);
  command->add_option("--format", o.format, "text or json")->check(CLI::IsMember({"text", "json"}));
  command->footer(
      "Example:\n  ipusim schedule configs/tf1_mnist_2ipu.json --schedule interleaved --gac 8");
  command->callback([&] {
    const auto spec = load(o.config);
    const auto& schedule = spec.schedule;
    if (o.format == "json") {
      out << schedules::schedule_to_json(*schedule).dump(2) << "\n";
    } else {
      out << schedules::render_step_table(*schedule);
    }
  });
}

void add_schedules(CLI::App& app, std::ostream& out) {
  auto* command =
      app.add_subcommand("schedules", "List the schedule builders and when to use each");
  command->footer("Example:\n  ipusim schedules");
  command->callback([&] {
    std::size_t width = 0;
    for (const auto& info : schedules::schedule_catalogue())
      width = std::max(width, info.name.size());
    for (const auto& info : schedules::schedule_catalogue()) {
      out << info.name << std::string(width + 2 - info.name.size(), ' ') << info.when_to_use
          << "\n";
    }
  });
}

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
  Options options;
  add_run(app, options, out);
  add_validate(app, options, out);
  add_model(app, options, out);
  add_schedule(app, options, out);
  add_schedules(app, out);
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
  } catch (const core::InternalError& error) {
    err << error.what() << "\n";
    return int(ExitCode::kInternalError);
  }
  return int(ExitCode::kOk);
}

}  // namespace ipusim::cli
