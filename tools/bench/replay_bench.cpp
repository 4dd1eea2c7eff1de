// Replay speed and memory with the cost model only: tasks replayed per second and the peak
// resident set for growing pipeline depth N and gradient accumulation M. Memory must stay
// flat as M grows (schedules are generated on demand; the replay keeps running totals).
//
//   build/tools/bench/replay_bench [max_M [schedule]]

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "schedules/build.hpp"
#include "sim/core/config_file.hpp"
#include "sim/report/report.hpp"

namespace {

using namespace ipusim;

nlohmann::json equal_stages(int stages, std::int64_t microbatches, const std::string& schedule) {
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
            {"pipeline_schedule", schedule},
            {"gradient_accumulation_count", microbatches},
            {"relaxed_divisibility", true},
            {"micro_batch_size", 8}}},
          {"hardware", {{"preset", "gc200"}, {"ipus", 64}}}};
}

long peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

void measure(int stages, std::int64_t microbatches, const std::string& schedule) {
  const auto spec = sim::build_run_spec(
      core::ConfigDocument::from_json(equal_stages(stages, microbatches, schedule), "bench"));
  const auto start = std::chrono::steady_clock::now();
  sim::SimulateOptions options;
  options.allow_oom = true;  // GPipe's stash of every micro-batch overflows at large M
  const auto report = sim::simulate(spec, options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%-12s N=%-3d M=%-8lld tasks=%-11lld %8.3f s  %7.2f M tasks/s  peak RSS %ld KiB\n",
              schedule.c_str(), stages, static_cast<long long>(microbatches),
              static_cast<long long>(report.replay.tasks), seconds,
              double(report.replay.tasks) / seconds / 1e6, peak_rss_kib());
  std::fflush(stdout);
}

bool runs_one_stage_per_ipu(const std::string& schedule) {
  try {
    schedules::PipelineShape shape;
    shape.device_mapping = {{0}, {1}};
    shape.microbatches = 4;
    schedules::build_schedule(schedule, shape);
    return true;
  } catch (const schedules::ScheduleError&) {
    return false;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t max_m = argc > 1 ? std::atoll(argv[1]) : 1000000;
  const std::string only = argc > 2 ? argv[2] : "";
  for (const auto& info : schedules::schedule_catalogue()) {
    const std::string& schedule = info.name;
    // The bench's pipelines put one stage on each IPU; interleaved_1f1b needs several.
    if ((!only.empty() && only != schedule) || !runs_one_stage_per_ipu(schedule))
      continue;
    for (int stages : {4, 16, 64}) {
      for (std::int64_t m = 1000; m <= max_m; m *= 10)
        measure(stages, m, schedule);
    }
  }
  return 0;
}
