// `ipusim sweep` runs the cartesian product of --vary values into a CSV that survives a kill;
// `ipusim merge` joins the CSVs of a sweep's shards.

#include <unistd.h>

#include <cmath>
#include <iostream>
#include <memory>
#include <thread>

#include "sim/core/format.hpp"
#include "sim/html/html_report.hpp"
#include "sim/sweep/sweep.hpp"
#include "tools/ipusim/command.hpp"

namespace ipusim::cli {
namespace {

struct SweepArgs {
  ConfigArgs config;
  std::vector<std::string> varies;
  std::string output;
  int jobs = int(std::max(1u, std::thread::hardware_concurrency()));
  std::string shard = "1/1";
  std::string html_path;
  bool quiet = false;
};

// The CSV's varied and metric columns, without the run index and the error text.
sim::SweepPlotTable plot_table(const sim::SweepTable& table, std::size_t varied) {
  sim::SweepPlotTable plot;
  const auto& columns = table.columns;
  plot.varied.assign(columns.begin() + 1, columns.begin() + 1 + std::ptrdiff_t(varied));
  plot.metrics.assign(columns.begin() + 1 + std::ptrdiff_t(varied), columns.end() - 1);
  for (const auto& row : table.rows)
    plot.rows.emplace_back(row.begin() + 1, row.end() - 1);
  return plot;
}

// "[=====>    ] 412/1000 runs", redrawn in place; only on a terminal, where '\r' means something.
class ProgressBar {
 public:
  explicit ProgressBar(std::ostream& err) : err_(err) {}

  void update(std::size_t done, std::size_t total) {
    const int percent = total ? int(done * 100 / total) : 100;
    if (percent == shown_ && done != total)
      return;
    shown_ = percent;
    constexpr int kWidth = 30;
    const int filled = total ? int(done * kWidth / total) : kWidth;
    std::string bar(std::size_t(filled), '=');
    if (filled < kWidth)
      bar += '>' + std::string(std::size_t(kWidth - filled - 1), ' ');
    err_ << "\r[" << bar << "] " << done << "/" << total << " runs" << std::flush;
    if (done == total)
      err_ << "\n";
  }

