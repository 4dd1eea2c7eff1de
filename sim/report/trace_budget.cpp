// How large a trace will be, known before the replay: a trace holds every task, so a run the
// replay accepts (at most 2e9 tasks, sim/run/replay_budget.cpp) may write hundreds of
// gigabytes. Rather than fill the disk after minutes of work, `run --trace` compares the
// estimate with the free space first.

#include <algorithm>
#include <cstdio>

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/report/trace.hpp"

namespace ipusim::sim {
namespace {

// Bytes a replayed task takes in the trace, its slice and flow points included, and bytes of
// one memory counter sample (at most 4,097 an IPU), rounded up from tools/bench/trace_bench
// (64 stages, 1F1B, 4,096 micro-batches: about 350 and 250 bytes in JSON, 150 and 60 in
// protobuf) so that the estimate errs large.
constexpr double kJsonBytesPerTask = 400;
constexpr double kProtoBytesPerTask = 170;
constexpr double kJsonBytesPerSample = 260;
constexpr double kProtoBytesPerSample = 150;
constexpr double kSamplesPerIpu = 4097;

double bytes_per_task(TraceFormat format) {
  return format == TraceFormat::kProto ? kProtoBytesPerTask : kJsonBytesPerTask;
}

double counter_bytes(const RunSpec& spec, TraceFormat format) {
  const double per_sample =
      format == TraceFormat::kProto ? kProtoBytesPerSample : kJsonBytesPerSample;
  int ipus = 0;
  for (const auto& stage : spec.pipeline.stages) {
    for (const int ipu : stage.ipus)
      ipus = std::max(ipus, ipu + 1);
  }
  return double(ipus) * kSamplesPerIpu * per_sample;
}

const char* format_name(TraceFormat format) {
  return format == TraceFormat::kProto ? "protobuf" : "JSON";
}

}  // namespace

double estimated_trace_bytes(const RunSpec& spec, TraceFormat format) {
  const double tasks = double(spec.schedule->tasks_per_microbatch()) *
                       double(spec.pipeline.gradient_accumulation_count);
  return tasks * bytes_per_task(format) + counter_bytes(spec, format);
}

void refuse_oversized_trace(const RunSpec& spec, const std::string& path, const std::string& option,
                            TraceFormat format, std::int64_t free_bytes) {
  const double estimate = estimated_trace_bytes(spec, format);
  if (free_bytes < 0 || estimate <= double(free_bytes))
    return;
  char tasks[32];
  std::snprintf(tasks, sizeof tasks, "%.2g",
                double(spec.schedule->tasks_per_microbatch()) *
                    double(spec.pipeline.gradient_accumulation_count));
  std::string advice = "lower gradient_accumulation_count";
  if (format == TraceFormat::kJson) {
    advice = "name it .pftrace for Perfetto's protobuf format (about " +
             si(estimated_trace_bytes(spec, TraceFormat::kProto), "B") + "), or " + advice;
  }
  throw core::ConfigError(path, "",
                          "cannot write the " + option + " output: the trace would take about " +
                              si(estimate, "B") + " (" + tasks + " tasks at about " +
                              with_commas(std::int64_t(bytes_per_task(format))) +
                              " bytes each in " + format_name(format) + "), more than the " +
                              si(double(free_bytes), "B") + " free on its file system; " + advice);
}

}  // namespace ipusim::sim
