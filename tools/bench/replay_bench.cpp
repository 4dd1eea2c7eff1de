// Replay speed and memory with the cost model only: tasks replayed per second and the peak
// resident set for growing pipeline depth N and gradient accumulation M. Memory must stay
// flat as M grows (schedules are generated on demand; the replay keeps running totals).
//
//   build/tools/bench/replay_bench [max_M [schedule]]

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "schedules/build.hpp"
#include "sim/core/config_file.hpp"
#include "sim/core/error.hpp"
#include "sim/report/report.hpp"
#include "tools/bench/equal_stages.hpp"

namespace {

using namespace ipusim;

long peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

void measure(int stages, std::int64_t microbatches, const std::string& schedule) {
  std::optional<sim::RunSpec> built;
  try {
    built = sim::build_run_spec(core::ConfigDocument::from_json(
        bench::equal_stages(stages, microbatches, schedule), "bench"));
  } catch (const core::ConfigError& error) {
    std::printf("%-16s N=%-3d M=%-8lld skipped: %s\n", schedule.c_str(), stages,
                static_cast<long long>(microbatches), error.what());
    return;
  }
  const auto& spec = *built;
  const auto start = std::chrono::steady_clock::now();
  sim::SimulateOptions options;
  options.allow_oom = true;  // GPipe's stash of every micro-batch overflows at large M
  const auto report = sim::simulate(spec, options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%-16s N=%-3d M=%-8lld tasks=%-11lld %8.3f s  %7.2f M tasks/s  peak RSS %ld KiB\n",
              schedule.c_str(), stages, static_cast<long long>(microbatches),
              static_cast<long long>(report.replay.tasks), seconds,
              double(report.replay.tasks) / seconds / 1e6, peak_rss_kib());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t max_m = argc > 1 ? std::atoll(argv[1]) : 1000000;
  const std::string only = argc > 2 ? argv[2] : "";
  for (const auto& info : schedules::schedule_catalogue()) {
    const std::string& schedule = info.name;
    if (!only.empty() && only != schedule)
      continue;
    for (int stages : {4, 16, 64}) {
      for (std::int64_t m = 1000; m <= max_m; m *= 10)
        measure(stages, m, schedule);
    }
  }
  return 0;
}
