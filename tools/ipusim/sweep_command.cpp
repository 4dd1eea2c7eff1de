// `ipusim sweep` runs the cartesian product of --vary values into a CSV that survives a kill;
// `ipusim merge` joins the CSVs of a sweep's shards. Both are sim/sweep's.

#include <stdlib.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "sim/core/format.hpp"
#include "sim/core/printable.hpp"
#include "sim/core/signal_cleanup.hpp"
#include "sim/sweep/sweep.hpp"
#include "tools/ipusim/command.hpp"
#include "tools/ipusim/progress.hpp"

namespace ipusim::cli {
namespace {

struct SweepArgs {
  ConfigArgs config;
  sim::SweepRequest request;  // config_path, base_overrides and progress set when it runs
  std::string progress = "auto";
  bool quiet = false;
  bool json_lines = false;
};

// The folder scratch files go to: TMPDIR when set (it must be a folder), else /tmp.
std::filesystem::path temporary_folder() {
  const char* tmpdir = std::getenv("TMPDIR");
  const std::filesystem::path folder = tmpdir && *tmpdir ? tmpdir : "/tmp";
  std::error_code error;
  if (!std::filesystem::is_directory(folder, error))
    throw core::ConfigError("-o", "",
                            "a sweep without -o keeps its CSV in a temporary folder, but " +
                                folder.string() + (tmpdir && *tmpdir ? " (TMPDIR)" : "") +
                                " is not a folder; set TMPDIR to one, or give -o");
  return folder;
}

// A private folder for the CSV of a sweep run without -o, removed with everything in it, also
// when a signal or a closed pipe stops the sweep.
class ScratchFolder {
 public:
  ScratchFolder() {
    std::string pattern = (temporary_folder() / "ipusim-sweep-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr)
      throw core::ConfigError("-o", "",
                              "cannot make a temporary folder for the sweep's CSV in " +
                                  std::filesystem::path(pattern).parent_path().string() + " (" +
                                  std::strerror(errno) + "); give -o");
    path_ = pattern;
    folder_cleanup_ = core::RemoveOnSignal(path_.string(), core::RemoveOnSignal::Kind::kFolder);
    csv_cleanup_ = core::RemoveOnSignal(file("sweep.csv"));
  }
  ~ScratchFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
  core::RemoveOnSignal folder_cleanup_;
  core::RemoveOnSignal csv_cleanup_;
};

// Runs the sweep into its CSV (and page), with a progress bar on a terminal. Without -o the CSV
// is written to a scratch folder and printed on the output (the summary then goes to the error
// stream), unless --json-lines streams the runs there instead.
void run_sweep(const SweepArgs& a, std::ostream& out, std::ostream& err) {
  std::optional<ScratchFolder> scratch;
  auto request = a.request;
  if (request.csv_path.empty()) {
    scratch.emplace();
    request.csv_path = scratch->file("sweep.csv");
    request.csv_scratch = true;
    request.csv_printed = !a.json_lines;
  }
  core::OutputSet outputs;
  outputs.add(request.csv_path, "-o");
  if (!request.html_path.empty())
    outputs.add(request.html_path, "--html");
  add_config_inputs(outputs, a.config.path);
  request.config_path = a.config.path;
  request.base_overrides = a.config.overrides();
  auto& progress_err = core::unescaped(err);
  const auto style = progress_style(a.progress, a.quiet, progress_err);
  auto progress = std::make_shared<Progress>(progress_err, style, progress_pace_from_environment());
  if (style != ProgressStyle::kNone)
    // The first call gives the runs a resumed sweep finds done: they are not this process's pace.
    request.progress = [progress, first = true](std::size_t done, std::size_t total) mutable {
      if (std::exchange(first, false))
        progress->begin("runs", done);
      progress->update(done, total, "runs");
    };
  if (a.json_lines)
    request.on_json_line = [&out](const std::string& line) { out << line << std::flush; };
  const auto outcome = sim::sweep(request, outputs);
  outputs.commit();
  if (request.csv_printed) {
    out << sim::read_sweep_csv(request.csv_path).table.to_csv() << std::flush;
    // The command line reports the failed write (cli::run); the summary would claim the CSV.
    if (!out)
      return;
  }
  if (!a.quiet)
    (a.json_lines || request.csv_printed ? err : out) << outcome.summary;
  if (outcome.none_valid)
    throw *outcome.none_valid;
}

}  // namespace

void add_sweep_command(CLI::App& app, std::ostream& out, std::ostream& err) {
  auto a = std::make_shared<SweepArgs>();
  a->request.jobs = int(std::max(1u, std::thread::hardware_concurrency()));
  auto* command = app.add_subcommand(
      "sweep", "Simulate every combination of --vary values; one CSV row per run, resumable");
  add_config_options(command, a->config);
  command
      ->add_option("--vary", a->request.varies,
                   "A config path and its values: PATH=V1,V2,... (values read like --set); "
                   "repeatable, the first --vary varies slowest")
      ->type_name("PATH=V1,V2,...")
      ->allow_extra_args(false)
      ->required();
  command
      ->add_option("-o,--output", a->request.csv_path,
                   "The CSV file; rerunning skips its runs; locked while a sweep writes it "
                   "(without it, the CSV is printed on the output and nothing is kept)")
      ->check(non_empty_path());
  command
      ->add_option("--jobs", a->request.jobs,
                   "Runs simulated at once (default: the number of cores)")
      ->check(integer_in(1, 4096));
  command
      ->add_option("--shard", a->request.shard,
                   "Run only slice I of N (runs whose index modulo N is I-1); join the "
                   "shards' files with 'ipusim merge'); auto: the Slurm array task's slice")
      ->type_name("I/N|auto");
  command
      ->add_option("--html", a->request.html_path,
                   "Also write an HTML page plotting ramp overhead and throughput against "
                   "each varied value")
      ->check(non_empty_path());
  add_progress_option(command, a->progress);
  command->add_flag("--quiet", a->quiet, "Print only errors");
  command->add_flag("--json-lines", a->json_lines,
                    "Stream each run as one line of JSON on the output as its row is written "
                    "(runs already in the file first); the summary goes to the error stream");
  command->footer(
      "Example:\n  ipusim sweep configs/tf1_mnist_2ipu.json -o gac.csv "
      "--vary pipeline.gradient_accumulation_count=8,16,32,64,128 "
      "--vary pipeline.pipeline_schedule=grouped,interleaved");
  command->callback([a, &out, &err] { run_sweep(*a, out, err); });
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
    for (const auto& input : o->inputs)
      outputs.add_input(input, "one of the files this command merges");
    // A sweep writing the file holds its lock; replacing the file under it would lose its rows.
    if (std::filesystem::exists(o->output))
      outputs.open_append(o->output, sim::sweep_file_busy_text());
    const sim::SweepMerge merge(o->inputs);
    outputs.write_streamed(o->output, [&](const auto& put) { merge.write(put); });
    outputs.commit();
    out << "merged " << o->inputs.size()
        << " file(s): " << sim::with_commas(std::int64_t(merge.summary().runs)) << " runs into "
        << o->output << "\n";
    err << sim::missing_runs_warning(merge.summary());
  });
}

}  // namespace ipusim::cli
