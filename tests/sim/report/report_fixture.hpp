#pragma once
// A simulated run with its timeline, for the trace and HTML report tests.

#include <memory>
#include <string>
#include <vector>

#include "sim/core/config_file.hpp"
#include "sim/replay/timeline.hpp"
#include "sim/report/report.hpp"
#include "sim/report/trace.hpp"
#include "sim/spec/spec.hpp"

namespace ipusim::testing {

// Owns the spec the report points to.
struct RecordedRun {
  explicit RecordedRun(sim::TimelineOptions options) : recorder(options) {}
  sim::RunSpec spec;
  sim::TimelineRecorder recorder;
  sim::RunReport report;
  const sim::Timeline& timeline() const { return recorder.timeline(); }
};

// With `allow_oom`, a run that overflows its IPUs' memory is reported, as `compare` and
// `sweep` run them, rather than refused.
inline std::unique_ptr<RecordedRun> record(sim::RunSpec spec, sim::TimelineOptions options = {},
                                           bool allow_oom = false) {
  auto run = std::make_unique<RecordedRun>(options);
  run->spec = std::move(spec);
  sim::SimulateOptions simulate;
  simulate.observers = {&run->recorder};
  simulate.allow_oom = allow_oom;
  run->report = sim::simulate(run->spec, simulate);
  return run;
}

// `sets` are --set arguments ("pipeline.pipeline_schedule=1f1b").
inline std::unique_ptr<RecordedRun> record(const std::string& config,
                                           const std::vector<std::string>& sets = {},
                                           sim::TimelineOptions options = {}) {
  std::vector<core::Override> overrides;
  for (const auto& set : sets)
    overrides.push_back(core::parse_set_argument(set));
  return record(sim::load_run_spec(config, overrides), options);
}

// A recorded run of `config` that may overflow its IPUs' memory.
inline std::unique_ptr<RecordedRun> record_allowing_oom(const std::string& config,
                                                        const std::vector<std::string>& sets) {
  std::vector<core::Override> overrides;
  for (const auto& set : sets)
    overrides.push_back(core::parse_set_argument(set));
  return record(sim::load_run_spec(config, overrides), {}, true);
}

// A simulated run traced as `run --trace` traces it, the trace's bytes kept in memory.
struct TracedRun {
  sim::RunSpec spec;
  sim::RunReport report;
  std::string bytes;
};

inline std::unique_ptr<TracedRun> trace_run(sim::RunSpec spec,
                                            sim::TraceFormat format = sim::TraceFormat::kJson) {
  auto run = std::make_unique<TracedRun>();
  run->spec = std::move(spec);
  core::StringSink sink;
  sim::TraceWriter writer(run->spec, format, sink);
  sim::SimulateOptions simulate;
  simulate.observers = {&writer};
  run->report = sim::simulate(run->spec, simulate);
  writer.finish(run->report);
  run->bytes = std::move(sink.text);
  return run;
}

inline std::unique_ptr<TracedRun> trace_run(const std::string& config,
                                            const std::vector<std::string>& sets = {},
                                            sim::TraceFormat format = sim::TraceFormat::kJson) {
  std::vector<core::Override> overrides;
  for (const auto& set : sets)
    overrides.push_back(core::parse_set_argument(set));
  return trace_run(sim::load_run_spec(config, overrides), format);
}

}  // namespace ipusim::testing
