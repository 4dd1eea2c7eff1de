#include "sim/run/replay_budget.hpp"

#include <cstdint>
#include <cstdio>

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"

namespace ipusim::sim {
namespace {

// Tasks past which a replay keeps the user waiting, and the rate that makes it so ([M]
// tools/bench/estimate_bench: every shipped config replays at 30-58 million tasks a second on
// one core of the build machine, so the estimate is within 1.5x of the time either way).
constexpr double kTasksPerSecond = 4e7;

// What automatic numeric mode runs without being asked: about 20 s of one core's kernels at
// most (ResNet-50's ran at 11 GFLOP/s on one core of the build machine, [M]).
constexpr double kAutoNumericFlops = 2e11;

struct Estimate {
  std::int64_t per_microbatch = 0;
  std::int64_t microbatches = 0;
  std::int64_t repeats = 1;  // replayed with the kernels running in each
  double tasks = 0;
};

Estimate estimate(const RunSpec& spec, bool numeric) {
  Estimate e;
  e.per_microbatch = spec.schedule->tasks_per_microbatch();
  e.microbatches = spec.pipeline.gradient_accumulation_count;
  e.repeats = numeric ? spec.pipeline.repeat_count : 1;
  e.tasks = double(e.per_microbatch) * double(e.microbatches) * double(e.repeats);
  return e;
}

std::string rounded(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2g", value);
  return text;
}

// "about 2.7e+08 tasks (8 a micro-batch x 33,554,432 micro-batches)"
std::string tasks_text(const Estimate& e) {
  return "about " + rounded(e.tasks) + " tasks (" + with_commas(e.per_microbatch) +
         " a micro-batch x " + with_commas(e.microbatches) + " micro-batches" +
         (e.repeats > 1 ? " x " + with_commas(e.repeats) + " repeats, the kernels running in each"
                        : "") +
         ")";
}

}  // namespace

void refuse_long_replay(const RunSpec& spec, bool numeric) {
  const Estimate e = estimate(spec, numeric);
  if (e.tasks <= kMaxReplayTasks)
    return;
  const bool by_repeats = double(e.per_microbatch) * double(e.microbatches) <= kMaxReplayTasks;
  const std::string pointer =
      by_repeats ? "/pipeline/repeat_count" : "/pipeline/gradient_accumulation_count";
  throw core::ConfigError(
      spec.source_of(pointer), pointer,
      "the replay would run " + tasks_text(e) + ", more than the " +
          with_commas(std::int64_t(kMaxReplayTasks)) +
          " ipusim replays in one run (a few minutes); lower " +
          (by_repeats ? "repeat_count, or run with --no-numeric" : "gradient_accumulation_count"));
}

double replay_tasks(const RunSpec& spec, bool numeric) {
  return estimate(spec, numeric).tasks;
}

std::string replay_time_text(double tasks) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.0f", tasks / kTasksPerSecond);
  return std::string("about ") + seconds + " s at 40 million tasks a second";
}

double estimated_replay_seconds(const RunSpec& spec, bool numeric) {
  return estimate(spec, numeric).tasks / kTasksPerSecond;
}

std::string long_replay_notice(const RunSpec& spec, bool numeric) {
  const Estimate e = estimate(spec, numeric);
  if (e.tasks <= kLongReplayTasks)
    return "";
  return "replaying " + tasks_text(e) + ": " + replay_time_text(e.tasks) +
         (e.repeats > 1 ? ", and longer for the kernels" : "");
}

// Every sample of every repeat, forward and backward, in the pipeline and again in the reference.
std::string numeric_over_budget(const RunSpec& spec) {
  double per_sample = 0;
  for (const auto& info : spec.model.info)
    per_sample += info.forward_flops + info.backward_flops;
  const auto& p = spec.pipeline;
  const double flops = 2 * per_sample * double(p.micro_batch_size) *
                       double(p.gradient_accumulation_count) * double(p.repeat_count);
  if (flops <= kAutoNumericFlops)
    return "";
  return "its kernels would run " + si(flops, "FLOP") + ", pipeline and reference, beyond the " +
         si(kAutoNumericFlops, "FLOP") + " numeric mode runs unasked; --numeric runs them";
}

}  // namespace ipusim::sim
