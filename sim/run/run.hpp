#pragma once
// One run, simulated: the cost model of a validated spec, the replay of its schedule (with the
// kernels in numeric mode, then the reference) and the figures derived from it once. The
// report room formats a RunReport; it computes nothing of its own.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/replay/replay.hpp"
#include "sim/run/run_figures.hpp"
#include "sim/spec/spec.hpp"

namespace ipusim::sim {

// The numeric check: the pipelined run against the one-device reference on the same
// micro-batches. Losses are the softmax cross-entropy in nats, each the mean over its
// micro-batch's samples, by weight update then micro-batch.
struct NumericReport {
  std::string data;  // data_description() of the source
  std::vector<std::vector<float>> losses;
  std::vector<std::vector<float>> reference_losses;
  double max_abs_diff_loss = 0;
  double max_abs_diff_weights = 0;
  bool bit_identical = false;

  std::vector<double> mean_loss_per_update() const;
};

// The outcome of simulating one spec: the replay's measurements for one repeat and the figures
// derived from them, and the numeric results when numeric mode ran.
struct RunReport {
  std::shared_ptr<const RunSpec> spec;    // shared: a report outlives the spec it was run from
  std::shared_ptr<const CostModel> cost;  // the per-task and per-operation costs replayed
  std::string schedule;
  bool relaxed = false;
  ReplayResult replay;
  RunFigures figures;           // of `replay`, derived once (run_figures)
  std::int64_t run_cycles = 0;  // the step times repeat_count
  std::vector<std::int64_t> stash_depth;
  std::optional<NumericReport> numeric;  // when numeric mode ran
  std::string numeric_skipped;           // why the automatic numeric mode did not run
};

// Whether the replay runs the real kernels: kAuto when every layer has one.
enum class NumericMode { kAuto, kOn, kOff };

// How simulate() runs: overflow tolerated or not, numeric mode, and observers of the replay.
struct SimulateOptions {
  bool allow_oom = false;
  NumericMode numeric = NumericMode::kOff;
  std::vector<ReplayObserver*> observers;  // told of the first repeat's events; not owned
  // Told, before it starts, of a replay that will keep the user waiting (long_replay_notice).
  std::function<void(const std::string&)> notify;
  // Told (tasks replayed, tasks to replay) as the replay goes, every kReplayProgressTasks tasks
  // or so, and once when every repeat it replays has ended: the pipeline's tasks (replay_tasks), of
  // each repeat when the kernels run.
  std::function<void(std::int64_t done, std::int64_t total)> progress;
};

// Builds the cost model of `spec`, replays its schedule and returns the report. In numeric
// mode the replay runs the kernels (sim/numeric.hpp) once per repeat, then the reference; kOn
// on a spec numeric mode cannot run is a core::ConfigError naming the entry that prevents it,
// and so is a run whose time or sizes overflow 64-bit counts.
RunReport simulate(const RunSpec& spec, const SimulateOptions& options);
// The same on a spec the report shares instead of copying (the planner's candidates, each
// replayed from a spec it already holds).
RunReport simulate(std::shared_ptr<const RunSpec> spec, const SimulateOptions& options);

}  // namespace ipusim::sim
