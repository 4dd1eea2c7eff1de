// Planner speed: `ipusim plan` on BERT-Large (24 encoders, 5 stages on 4 IPUs, GAC 2050) with
// Graphcore's step-based schedules; prints the candidates priced on the cost model per second
// and the time of the whole search, replays of the finalists included.
//
//   build/tools/bench/plan_bench [jobs]      (run from the repository root)

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "sim/sweep/planner.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ipusim;
  sim::PlanRequest request;
  request.config_path = "configs/bert_large_4ipu.json";
  request.jobs = argc > 1 ? std::atoi(argv[1]) : 1;
  const auto start = Clock::now();
  const auto result = sim::plan(request);
  const double seconds = seconds_since(start);
  std::printf(
      "plan of %s, %d job(s): %zu candidates evaluated, %zu replayed in %.2f s "
      "(%.0f candidates evaluated per second, replays included)\n",
      request.config_path.c_str(), request.jobs, result.evaluated, result.ranked.size(), seconds,
      double(result.evaluated) / seconds);
  std::printf("best: %s, %.0f samples/s\n", result.ranked.front().key().c_str(),
              result.ranked.front().report->throughput());
  return 0;
}
