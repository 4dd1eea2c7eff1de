#include <memory>
#include <ostream>

#include "sim/report.hpp"
#include "tools/ipusim/command.hpp"

namespace ipusim::cli {
namespace {

struct RunOptions {
  ConfigArgs config;
  std::string json_path;
  bool quiet = false;
  bool allow_oom = false;
};

}  // namespace

void add_run_command(CLI::App& app, std::ostream& out) {
  auto o = std::make_shared<RunOptions>();
  auto* command = app.add_subcommand(
      "run", "Simulate one config: step time, throughput, utilisation per phase, memory");
  add_config_options(command, o->config);
  command->add_option("--json", o->json_path, "Also write the report as JSON to this file");
  command->add_flag("--quiet", o->quiet, "Print only errors");
  command->add_flag("--allow-oom", o->allow_oom,
                    "Finish the run when an IPU runs out of memory and report the overflow");
  command->footer("Example:\n  ipusim run configs/tf1_mnist_2ipu.json --gac 64 --json report.json");
  command->callback([o, &out] {
    const auto spec = load(o->config);
    sim::SimulateOptions options;
    options.allow_oom = o->allow_oom;
    const auto report = sim::simulate(spec, options);
    if (!o->json_path.empty())
      write_file_atomically(o->json_path, sim::to_json(report).dump(2) + "\n");
    if (!o->quiet)
      out << sim::render_text(report);
  });
}

}  // namespace ipusim::cli
