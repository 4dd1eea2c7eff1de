// Planner speed: `ipusim plan` on BERT-Large (24 encoders, 5 stages on 4 IPUs, GAC 2050) with
// Graphcore's step-based schedules, then the search of the planner's target (3 schedules x 6
// GAC values x 3 recomputation modes), then 4 and 8 IPUs per replica on 16 IPUs at a fixed global
// batch; prints the candidates priced on the cost model per second and the time of each whole
// search, replays of the finalists included.
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

void measure(const char* name, ipusim::sim::PlanRequest request) {
  const auto start = Clock::now();
  const auto result = ipusim::sim::plan(request);
  const double seconds = seconds_since(start);
  std::printf(
      "%s, %d job(s): %zu candidates evaluated, %zu replayed in %.2f s "
      "(%.0f candidates evaluated per second, replays included)\n",
      name, request.jobs, result.evaluated, result.replayed, seconds,
      double(result.evaluated) / seconds);
  std::printf("  best: %s, %.0f samples/s\n", result.ranked.front().key().c_str(),
              result.ranked.front().report->figures.throughput);
}

int main(int argc, char** argv) {
  using namespace ipusim;
  sim::PlanRequest request;
  request.config_path = "configs/bert_large_4ipu.json";
  request.jobs = argc > 1 ? std::atoi(argv[1]) : 1;
  measure("default search", request);
  auto wide = request;
  wide.gacs = {"1000", "1500", "2000", "2050", "2500", "3000"};
  wide.recomputations = {"none", "auto", "recompute_and_backpropagate_interleaved"};
  measure("3 schedules x 6 GACs x 3 recomputation modes", wide);  // the default schedules
  auto shapes = request;
  shapes.total_ipus = 16;
  shapes.ipus_per_replica = {4, 8};
  shapes.global_batch = 65600;
  measure("4 and 8 IPUs per replica on 16, global batch 65,600", shapes);
  return 0;
}
