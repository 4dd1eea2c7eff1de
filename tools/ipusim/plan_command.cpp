// `ipusim plan`: the split, schedule, gradient accumulation, micro-batch and recomputation that
// fit and run fastest (sim/sweep/planner.hpp). For this command --gac and --micro-batch take
// lists of values to search instead of the single value of the other commands' what-if options.

#include <algorithm>
#include <charconv>
#include <memory>
#include <optional>
#include <ostream>
#include <thread>

#include "sim/core/error.hpp"
#include "sim/core/printable.hpp"
#include "sim/spec/spec.hpp"
#include "sim/sweep/planner.hpp"
#include "tools/ipusim/command.hpp"
#include "tools/ipusim/progress.hpp"

namespace ipusim::cli {
namespace {

struct PlanArgs {
  ConfigArgs config;
  sim::PlanRequest request;  // config_path, base_overrides and the fixed values set when it runs
  std::vector<std::string> ipus_per_replica;  // as typed; request_of reads the counts
  std::string objective = "throughput";
  std::string shard = "1/1";
  std::vector<std::string> merge;
  std::string best_path;
  std::string csv_path;
  std::string html_path;
  std::string progress = "auto";
  bool quiet = false;
};

// A list option is kept as typed (it may also be repeated) and split by list_values, which
// refuses an empty value rather than dropping it.
CLI::Option* add_list(CLI::App* command, const std::string& name, std::vector<std::string>& target,
                      const std::string& help) {
  return command->add_option(name, target, help)->allow_extra_args(false)->type_name("LIST");
}

// The values of list option `flag` as typed: each occurrence split at its commas. An empty value
// (two commas in a row, a comma at either end, or none given) is a config error, as sweep's
// --vary gives one.
std::vector<std::string> list_values(const std::string& flag,
                                     const std::vector<std::string>& typed) {
  std::vector<std::string> out;
  for (const auto& item : typed) {
    for (std::size_t start = 0;;) {
      const auto comma = item.find(',', start);
      const auto value = item.substr(start, comma == std::string::npos ? comma : comma - start);
      if (value.empty())
        throw core::ConfigError(flag + " " + (item.size() > 60 ? item.substr(0, 57) + "..." : item),
                                "", "a value is empty (two commas in a row, or none given)");
      out.push_back(value);
      if (comma == std::string::npos)
        break;
      start = comma + 1;
    }
  }
  return out;
}

void add_plan_outputs(CLI::App* command, PlanArgs& a);

void add_plan_options(CLI::App* command, PlanArgs& a) {
  add_list(command, "--schedules", a.request.schedules,
           "Schedules to try (comma separated), or 'all'; default Graphcore's step-based ones");
  add_list(command, "--ipus-per-replica", a.ipus_per_replica,
           "IPUs per replica to try, powers of two, e.g. 2,4,8 (default: the config's; 1,2,4,8 "
           "for a one-stage config)");
  command
      ->add_option("--ipus", a.request.total_ipus,
                   "IPUs in all: each setting runs IPUs / IPUs-per-replica replicas")
      ->check(integer_in(1, 1024));
  auto* gac = add_list(command, "--gac", a.request.gacs,
                       "Gradient accumulation counts to try, e.g. 8,16,32 (default: the "
                       "config's)");
  command
      ->add_option("--global-batch", a.request.global_batch,
                   "Samples per weight update: the GAC of each setting is this over micro-batch "
                   "x replicas")
      ->check(integer_in(1, std::int64_t(1) << 40))
      ->excludes(gac);
  add_list(command, "--micro-batch", a.request.micro_batches,
           "Micro-batch sizes to try (default: the config's)");
  add_list(command, "--recomputation", a.request.recomputations,
           "Recomputation modes to try (default: the config's)");
  add_list(command, "--offload", a.request.offloads,
           "Offload options to try: none, weight_update_variables (optimizer state), stash_fifos, "
           "both (default: the "
           "config's)");
  command->add_flag(
      "--relayout", a.request.relayout,
      "Search a schedule that refuses the config's layout on the one it needs on "
      "the same IPUs: one stage per IPU (interleaved, gpipe, 1f1b, zero_bubble_h1) or "
      "two "
      "(interleaved_1f1b)");
  command->add_option("--objective", a.objective, "What ranks the replayed candidates")
      ->check(CLI::IsMember(kPlanObjectives));
  command->add_option("--top", a.request.top, "Candidates shown (4x as many replayed per setting)")
      ->check(integer_in(1, 1000));
  command->add_option("--jobs", a.request.jobs, "Replays run at once (default: the cores)")
      ->check(integer_in(1, 4096));
  add_plan_outputs(command, a);
}

// Where plan writes, how it shows its progress, and the shards it joins.
void add_plan_outputs(CLI::App* command, PlanArgs& a) {
  command->add_option("-o,--output", a.best_path, "Write the best candidate as a runnable config")
      ->check(non_empty_path());
  command->add_option("--csv", a.csv_path, "Write one row per replayed candidate")
      ->check(non_empty_path());
  command
      ->add_option("--html", a.html_path,
                   "Write a page plotting throughput against peak memory (Pareto front)")
      ->check(non_empty_path());
  command
      ->add_option("--shard", a.shard,
                   "Search only slice I of N of the settings; join the slices' --csv files "
                   "with --merge; auto: the Slurm array task's slice")
      ->type_name("I/N|auto");
  command
      ->add_option("--merge", a.merge,
                   "Rank the --csv files of a sharded plan together instead of searching")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->type_name("CSV,...")
      ->check(non_empty_path());
  add_progress_option(command, a.progress);
  command->add_flag("--quiet", a.quiet, "Print only errors");
}

// 'all' is every registered schedule; the planner keeps a --schedule or --splits fixed.
sim::PlanRequest request_of(const PlanArgs& a) {
  auto request = a.request;
  request.config_path = a.config.path;
  request.base_overrides = a.config.overrides();
  request.objective =
      a.objective == "memory" ? sim::PlanObjective::kMemory : sim::PlanObjective::kThroughput;
  request.schedules = list_values("--schedules", request.schedules);
  request.gacs = list_values("--gac", request.gacs);
  request.micro_batches = list_values("--micro-batch", request.micro_batches);
  request.recomputations = list_values("--recomputation", request.recomputations);
  request.offloads = list_values("--offload", request.offloads);
  for (const auto& value : list_values("--ipus-per-replica", a.ipus_per_replica)) {
    int count = 0;
    const auto [end, problem] = std::from_chars(value.data(), value.data() + value.size(), count);
    if (problem != std::errc() || end != value.data() + value.size())
      throw CLI::ConversionError("--ipus-per-replica", a.ipus_per_replica);
    request.ipus_per_replica.push_back(count);
  }
  if (request.schedules.size() == 1 && request.schedules.front() == "all")
    request.schedules = sim::schedule_names();
  request.shard = sim::parse_shard(a.shard);
  return request;
}

// With --merge the search options have nothing to act on: they were the shards'.
void refuse_search_options(const CLI::App& command) {
  for (const char* name : {"--schedules", "--ipus-per-replica", "--ipus", "--gac", "--global-batch",
                           "--micro-batch", "--recomputation", "--offload", "--shard"}) {
    if (command.count(name) > 0)
      throw core::ConfigError(std::string("--merge"), "",
                              std::string(name) +
                                  " belongs to the shards' searches; --merge only "
                                  "ranks what their files hold: drop " +
                                  name);
  }
}

// -o (when something fits), --csv (streamed: it holds every replayed candidate) and --html,
// committed together.
void write_outputs(const PlanArgs& a, const sim::PlanResult& result, bool fits,
                   core::OutputSet& outputs) {
  if (!a.best_path.empty() && fits)
    outputs.write(a.best_path, sim::planned_config(result.best(), a.best_path).dump(2) + "\n");
  if (!a.csv_path.empty())
    outputs.write_streamed(a.csv_path, [&](const auto& put) { sim::write_plan_csv(result, put); });
  if (!a.html_path.empty())
    outputs.write(a.html_path, sim::render_plan_html(result));
  outputs.commit();
}

}  // namespace

void add_plan_command(CLI::App& app, std::ostream& out, std::ostream& err) {
  auto a = std::make_shared<PlanArgs>();
  a->request.jobs = int(std::max(1u, std::thread::hardware_concurrency()));
  auto* command = app.add_subcommand(
      "plan", "Search splits, schedules, GAC, micro-batch and recomputation for the fastest fit");
  add_config_options(command, a->config, true, false);
  add_plan_options(command, *a);
  command->footer(
      "Examples:\n  ipusim plan configs/bert_large_4ipu.json --top 5 -o best.json --html "
      "plan.html\n"
      "  ipusim plan configs/tf1_mnist_2ipu.json --gac 8,16,32 --micro-batch 16,32\n"
      "  ipusim plan configs/bert_large_4ipu.json --ipus 16 --ipus-per-replica 4,8 "
      "--global-batch 65600\n"
      "  ipusim plan CONFIG ... --shard 1/2 --csv a.csv; ... --shard 2/2 --csv b.csv;\n"
      "  ipusim plan CONFIG --merge a.csv,b.csv -o best.json");
  command->callback([a, command, &out, &err] {
    core::OutputSet outputs;
    if (!a->best_path.empty())
      outputs.add(a->best_path, "-o");
    if (!a->csv_path.empty())
      outputs.add(a->csv_path, "--csv");
    if (!a->html_path.empty())
      outputs.add(a->html_path, "--html");
    auto request = request_of(*a);
    request.keep_rows = !a->csv_path.empty();
    request.keep_points = !a->html_path.empty();
    auto& progress_err = core::unescaped(err);
    const auto style = progress_style(a->progress, a->quiet, progress_err);
    auto progress =
        std::make_shared<Progress>(progress_err, style, progress_pace_from_environment());
    if (style != ProgressStyle::kNone)
      request.progress = [progress](std::size_t done, std::size_t total, const char* unit) {
        progress->update(done, total, unit);
      };
    if (!a->merge.empty())
      refuse_search_options(*command);
    add_config_inputs(outputs, a->config.path);
    for (const auto& shard : a->merge)
      outputs.add_input(shard, "a --merge file this command reads");
    const auto result =
        a->merge.empty() ? sim::plan(request) : sim::merge_plan_shards(request, a->merge);
    // A shard where nothing fits still writes its --csv: the merge ranks its rows with the rest.
    std::string text;
    std::optional<core::SimulationOutcome> nothing_fits;
    try {
      text = sim::render_plan(result);
    } catch (const core::SimulationOutcome& outcome) {
      if (request.shard.count == 1)
        throw;
      nothing_fits = outcome;
    }
    write_outputs(*a, result, !nothing_fits, outputs);
    if (nothing_fits)
      throw *nothing_fits;
    if (!a->quiet)
      out << text;
  });
}

}  // namespace ipusim::cli
