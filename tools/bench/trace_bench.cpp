// `run --trace` speed and memory: a 1F1B pipeline of N equal stages and M micro-batches traced
// to a file in each format, as `ipusim run CONFIG --trace FILE` does (TraceWriter streaming
// through OutputSet::open_stream). Each case runs in a child process so that its peak resident
// set is its own. Printed: the file's size, the replay alone (with an observer that does
// nothing, so the same event engine runs), the run with the trace, the trace's bytes per
// second of the time it adds, and the peak RSS, which must stay flat as M grows 4x.
//
//   build/tools/bench/trace_bench [folder for the files (default /tmp)]

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "sim/core/config_file.hpp"
#include "sim/core/output_file.hpp"
#include "sim/report/report.hpp"
#include "sim/report/trace.hpp"

namespace {

using namespace ipusim;

nlohmann::json traced_stages(int stages, std::int64_t microbatches) {
  nlohmann::json layers = nlohmann::json::array();
  nlohmann::json splits = nlohmann::json::array();
  for (int k = 0; k < stages; ++k) {
    const std::string id = "d" + std::to_string(k);
    layers.push_back({{"id", id},
                      {"type", "dense"},
                      {"units", 16},
                      {"cycles", {{"forward", 1000}, {"backward", 2000}}}});
    if (k > 0)
      splits.push_back(id);
  }
  layers.push_back({{"id", "loss"}, {"type", "softmax_cross_entropy"}});
  return {{"model", {{"name", "bench"}, {"input", {{"shape", {16}}}}, {"layers", layers}}},
          {"pipeline",
           {{"splits", splits},
            {"pipeline_schedule", "1f1b"},
            {"gradient_accumulation_count", microbatches},
            {"micro_batch_size", 8}}},
          {"hardware", {{"preset", "gc200"}, {"ipus", 64}}}};
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Timed {
  double seconds = 0;
  std::int64_t tasks = 0;
};

// One simulate() of the spec, traced to `path` unless it is empty.
Timed run_once(const sim::RunSpec& spec, sim::TraceFormat format, const std::string& path) {
  sim::SimulateOptions options;
  sim::ReplayObserver idle;  // keeps the event engine of a traced run
  const auto start = std::chrono::steady_clock::now();
  if (path.empty()) {
    options.observers = {&idle};
    const auto report = sim::simulate(spec, options);
    return {seconds_since(start), report.replay.tasks};
  }
  core::OutputSet outputs;
  outputs.add(path, "--trace");
  sim::TraceWriter trace(spec, format, outputs.open_stream(path));
  options.observers = {&trace};
  const auto report = sim::simulate(spec, options);
  trace.finish(report);
  outputs.commit();
  return {seconds_since(start), report.replay.tasks};
}

// Runs in a child process: the replay alone, then traced; prints one line.
void measure(int stages, std::int64_t microbatches, sim::TraceFormat format,
             const std::string& folder) {
  const auto spec = sim::build_run_spec(
      core::ConfigDocument::from_json(traced_stages(stages, microbatches), "bench"));
  const bool proto = format == sim::TraceFormat::kProto;
  const std::string path = folder + "/trace_bench" + (proto ? ".pftrace" : ".json");
  const Timed replay = run_once(spec, format, "");
  const Timed traced = run_once(spec, format, path);
  const double bytes = double(std::filesystem::file_size(path));
  std::filesystem::remove(path);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf(
      "%-5s N=%-3d M=%-5lld %9lld tasks %8.1f MB %6.2f s replay %6.2f s traced %7.0f MB/s "
      "%5.0f B/task  peak RSS %4.0f MiB\n",
      proto ? "proto" : "json", stages, static_cast<long long>(microbatches),
      static_cast<long long>(traced.tasks), bytes / 1e6, replay.seconds, traced.seconds,
      bytes / 1e6 / (traced.seconds - replay.seconds), bytes / double(traced.tasks),
      double(usage.ru_maxrss) / 1024.0);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string folder = argc > 1 ? argv[1] : "/tmp";
  for (const auto format : {sim::TraceFormat::kJson, sim::TraceFormat::kProto}) {
    for (const std::int64_t microbatches : {1024, 4096}) {
      std::fflush(stdout);
      const pid_t child = fork();
      if (child == 0) {
        measure(64, microbatches, format, folder);
        _exit(0);
      }
      int status = 0;
      waitpid(child, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return 1;
    }
  }
  return 0;
}
