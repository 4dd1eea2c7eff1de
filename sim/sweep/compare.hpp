#pragma once
// Comparisons: several configs, schedules or what-if variants simulated side by side, one column
// per run, and which is fastest. Unlike a sweep, every run is kept whole (its report, and its
// timeline for the page), so a comparison is a few runs, not thousands.
//
// May include sim/core; its .cpp also sim/report, sim/replay's timeline, sim/html and the room's
// metrics and CSV.

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "sim/core/config_file.hpp"
#include "sim/core/output_file.hpp"

namespace ipusim::sim {

// What `ipusim compare` asks for, as typed on its command line. The runs are every config with
// every schedule (or its own) and every --with variant (or none), in that nesting.
struct CompareRequest {
  std::vector<std::string> configs;
  std::vector<core::Override> base_overrides;  // what-if options applied to every run
  std::vector<std::string> schedules;          // --schedules, each a run
  std::vector<std::string> withs;              // --with "PATH=VALUE;PATH=VALUE", each a run
  // A run whose schedule refuses its config's layout runs on the layout the schedule needs on
  // the same IPUs (schedules::relayout_mapping), with plan's best split of it.
  bool relayout = false;
  std::string json_path;  // each empty when not asked for
  std::string csv_path;
  std::string html_path;
  // Told (tasks replayed, tasks to replay) over all the runs that load, as the replays go
  // (SimulateOptions::progress); the runs' tasks are the replay_tasks of each.
  std::function<void(std::size_t done, std::size_t total)> progress;
};

// Simulates every run without numerics, writes the files asked for into `outputs` (which must
// hold them) and returns the side-by-side table, the runs whose config is invalid and the
// fastest. When no run simulates, the first run's error is thrown instead.
std::string compare(const CompareRequest& request, core::OutputSet& outputs);

}  // namespace ipusim::sim
