#include "sim/run/run.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>

#include "sim/core/checked.hpp"
#include "sim/core/error.hpp"
#include "sim/numeric/numeric.hpp"
#include "sim/numeric/training.hpp"
#include "sim/run/replay_budget.hpp"

namespace ipusim::sim {

std::vector<double> NumericReport::mean_loss_per_update() const {
  std::vector<double> means;
  for (const auto& update : losses) {
    double sum = 0;
    for (const float loss : update)
      sum += loss;
    means.push_back(update.empty() ? 0.0 : sum / double(update.size()));
  }
  return means;
}

namespace {

// Whether numeric mode runs; kOn on an unsupported spec is the user's error.
bool numeric_wanted(const RunSpec& spec, NumericMode mode, std::string& skipped) {
  if (mode == NumericMode::kOff)
    return false;
  const NumericSupport support = numeric_support(spec);
  if (support.supported) {
    // Asked for, the kernels run however long they take; unasked, only within the budget.
    skipped = mode == NumericMode::kAuto ? numeric_over_budget(spec) : "";
    return skipped.empty();
  }
  if (mode == NumericMode::kOn)
    throw_unsupported(support);
  skipped = support.reason;
  return false;
}

bool same_bits(float a, float b) {
  return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
}

// Runs the reference over the micro-batches the pipeline consumed and compares.
NumericReport check_against_reference(const RunSpec& spec, const NumericPipeline& pipeline,
                                      const models::ParameterStore& pipelined,
                                      models::DataSource& data) {
  NumericReport report;
  report.data = data_description(spec.data);
  report.losses = pipeline.losses();
  models::ParameterStore reference = starting_parameters(spec);
  report.reference_losses = run_reference(spec, reference, data, 0, pipeline.steps());
  IPUSIM_CHECK(report.losses.size() == report.reference_losses.size());
  bool identical = true;
  for (std::size_t s = 0; s < report.losses.size(); ++s) {
    const auto& mine = report.losses[s];
    const auto& theirs = report.reference_losses[s];
    IPUSIM_CHECK(mine.size() == theirs.size());
    for (std::size_t m = 0; m < mine.size(); ++m) {
      identical = identical && same_bits(mine[m], theirs[m]);
      report.max_abs_diff_loss =
          std::max(report.max_abs_diff_loss, std::abs(double(mine[m]) - double(theirs[m])));
    }
  }
  const ParameterDifference weights = compare_parameters(spec.model, pipelined, reference);
  report.max_abs_diff_weights = weights.max_abs;
  report.bit_identical = identical && weights.bit_identical;
  return report;
}

// The replay's progress callback for repeat `repeat` (0-based) of the `repeats` replayed, each
// of the pipeline's tasks per micro-batch x the GAC: the tasks of the repeats before count done.
std::function<void(std::int64_t)> repeat_progress(const RunSpec& spec,
                                                  const SimulateOptions& options,
                                                  std::int64_t repeat, std::int64_t repeats) {
  if (!options.progress)
    return {};
  const auto per_repeat = std::int64_t(replay_tasks(spec, false));
  // A schedule may replay a few tasks more than that (grouped on 2 IPUs: 8), so the count says
  // done only when the replay has ended.
  return [&progress = options.progress, before = repeat * per_repeat, total = repeats * per_repeat](
             std::int64_t tasks) { progress(std::min(before + tasks, total - 1), total); };
}

// Replays once per repeat with the kernels running; user observers hear the first repeat.
ReplayResult replay_numeric(const RunSpec& spec, const CostModel& cost,
                            const SimulateOptions& options, RunReport& report) {
  auto data = training_data(spec);
  models::ParameterStore parameters = starting_parameters(spec);
  NumericPipeline pipeline(spec, parameters, *data);
  const std::int64_t repeats = spec.pipeline.repeat_count;
  ReplayOptions first{options.allow_oom, options.observers,
                      repeat_progress(spec, options, 0, repeats)};
  first.observers.push_back(&pipeline);
  ReplayResult result = replay(spec, cost, first);
  for (std::int64_t r = 1; r < repeats; ++r)
    replay(spec, cost,
           {options.allow_oom, {&pipeline}, repeat_progress(spec, options, r, repeats)});
  report.numeric = check_against_reference(spec, pipeline, parameters, *data);
  return result;
}

RunReport simulate_checked(std::shared_ptr<const RunSpec> shared, const SimulateOptions& options) {
  const RunSpec& spec = *shared;
  const auto& schedule = spec.schedule;
  RunReport report;
  const bool numeric = numeric_wanted(spec, options.numeric, report.numeric_skipped);
  refuse_long_replay(spec, numeric);
  if (options.notify) {
    if (const std::string notice = long_replay_notice(spec, numeric); !notice.empty())
      options.notify(notice);
  }
  report.cost = std::make_shared<const CostModel>(build_cost_model(spec));
  const CostModel& cost = *report.cost;
  report.spec = std::move(shared);
  report.schedule = schedule->name();
  report.relaxed = schedule->relaxed();
  report.stash_depth = schedule->stash_depth();
  if (numeric) {
    report.replay = replay_numeric(spec, cost, options, report);
  } else {
    ReplayOptions replay_options;
    replay_options.allow_oom = options.allow_oom;
    replay_options.observers = options.observers;
    replay_options.progress = repeat_progress(spec, options, 0, 1);
    report.replay = replay(spec, cost, replay_options);
  }
  if (options.progress) {
    const auto total = std::int64_t(replay_tasks(spec, numeric));
    options.progress(total, total);
  }
  report.figures = run_figures(spec, cost, report.replay);
  report.run_cycles =
      core::checked_mul(report.replay.step_cycles, spec.pipeline.repeat_count, "simulated time");
  return report;
}

}  // namespace

RunReport simulate(std::shared_ptr<const RunSpec> spec, const SimulateOptions& options) {
  IPUSIM_CHECK(spec != nullptr);
  const std::string config_path = spec->config_path;
  try {
    return simulate_checked(std::move(spec), options);
  } catch (const core::Overflow& overflow) {
    throw core::ConfigError(config_path, "",
                            std::string("the run is too large to simulate: its ") +
                                overflow.what() +
                                " does not fit in 64 bits; check the hardware figures and the "
                                "pipeline's sizes");
  }
}

RunReport simulate(const RunSpec& spec, const SimulateOptions& options) {
  return simulate(std::make_shared<const RunSpec>(spec), options);
}

}  // namespace ipusim::sim
