// `run --trace` speed and memory: a pipeline of N = 64 equal stages and M micro-batches traced
// to a file in each format, as `ipusim run CONFIG --trace FILE` does (TraceWriter streaming
// through OutputSet::open_stream). Each case runs in a child process so that its peak resident
// set is its own. Printed: the file's size, the replay alone (with an observer that does
// nothing, so the same event engine runs), the run with the trace, the trace's megabytes per
// second of the wall time it adds (fsync included) and of the CPU time, and the peak RSS,
// which must stay flat as M grows 4x.
//
//   build/tools/bench/trace_bench [folder for the files [schedule]]
//
// The folder defaults to /tmp and the schedule to the configs' default; the README's figures
// are of `build/tools/bench/trace_bench /tmp 1f1b`.

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "schedules/build.hpp"
#include "sim/core/config_file.hpp"
#include "sim/core/output_file.hpp"
#include "sim/report/report.hpp"
#include "sim/report/trace.hpp"
#include "tools/bench/equal_stages.hpp"

namespace {

using namespace ipusim;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Timed {
  double seconds = 0;
  double cpu_seconds = 0;  // user and system
  std::int64_t tasks = 0;
};

double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// One simulate() of the spec, traced to `path` unless it is empty.
Timed run_once(const sim::RunSpec& spec, sim::TraceFormat format, const std::string& path) {
  sim::SimulateOptions options;
  sim::ReplayObserver idle;  // keeps the event engine of a traced run
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = cpu_seconds();
  if (path.empty()) {
    options.observers = {&idle};
    const auto report = sim::simulate(spec, options);
    return {seconds_since(start), cpu_seconds() - cpu_start, report.replay.tasks};
  }
  core::OutputSet outputs;
  outputs.add(path, "--trace");
  sim::TraceWriter trace(spec, format, outputs.open_stream(path));
  options.observers = {&trace};
  const auto report = sim::simulate(spec, options);
  trace.finish(report);
  outputs.commit();
  return {seconds_since(start), cpu_seconds() - cpu_start, report.replay.tasks};
}

// Runs in a child process: the replay alone, then traced; prints one line.
void measure(int stages, std::int64_t microbatches, sim::TraceFormat format,
             const std::string& folder, const std::string& schedule) {
  const auto spec = sim::build_run_spec(core::ConfigDocument::from_json(
      bench::equal_stages(stages, microbatches, schedule), "bench"));
  const bool proto = format == sim::TraceFormat::kProto;
  const std::string path = folder + "/trace_bench" + (proto ? ".pftrace" : ".json");
  const Timed replay = run_once(spec, format, "");
  const Timed traced = run_once(spec, format, path);
  const double bytes = double(std::filesystem::file_size(path));
  std::filesystem::remove(path);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const double mb = bytes / 1e6;
  std::printf(
      "%-5s M=%-5lld %8lld tasks %6.1f MB %4.0f B/task | replay %5.2f s, traced %5.2f s: "
      "%4.0f MB/s (CPU %4.2f s: %4.0f MB/s) | peak RSS %3.0f MiB\n",
      proto ? "proto" : "json", static_cast<long long>(microbatches),
      static_cast<long long>(traced.tasks), mb, bytes / double(traced.tasks), replay.seconds,
      traced.seconds, mb / (traced.seconds - replay.seconds), traced.cpu_seconds,
      mb / (traced.cpu_seconds - replay.cpu_seconds), double(usage.ru_maxrss) / 1024.0);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string folder = argc > 1 ? argv[1] : "/tmp";
  const std::string schedule = argc > 2 ? argv[2] : schedules::default_schedule();
  std::printf("N = 64 stages, %s\n", schedule.c_str());
  for (const auto format : {sim::TraceFormat::kJson, sim::TraceFormat::kProto}) {
    for (const std::int64_t microbatches : {1024, 4096}) {
      std::fflush(stdout);
      const pid_t child = fork();
      if (child == 0) {
        measure(64, microbatches, format, folder, schedule);
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
