// `ipusim plan`: the split, schedule, gradient accumulation, micro-batch and recomputation that
// fit and run fastest (sim/sweep/planner.hpp). For this command --gac and --micro-batch take
// lists of values to search instead of the single value of the other commands' what-if options.

#include <algorithm>
#include <memory>
#include <ostream>
#include <thread>

#include "sim/spec/spec.hpp"
#include "sim/sweep/planner.hpp"
#include "tools/ipusim/command.hpp"

namespace ipusim::cli {
namespace {

struct PlanArgs {
  ConfigArgs config;
  sim::PlanRequest request;  // config_path, base_overrides and the fixed values set when it runs
  std::string objective = "throughput";
  std::string best_path;
  std::string csv_path;
  bool quiet = false;
};

void add_list(CLI::App* command, const std::string& name, std::vector<std::string>& target,
              const std::string& help) {
  command->add_option(name, target, help)
      ->delimiter(',')
      ->allow_extra_args(false)
      ->type_name("LIST");
}

void add_plan_options(CLI::App* command, PlanArgs& a) {
  add_list(command, "--schedules", a.request.schedules,
           "Schedules to try (comma separated), or 'all'; default Graphcore's step-based ones");
  add_list(command, "--gac", a.request.gacs,
           "Gradient accumulation counts to try, e.g. 8,16,32 (default: the config's)");
  add_list(command, "--micro-batch", a.request.micro_batches,
           "Micro-batch sizes to try (default: the config's)");
  add_list(command, "--recomputation", a.request.recomputations,
           "Recomputation modes to try (default: the config's)");
  command->add_option("--objective", a.objective, "What ranks the replayed candidates")
      ->check(CLI::IsMember({"throughput", "memory"}));
  command->add_option("--top", a.request.top, "Candidates shown (4x as many replayed per setting)")
      ->check(CLI::Range(1, 1000));
  command->add_option("--jobs", a.request.jobs, "Replays run at once (default: the cores)")
      ->check(CLI::Range(1, 4096));
  command->add_option("-o,--output", a.best_path, "Write the best candidate as a runnable config")
      ->check(non_empty_path());
  command->add_option("--csv", a.csv_path, "Write one row per replayed candidate")
      ->check(non_empty_path());
  command->add_flag("--quiet", a.quiet, "Print only errors");
}

// 'all' is every registered schedule; the planner keeps a --schedule or --splits fixed.
sim::PlanRequest request_of(const PlanArgs& a) {
  auto request = a.request;
  request.config_path = a.config.path;
  request.base_overrides = a.config.overrides();
  request.objective =
      a.objective == "memory" ? sim::PlanObjective::kMemory : sim::PlanObjective::kThroughput;
  if (request.schedules.size() == 1 && request.schedules.front() == "all")
    request.schedules = sim::schedule_names();
  return request;
}

}  // namespace

void add_plan_command(CLI::App& app, std::ostream& out) {
  auto a = std::make_shared<PlanArgs>();
  a->request.jobs = int(std::max(1u, std::thread::hardware_concurrency()));
  auto* command = app.add_subcommand(
      "plan", "Search splits, schedules, GAC, micro-batch and recomputation for the fastest fit");
  add_config_options(command, a->config, true, false);
  add_plan_options(command, *a);
  command->footer(
      "Example:\n  ipusim plan configs/bert_large_4ipu.json --top 5 -o best.json\n"
      "  ipusim plan configs/tf1_mnist_2ipu.json --gac 8,16,32 --micro-batch 16,32");
  command->callback([a, &out] {
    core::OutputSet outputs;
    if (!a->best_path.empty())
      outputs.add(a->best_path, "-o");
    if (!a->csv_path.empty())
      outputs.add(a->csv_path, "--csv");
    const auto result = sim::plan(request_of(*a));
    const std::string text = sim::render_plan(result);
    if (!a->best_path.empty())
      outputs.write(a->best_path, sim::planned_config(result.ranked.front()).dump(2) + "\n");
    if (!a->csv_path.empty())
      outputs.write(a->csv_path, sim::plan_csv(result));
    outputs.commit();
    if (!a->quiet)
      out << text;
  });
}

}  // namespace ipusim::cli
