// How close the replay's time estimate (the note `run` prints before a long replay) comes to the
// time the replay takes, for every shipped config: each is replayed with the cost model only at
// the gradient accumulation count that makes about `tasks` tasks (default 2e8, the note's
// threshold), and the bench prints the estimate, the time and their ratio, then the range of
// the ratios. The estimate should stay within 1.5x of the time either way.
//
//   build/tools/bench/estimate_bench [tasks [config...]]   (from the repository root)

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/core/config_file.hpp"
#include "sim/core/error.hpp"
#include "sim/run/replay_budget.hpp"
#include "sim/run/run.hpp"

namespace {

using namespace ipusim;

// Every config under configs/ that runs on its own (not a hardware preset or a model include).
std::vector<std::string> shipped_configs() {
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::recursive_directory_iterator("configs")) {
    const auto path = entry.path();
    const std::string folder = path.parent_path().filename().string();
    if (path.extension() == ".json" && folder != "hardware" && folder != "models")
      paths.push_back(path.string());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

sim::RunSpec with_tasks(const std::string& path, double tasks) {
  const auto base = sim::build_run_spec(core::ConfigDocument::load(path, {}));
  const double per_microbatch = double(base.schedule->tasks_per_microbatch());
  const auto gac = std::max<std::int64_t>(1, std::int64_t(tasks / per_microbatch));
  return sim::build_run_spec(core::ConfigDocument::load(
      path,
      {core::parse_set_argument("pipeline.gradient_accumulation_count=" + std::to_string(gac)),
       core::parse_set_argument("pipeline.relaxed_divisibility=true")}));
}

// The ratio of the replay's seconds to the estimate, or 0 when the config cannot run so.
double measure(const std::string& path, double tasks) {
  try {
    const auto spec = with_tasks(path, tasks);
    sim::SimulateOptions options;
    options.allow_oom = true;
    const auto start = std::chrono::steady_clock::now();
    const auto report = sim::simulate(spec, options);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double estimate = sim::estimated_replay_seconds(spec, false);
    std::printf("%-48s %12lld tasks  estimate %6.2f s  took %6.2f s  ratio %5.2f\n", path.c_str(),
                static_cast<long long>(report.replay.tasks), estimate, seconds, seconds / estimate);
    std::fflush(stdout);
    return seconds / estimate;
  } catch (const core::ConfigError& error) {
    std::printf("%-48s skipped: %s\n", path.c_str(), error.what());
    return 0;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const double tasks = argc > 1 ? std::atof(argv[1]) : 2e8;
  std::vector<std::string> paths(argv + std::min(argc, 2), argv + argc);
  if (paths.empty())
    paths = shipped_configs();
  double low = 1e9;
  double high = 0;
  for (const auto& path : paths) {
    const double ratio = measure(path, tasks);
    if (ratio > 0) {
      low = std::min(low, ratio);
      high = std::max(high, ratio);
    }
  }
  std::printf("time / estimate: from %.2f to %.2f over %zu configs\n", low, high, paths.size());
  return 0;
}
