// `ipusim compare`: several configs, schedules or what-if variants side by side, one column per
// run, and which is fastest (sim/sweep/compare.hpp).

#include <algorithm>
#include <memory>
#include <optional>
#include <ostream>

#include "sim/core/error.hpp"
#include "sim/core/suggest.hpp"
#include "sim/sweep/compare.hpp"
#include "tools/ipusim/command.hpp"
#include "tools/ipusim/progress.hpp"

namespace ipusim::cli {
namespace {

// Declares the files `config` includes inputs of `outputs`. An invalid config is compared as a
// failed run, its error reported in its column: the files of the configs that load are known.
void add_includes(core::OutputSet& outputs, const std::string& config) {
  std::optional<core::ConfigDocument> document;
  try {
    document = core::ConfigDocument::load(config, {});
  } catch (const core::ConfigError&) {
    return;
  }
  core::add_inputs(outputs, *document);
}

// Why `name` is no schedule --schedules can run, or "": a typo is a usage error with the nearest
// name, not a failed run in its column.
std::string unknown_schedule(const std::string& name) {
  const auto& names = sim::schedule_names();
  if (std::find(names.begin(), names.end(), name) != names.end())
    return "";
  // Names are compared without their underscores too: "zerobubble" is zero_bubble_h1.
  const auto bare = [](std::string text) {
    text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
    return text;
  };
  std::vector<std::string> bare_names;
  for (const auto& candidate : names)
    bare_names.push_back(bare(candidate));
  std::string hint = core::did_you_mean(name, names);
  if (const auto match = core::closest_match(bare(name), bare_names); match && hint.empty()) {
    const auto at = std::find(bare_names.begin(), bare_names.end(), *match) - bare_names.begin();
    hint = "; did you mean '" + names[std::size_t(at)] + "'?";
  }
  return "'" + name + "' is not a schedule: expected " + core::quoted_list(names) + hint;
}

// The files the comparison writes, and those it reads that no output may replace.
void declare_files(core::OutputSet& outputs, const sim::CompareRequest& request) {
  const std::pair<const char*, std::string> given[] = {
      {"--json", request.json_path}, {"--csv", request.csv_path}, {"--html", request.html_path}};
  for (const auto& [option, path] : given) {
    if (!path.empty())
      outputs.add(path, option);
  }
  for (const auto& config : request.configs) {
    outputs.add_input(config, "a config this command reads");
    add_includes(outputs, config);
  }
}

// Tells `request` to show its replays' progress on `err` as `option` and `quiet` ask.
void show_progress(sim::CompareRequest& request, const std::string& option, bool quiet,
                   std::ostream& err, std::unique_ptr<Progress>& progress) {
  auto& progress_err = core::unescaped(err);
  const auto style = progress_style(option, quiet, progress_err);
  progress = std::make_unique<Progress>(progress_err, style, progress_pace_from_environment());
  if (style != ProgressStyle::kNone)
    request.progress = [&progress](std::size_t done, std::size_t total) {
      progress->update(done, total, "tasks");
    };
}

}  // namespace

void add_compare_command(CLI::App& app, std::ostream& out, std::ostream& err) {
  struct CompareArgs {
    ConfigArgs what_if;
    sim::CompareRequest request;  // base_overrides set from what_if when it runs
    std::string progress = "auto";
    bool quiet = false;
  };
  auto a = std::make_shared<CompareArgs>();
  auto* command =
      app.add_subcommand("compare", "Simulate configs, schedules or what-if variants side by side");
  command->add_option("configs", a->request.configs, "One or more config files")
      ->required()
      ->check(non_empty_path());
  add_config_options(command, a->what_if, false);
  command
      ->add_option("--schedules", a->request.schedules,
                   "Run each config with each of these schedules (comma separated)")
      ->delimiter(',')
      ->check(unknown_schedule)
      ->allow_extra_args(false);
  command
      ->add_option("--with", a->request.withs,
                   "A variant of each config: PATH=VALUE[;PATH=VALUE...]; repeatable, one "
                   "column each")
      ->type_name("PATH=VALUE[;...]")
      ->allow_extra_args(false);
  command->add_flag("--relayout", a->request.relayout,
                    "Run a schedule that refuses a config's layout on the one it needs on the "
                    "same IPUs, split as plan finds best: one stage per IPU (interleaved, gpipe, "
                    "1f1b, zero_bubble_h1) or two (interleaved_1f1b)");
  command->add_option("--json", a->request.json_path, "Also write every run's report as JSON")
      ->check(non_empty_path());
  command
      ->add_option("--csv", a->request.csv_path, "Also write one CSV row per run (sweep's columns)")
      ->check(non_empty_path());
  command
      ->add_option("--html", a->request.html_path,
                   "Also write an HTML page: the runs' pipeline charts on one time axis")
      ->check(non_empty_path());
  add_progress_option(command, a->progress);
  command->add_flag("--quiet", a->quiet, "Print only errors");
  command->footer(
      "Example:\n  ipusim compare configs/tf1_mnist_2ipu.json "
      "--schedules grouped,interleaved,sequential,1f1b");
  command->callback([a, &out, &err] {
    core::OutputSet outputs;
    declare_files(outputs, a->request);
    auto request = a->request;
    request.base_overrides = a->what_if.overrides();
    std::unique_ptr<Progress> progress;
    show_progress(request, a->progress, a->quiet, err, progress);
    const std::string table = sim::compare(request, outputs);
    outputs.commit();
    if (!a->quiet)
      out << table;
  });
}

}  // namespace ipusim::cli