 private:
  std::ostream& err_;
  int shown_ = -1;
};

bool is_terminal(const std::ostream& stream) {
  return &stream == &std::cerr && ::isatty(STDERR_FILENO);
}

std::string cell(const sim::SweepTable& table, const std::vector<std::string>& row,
                 const std::string& column) {
  return row[*table.column(column)];
}

// The row with the highest throughput among those that ran and fit in memory.
const std::vector<std::string>* fastest(const sim::SweepTable& table) {
  const std::vector<std::string>* best = nullptr;
  for (const auto& row : table.rows) {
    if (cell(table, row, "fits_in_memory") != "true")
      continue;
    const double throughput = std::stod(cell(table, row, "throughput_samples_per_second"));
    if (!best || throughput > std::stod(cell(table, *best, "throughput_samples_per_second")))
      best = &row;
  }
  return best;
}

std::string summary_text(const SweepArgs& a, const sim::SweepPlan& plan,
                         const sim::SweepSummary& summary) {
  std::size_t invalid = 0;
  std::size_t out_of_memory = 0;
  for (const auto& row : summary.table.rows) {
    invalid += !cell(summary.table, row, "error").empty();
    out_of_memory += cell(summary.table, row, "fits_in_memory") == "false";
  }
  std::string out =
      "ipusim sweep: " + a.config.path + ", " + sim::with_commas(summary.runs) + " runs";
  if (a.shard != "1/1")
    out += " (shard " + a.shard + " of " + sim::with_commas(plan.size()) + " runs)";
  out += "\n" + sim::with_commas(summary.written) + " simulated, " +
         sim::with_commas(summary.skipped) + " already in " + a.output + "; " +
         sim::with_commas(invalid) + " invalid (see the error column), " +
         sim::with_commas(out_of_memory) + " out of memory\n";
  if (const auto* best = fastest(summary.table)) {
    const double step_ms = std::stod(cell(summary.table, *best, "step_seconds")) * 1e3;
    out += "fastest: " + plan.key(sim::run_index(*best)) + ": " +
           sim::with_commas(std::llround(
               std::stod(cell(summary.table, *best, "throughput_samples_per_second")))) +
           " samples/s, step " +
           sim::with_commas(std::stoll(cell(summary.table, *best, "step_cycles"))) + " cycles (" +
           sim::fixed(step_ms, 4) + " ms), ramp overhead " +
           sim::percent(std::stod(cell(summary.table, *best, "ramp_overhead"))) + "\n";
  }
  return out + "wrote " + a.output + " (one row per run, sorted by run)\n";
}

std::string missing_text(const std::vector<std::size_t>& missing) {
  std::string out = "warning: " + sim::with_commas(missing.size()) +
                    " run(s) missing below the last one present (a shard not merged, or not "
                    "finished):";
  for (std::size_t i = 0; i < missing.size() && i < 10; ++i)
    out += " " + std::to_string(missing[i]);
  return out + (missing.size() > 10 ? " ...\n" : "\n");
}

}  // namespace

void add_sweep_command(CLI::App& app, std::ostream& out, std::ostream& err) {
  auto a = std::make_shared<SweepArgs>();
  auto* command = app.add_subcommand(
      "sweep", "Simulate every combination of --vary values; one CSV row per run, resumable");
  add_config_options(command, a->config);
  command
      ->add_option("--vary", a->varies,
                   "A config path and its values: PATH=V1,V2,... (values read like --set); "
                   "repeatable, the first --vary varies slowest")
      ->type_name("PATH=V1,V2,...")
      ->allow_extra_args(false)
      ->required();
  command
      ->add_option("-o,--output", a->output,
                   "The CSV file; rerunning skips its runs; locked while a sweep writes it")
      ->required()
      ->check(non_empty_path());
  command->add_option("--jobs", a->jobs, "Runs simulated at once (default: the number of cores)")
      ->check(CLI::Range(1, 4096));
  command
      ->add_option("--shard", a->shard,
                   "Run only slice I of N (runs whose index modulo N is I-1); join the "
                   "shards' files with 'ipusim merge'")
      ->type_name("I/N");
  command
      ->add_option("--html", a->html_path,
                   "Also write an HTML page plotting ramp overhead and throughput against "
                   "each varied value")
      ->check(non_empty_path());
  command->add_flag("--quiet", a->quiet, "Print only errors");
  command->footer(
      "Example:\n  ipusim sweep configs/tf1_mnist_2ipu.json -o gac.csv "
      "--vary pipeline.gradient_accumulation_count=8,16,32,64,128 "
      "--vary pipeline.pipeline_schedule=grouped,interleaved");
  command->callback([a, &out, &err] {
    core::OutputSet outputs;
    outputs.add(a->output, "-o");
    if (!a->html_path.empty())
      outputs.add(a->html_path, "--html");
    std::vector<sim::SweepAxis> axes;
    for (const auto& vary : a->varies)
      axes.push_back(sim::parse_vary_argument(vary));
    const sim::SweepPlan plan(std::move(axes));
    sim::SweepOptions options;
    options.base_overrides = a->config.overrides();
    options.jobs = a->jobs;
    options.shard = sim::parse_shard(a->shard);
    auto bar = std::make_shared<ProgressBar>(err);
    if (!a->quiet && is_terminal(err))
      options.progress = [bar](std::size_t done, std::size_t total) { bar->update(done, total); };
    const auto summary = sim::run_sweep(a->config.path, plan, a->output, options, outputs);
    if (!a->html_path.empty())
      outputs.write(a->html_path, sim::sweep_html(plot_table(summary.table, plan.axes().size())));
    outputs.commit();
    if (!a->quiet)
      out << summary_text(*a, plan, summary);
  });
}

void add_merge_command(CLI::App& app, std::ostream& out, std::ostream& err) {
  struct Options {
    std::vector<std::string> inputs;
    std::string output;
  };
  auto o = std::make_shared<Options>();
  auto* command =
      app.add_subcommand("merge", "Join the CSV files of a sweep's shards into one, by run");
  command->add_option("inputs", o->inputs, "The shards' CSV files")
      ->required()
      ->check(non_empty_path());
  command->add_option("-o,--output", o->output, "The joined CSV file")
      ->required()
      ->check(non_empty_path());
  command->footer("Example:\n  ipusim merge -o sweep.csv shard-*.csv");
  command->callback([o, &out, &err] {
    core::OutputSet outputs;
    outputs.add(o->output, "-o");
    const auto merged = sim::merge_sweep_csvs(o->inputs);
    outputs.write(o->output, merged.table.to_csv());
    outputs.commit();
    out << "merged " << o->inputs.size()
        << " file(s): " << sim::with_commas(merged.table.rows.size()) << " runs into " << o->output
        << "\n";
    if (!merged.missing.empty())
      err << missing_text(merged.missing);
  });
}

}  // namespace ipusim::cli
