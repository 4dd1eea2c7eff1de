// Sweep speed: 1,000 variants of the default config (10 gradient accumulation counts x 4
// schedules x 25 micro-batch sizes, no numerics) through sim::run_sweep, and where the time of
// one variant goes: reading the config files, applying the overrides to the loaded document,
// validating the spec and simulating.
//
//   build/tools/bench/sweep_bench [jobs]      (run from the repository root)

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "sim/sweep/sweep.hpp"

namespace {

using namespace ipusim;
using Clock = std::chrono::steady_clock;

const std::string kConfig = "configs/tf1_mnist_2ipu.json";

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string list(int first, int step, int count) {
  std::string out;
  for (int i = 0; i < count; ++i)
    out += (i ? "," : "") + std::to_string(first + i * step);
  return out;
}

sim::SweepPlan thousand_variants() {
  return sim::SweepPlan(
      {sim::parse_vary_argument("pipeline.gradient_accumulation_count=" + list(4, 4, 10)),
       sim::parse_vary_argument("pipeline.pipeline_schedule=grouped,interleaved,sequential,1f1b"),
       sim::parse_vary_argument("pipeline.micro_batch_size=" + list(1, 1, 25))});
}

// The best of a few sweeps: the machine may be shared, and the best shows what the code costs.
void measure_sweep(int jobs) {
  const auto plan = thousand_variants();
  const auto csv = (std::filesystem::temp_directory_path() /
                    ("ipusim-sweep-bench-" + std::to_string(::getpid()) + ".csv"))
                       .string();
  sim::SweepOptions options;
  options.jobs = jobs;
  double best = 1e9;
  for (int repeat = 0; repeat < 5; ++repeat) {
    std::filesystem::remove(csv);
    const auto start = Clock::now();
    core::OutputSet outputs;
    outputs.add(csv);
    sim::run_sweep(kConfig, plan, csv, options, outputs);
    outputs.commit();
    best = std::min(best, seconds_since(start));
  }
  std::filesystem::remove(csv);
  std::printf("sweep of %zu variants, %d job(s): %.3f s (%.0f runs/s), best of 5\n", plan.size(),
              jobs, best, double(plan.size()) / best);
}

// Microseconds per call of `step`, averaged over `n` calls.
template <typename Step>
double microseconds(int n, Step step) {
  const auto start = Clock::now();
  for (int i = 0; i < n; ++i)
    step(i);
  return seconds_since(start) / n * 1e6;
}

void measure_one_variant() {
  constexpr int kRepeats = 1000;
  const auto gac = [](int i) { return std::to_string(4 * (1 + i % 10)); };
  const double load = microseconds(kRepeats, [&](int i) {
    core::ConfigDocument::load(kConfig,
                               {{"pipeline.gradient_accumulation_count", gac(i), "bench"}});
  });
  const auto base = core::ConfigDocument::load(kConfig, {});
  const double copy = microseconds(kRepeats, [&](int i) {
    base.with_overrides({{"pipeline.gradient_accumulation_count", gac(i), "bench"}});
  });
  const double build = microseconds(kRepeats, [&](int) { sim::build_run_spec(base); });
  const auto spec = sim::build_run_spec(base);
  sim::SimulateOptions options;
  options.allow_oom = true;
  const double simulate = microseconds(kRepeats, [&](int) { sim::simulate(spec, options); });
  std::printf(
      "one variant, one thread: read the config files %.1f us (a sweep does it once), "
      "apply overrides to the loaded document %.1f us, validate %.1f us, simulate %.1f us\n",
      load, copy, build, simulate);
}

}  // namespace

int main(int argc, char** argv) {
  const int jobs =
      argc > 1 ? std::atoi(argv[1]) : int(std::max(1u, std::thread::hardware_concurrency()));
  measure_one_variant();
  measure_sweep(1);
  if (jobs > 1)
    measure_sweep(jobs);
  return 0;
}
