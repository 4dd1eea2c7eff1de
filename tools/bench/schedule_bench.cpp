// Throughput and memory of the schedule builders. First the time to build (and so validate)
// every schedule at the largest M a config accepts, 2^40, for N in {4, 64, 1024}; then tasks
// generated per second through program_task (every builder) and tasks_in_step (step-based
// ones), and the process's peak RSS after each size, for N in {4, 16, 64} stages and M from 1e3
// to 1e6 micro-batches. M grows innermost, so a schedule whose memory grew with M would show as
// a rising peak.
//
// Usage: schedule_bench [tasks per measurement, default 4000000]. Beyond that budget the
// tasks measured are spread evenly over the programs and steps.

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "schedules/build.hpp"
#include "schedules/step_schedule.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using ipusim::schedules::PipelineShape;
using ipusim::schedules::Schedule;
using ipusim::schedules::Task;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

long peak_rss_kb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

PipelineShape shape_on(int stages, int ipus, std::int64_t microbatches) {
  PipelineShape shape;
  for (int k = 0; k < stages; ++k)
    shape.device_mapping.push_back({k % ipus});
  shape.microbatches = microbatches;
  // The Graphcore schedules would refuse most of these M; the closed forms do not care.
  shape.relaxed_divisibility = true;
  return shape;
}

// One stage per IPU; a schedule that wants several stages per IPU (interleaved_1f1b) gets them
// round robin on at most 8 IPUs, so that M stays a multiple of the IPU count.
std::unique_ptr<ipusim::schedules::Schedule> build(const std::string& name, int stages,
                                                   std::int64_t microbatches) {
  try {
    return ipusim::schedules::build_schedule(name, shape_on(stages, stages, microbatches));
  } catch (const ipusim::schedules::ScheduleError&) {
    return ipusim::schedules::build_schedule(
        name, shape_on(stages, std::min(8, stages / 2), microbatches));
  }
}

// Visits `budget` of the `total` indices, in evenly spaced runs of consecutive ones.
template <typename Visit>
std::int64_t visit_spread(std::int64_t total, std::int64_t budget, Visit visit) {
  if (total <= budget) {
    for (std::int64_t i = 0; i < total; ++i)
      visit(i);
    return total;
  }
  constexpr std::int64_t kRuns = 64;
  const std::int64_t run = std::max<std::int64_t>(1, budget / kRuns);
  const std::int64_t stride = total / kRuns;
  std::int64_t visited = 0;
  for (std::int64_t r = 0; r < kRuns; ++r) {
    for (std::int64_t i = r * stride; i < std::min(r * stride + run, total); ++i, ++visited)
      visit(i);
  }
  return visited;
}

// Tasks per second through program_task over every IPU.
double program_rate(const Schedule& schedule, std::int64_t budget, std::int64_t& sink) {
  const int ipus = schedule.layout().ipus();
  const auto start = Clock::now();
  std::int64_t tasks = 0;
  for (int ipu = 0; ipu < ipus; ++ipu) {
    tasks += visit_spread(schedule.program_length(ipu), budget / ipus, [&](std::int64_t i) {
      sink += schedule.program_task(ipu, i).microbatch;
    });
  }
  return static_cast<double>(tasks) / seconds_since(start);
}

// Tasks per second through tasks_in_step over every step and IPU.
double step_rate(const Schedule& schedule, std::int64_t budget, std::int64_t& sink) {
  const int ipus = schedule.layout().ipus();
  std::vector<Task> tasks;
  std::int64_t count = 0;
  std::int64_t per_step = 0;
  for (int ipu = 0; ipu < ipus; ++ipu)
    per_step += schedule.program_length(ipu);
  per_step =
      std::max<std::int64_t>(1, per_step / std::max<std::int64_t>(1, schedule.as_steps()->steps()));
  const auto start = Clock::now();
  visit_spread(schedule.as_steps()->steps(), std::max<std::int64_t>(1, budget / per_step),
               [&](std::int64_t step) {
                 for (int ipu = 0; ipu < ipus; ++ipu) {
                   schedule.as_steps()->tasks_in_step(step, ipu, tasks);
                   count += static_cast<std::int64_t>(tasks.size());
                   sink += static_cast<std::int64_t>(tasks.size());
                 }
               });
  return static_cast<double>(count) / seconds_since(start);
}

// Builds every schedule at M = 2^40; validation builds the schedule and nothing more.
void print_largest_m_builds() {
  constexpr std::int64_t kLargestM = std::int64_t{1} << 40;
  std::printf("%-17s %5s %14s %10s %14s\n", "schedule", "N", "M", "build ms", "peak RSS MB");
  for (const auto& info : ipusim::schedules::schedule_catalogue()) {
    for (int stages : {4, 64, 1024}) {
      const auto start = Clock::now();
      const auto schedule = build(info.name, stages, kLargestM);
      const double build_ms = 1e3 * seconds_since(start);
      std::printf("%-17s %5d %14lld %10.2f %14.1f\n", info.name.c_str(), stages,
                  static_cast<long long>(schedule->shape().microbatches), build_ms,
                  static_cast<double>(peak_rss_kb()) / 1024);
      std::fflush(stdout);
    }
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t budget = argc > 1 ? std::stoll(argv[1]) : 4'000'000;
  std::int64_t sink = 0;
  print_largest_m_builds();
  std::printf("%-17s %3s %8s %10s %16s %16s %14s\n", "schedule", "N", "M", "build ms",
              "program tasks/s", "step tasks/s", "peak RSS MB");
  for (const auto& info : ipusim::schedules::schedule_catalogue()) {
    for (int stages : {4, 16, 64}) {
      for (std::int64_t m : {1'000, 10'000, 100'000, 1'000'000}) {
        const auto start = Clock::now();
        const auto schedule = build(info.name, stages, m);
        const double build_ms = 1e3 * seconds_since(start);
        const double program = program_rate(*schedule, budget, sink);
        const double step = schedule->step_based() ? step_rate(*schedule, budget, sink) : 0;
        char step_text[32] = "-";
        if (schedule->step_based())
          std::snprintf(step_text, sizeof step_text, "%.1fM", step / 1e6);
        std::printf("%-17s %3d %8lld %10.2f %15.1fM %16s %14.1f\n", info.name.c_str(), stages,
                    static_cast<long long>(m), build_ms, program / 1e6, step_text,
                    static_cast<double>(peak_rss_kb()) / 1024);
        std::fflush(stdout);
      }
    }
  }
  std::printf("(checksum %lld)\n", static_cast<long long>(sink));
  return 0;
}
