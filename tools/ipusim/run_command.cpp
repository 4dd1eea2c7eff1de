#include <algorithm>
#include <memory>
#include <ostream>

#include "sim/core/printable.hpp"
#include "sim/core/suggest.hpp"
#include "sim/html/html_report.hpp"
#include "sim/numeric/numeric.hpp"
#include "sim/numeric/training.hpp"
#include "sim/replay/timeline.hpp"
#include "sim/report/operations_report.hpp"
#include "sim/report/report.hpp"
#include "sim/report/trace.hpp"
#include "tools/ipusim/command.hpp"
#include "tools/ipusim/progress.hpp"

namespace ipusim::cli {
namespace {

struct RunOptions {
  ConfigArgs config;
  std::string json_path;
  std::string trace_path;
  std::string trace_format;  // "json" or "proto"; empty: by the file's name
  std::string html_path;
  std::string progress = "auto";
  bool quiet = false;
  bool allow_oom = false;
  bool numeric = false;
  bool no_numeric = false;
  bool operations = false;

  sim::NumericMode numeric_mode() const {
    if (numeric)
      return sim::NumericMode::kOn;
    return no_numeric ? sim::NumericMode::kOff : sim::NumericMode::kAuto;
  }

  sim::TraceFormat format() const {
    if (trace_format.empty())
      return sim::trace_format_of_path(trace_path);
    return trace_format == "proto" ? sim::TraceFormat::kProto : sim::TraceFormat::kJson;
  }
};

const std::vector<std::string> kTraceFormats = {"json", "proto"};

// A numeric check that failed fails the run, after the report is written.
void check_numeric(const sim::RunReport& report) {
  if (!report.numeric || report.numeric->bit_identical)
    return;
  throw sim::NumericMismatch("numeric check failed: the pipelined run differs from the reference");
}

// Simulates the config and writes what the options ask for: the files first, then the text.
void run_and_report(const RunOptions& o, std::ostream& out, std::ostream& err) {
  core::OutputSet outputs;
  const std::pair<const char*, std::string> given[] = {
      {"--json", o.json_path}, {"--trace", o.trace_path}, {"--html", o.html_path}};
  for (const auto& [option, path] : given) {
    if (!path.empty())
      outputs.add(path, option);
  }
  const auto spec = load(o.config);
  sim::declare_run_inputs(outputs, spec);
  sim::SimulateOptions options;
  options.allow_oom = o.allow_oom;
  options.numeric = o.numeric_mode();
  if (!o.quiet)
    options.notify = [&err](const std::string& notice) { err << "note: " << notice << "\n"; };
  auto& progress_err = core::unescaped(err);
  const auto style = progress_style(o.progress, o.quiet, progress_err);
  auto progress = std::make_shared<Progress>(progress_err, style, progress_pace_from_environment());
  if (style != ProgressStyle::kNone)
    options.progress = [progress](std::int64_t done, std::int64_t total) {
      progress->update(std::size_t(done), std::size_t(total), "tasks");
    };
  // The trace goes to its file as the replay produces it; the HTML report draws a Timeline.
  std::unique_ptr<sim::TraceWriter> trace;
  if (!o.trace_path.empty()) {
    sim::refuse_oversized_trace(spec, o.trace_path, "--trace", o.format(),
                                core::free_bytes_for(o.trace_path));
    trace = std::make_unique<sim::TraceWriter>(spec, o.format(), outputs.open_stream(o.trace_path));
    options.observers.push_back(trace.get());
  }
  sim::TimelineRecorder recorder;
  if (!o.html_path.empty())
    options.observers.push_back(&recorder);
  const auto report = sim::simulate(spec, options);
  if (trace)
    trace->finish(report);
  if (!o.json_path.empty())
    outputs.write(o.json_path, sim::to_json(report).dump(2) + "\n");
  if (!o.html_path.empty())
    outputs.write(o.html_path, sim::html_report(report, recorder.timeline()));
  outputs.commit();
  if (!o.quiet) {
    out << sim::render_text(report);
    if (o.operations)
      out << sim::render_operations(report);
  }
  check_numeric(report);
}

}  // namespace

void add_run_command(CLI::App& app, std::ostream& out, std::ostream& err) {
  auto o = std::make_shared<RunOptions>();
  auto* command = app.add_subcommand(
      "run", "Simulate one config: step time, throughput, utilisation per phase, memory");
  add_config_options(command, o->config);
  command->add_option("--json", o->json_path, "Also write the report as JSON to this file")
      ->check(non_empty_path());
  auto* trace =
      command
          ->add_option("--trace", o->trace_path,
                       "Write a trace of the step for ui.perfetto.dev, as it is replayed: "
                       "Chrome trace-event JSON, or Perfetto's protobuf for a .pftrace or "
                       ".perfetto-trace file")
          ->check(non_empty_path());
  command
      ->add_option("--trace-format", o->trace_format,
                   "json or proto: the --trace file's format whatever its name")
      ->check(CLI::Validator(
          [](std::string& format) -> std::string {
            if (std::find(kTraceFormats.begin(), kTraceFormats.end(), format) !=
                kTraceFormats.end())
              return "";
            return "unknown trace format '" + format + "'" +
                   core::did_you_mean(format, kTraceFormats) + " (json or proto)";
          },
          "FORMAT"))
      ->needs(trace);
  command
      ->add_option("--html", o->html_path,
                   "Write a self-contained HTML report: pipeline chart, utilisation, memory")
      ->check(non_empty_path());
  add_progress_option(command, o->progress);
  command->add_flag("--quiet", o->quiet, "Print only errors");
  command->add_flag("--ops", o->operations,
                    "Also print the Operations Summary: each stage's operations with their "
                    "cycles, FLOPs, tiles, bound and code memory");
  command->add_flag("--allow-oom", o->allow_oom,
                    "Finish the run when an IPU runs out of memory and report the overflow");
  auto* numeric = command->add_flag(
      "--numeric", o->numeric,
      "Run the kernels in the replay and check them against a one-device reference (default "
      "when every layer has a kernel)");
  command->add_flag("--no-numeric", o->no_numeric, "Time and memory only; no kernels run")
      ->excludes(numeric);
  command->footer(
      "Example:\n  ipusim run configs/tf1_mnist_2ipu.json --gac 64 --json report.json "
      "--trace trace.json --html report.html");
  command->callback([o, &out, &err] { run_and_report(*o, out, err); });
}

}  // namespace ipusim::cli
