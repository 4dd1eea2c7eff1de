// The commands that inspect a config without replaying it.

#include <memory>
#include <ostream>

#include "models/layers/layer_types.hpp"
#include "schedules/build.hpp"
#include "schedules/render.hpp"
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/core/suggest.hpp"
#include "sim/report/model_summary.hpp"
#include "tools/ipusim/command.hpp"

namespace ipusim::cli {
namespace {

// The step table holds every task of a repeat, built in memory: at M = 2^40 it would never end.
constexpr std::int64_t kMaxPrintedTasks = 10'000'000;

void check_printable(const sim::RunSpec& spec) {
  const std::int64_t per_microbatch = spec.schedule->tasks_per_microbatch();
  const std::int64_t tasks = per_microbatch * spec.pipeline.gradient_accumulation_count;
  if (tasks <= kMaxPrintedTasks)
    return;
  const std::string pointer = "/pipeline/gradient_accumulation_count";
  throw core::ConfigError(
      spec.source_of(pointer), pointer,
      "ipusim schedule prints every task of a repeat, and " +
          sim::with_commas(spec.pipeline.gradient_accumulation_count) + " micro-batches make " +
          sim::with_commas(tasks) + " tasks, more than the " + sim::with_commas(kMaxPrintedTasks) +
          " it prints; the pattern repeats after the ramp-up, so a count of at most " +
          sim::with_commas(kMaxPrintedTasks / per_microbatch) + " shows it");
}

}  // namespace

void add_validate_command(CLI::App& app, std::ostream& out) {
  auto config = std::make_shared<ConfigArgs>();
  auto* command = app.add_subcommand("validate", "Check a config and print a one-line summary");
  add_config_options(command, *config);
  command->footer("Example:\n  ipusim validate configs/tf1_mnist_2ipu.json --gac 32");
  command->callback([config, &out] {
    const auto spec = load(*config);
    out << "ok: " << sim::one_line_summary(spec) << "\n";
    for (const auto& note : spec.notes)
      out << "note: " << note << "\n";
  });
}

void add_model_command(CLI::App& app, std::ostream& out) {
  auto config = std::make_shared<ConfigArgs>();
  auto* command = app.add_subcommand(
      "model", "Print the layers (shapes, parameters, FLOPs, activations) and the stages");
  add_config_options(command, *config);
  command->footer("Example:\n  ipusim model configs/tf1_mnist_2ipu.json --splits dense128,dense64");
  command->callback([config, &out] { out << sim::render_model_summary(load(*config)); });
}

void add_schedule_command(CLI::App& app, std::ostream& out) {
  struct Options {
    ConfigArgs config;
    std::string format = "text";
  };
  auto o = std::make_shared<Options>();
  auto* command = app.add_subcommand(
      "schedule", "Print the pipeline schedule: the step table (or order per IPU), phases, stash");
  add_config_options(command, o->config);
  command->add_option("--format", o->format, "text or json")
      ->check(CLI::IsMember(kScheduleFormats));
  command->footer(
      "Example:\n  ipusim schedule configs/tf1_mnist_2ipu.json --schedule interleaved --gac 8");
  command->callback([o, &out] {
    const auto spec = load(o->config);
    check_printable(spec);
    if (o->format == "json") {
      schedules::write_schedule_json(*spec.schedule, out);
    } else {
      out << schedules::render_step_table(*spec.schedule);
    }
  });
}

void add_schedules_command(CLI::App& app, std::ostream& out) {
  auto* command =
      app.add_subcommand("schedules", "List the schedule builders and when to use each");
  command->footer("Example:\n  ipusim schedules");
  command->callback([&out] {
    std::size_t width = 0;
    for (const auto& info : schedules::schedule_catalogue())
      width = std::max(width, info.name.size());
    for (const auto& info : schedules::schedule_catalogue()) {
      out << info.name << std::string(width + 2 - info.name.size(), ' ') << info.when_to_use
          << "\n";
    }
  });
}

void add_layers_command(CLI::App& app, std::ostream& out) {
  auto type = std::make_shared<std::string>();
  auto* command = app.add_subcommand("layers", "List the layer types, or one type's config keys");
  command->add_option("type", *type, "a layer type: its keys, with their values and defaults")
      ->check(CLI::Validator(
          [](std::string& name) -> std::string {
            if (models::layer_type_from_name(name))
              return "";
            const std::string hint = core::did_you_mean(name, models::layer_type_names());
            return "unknown layer type '" + name + "'" +
                   (hint.empty() ? "; 'ipusim layers' lists them" : hint);
          },
          "TYPE"));
  command->footer("Examples:\n  ipusim layers\n  ipusim layers conv2d");
  command->callback([type, &out] {
    out << (type->empty() ? sim::render_layer_types()
                          : sim::render_layer_type(*models::layer_type_from_name(*type)));
  });
}

}  // namespace ipusim::cli
