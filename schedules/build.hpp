#pragma once
// Choosing a schedule by name and building it. Every user error in a PipelineShape is found
// here and thrown as a ScheduleError naming the option at fault, before any task exists.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "schedules/pipeline_shape.hpp"
#include "schedules/schedule.hpp"
#include "schedules/schedule_error.hpp"

namespace ipusim::schedules {

// Builds the named schedule (see schedule_catalogue) for `shape`. Throws ScheduleError.
std::unique_ptr<Schedule> build_schedule(const std::string& name, const PipelineShape& shape);

// One line of `ipusim schedules`.
struct ScheduleInfo {
  std::string name;
  std::string when_to_use;
};
// Every schedule, in the order `ipusim schedules` lists them; the first is the default.
const std::vector<ScheduleInfo>& schedule_catalogue();
// The schedule a config gets without pipeline.pipeline_schedule (Graphcore's default).
const std::string& default_schedule();

// The mode a training run uses, as Graphcore resolves it: Auto is recompute_then_backpropagate
// for grouped and interleaved and recompute_and_backpropagate_interleaved for sequential; the
// GPU schedules take recompute_and_backpropagate_interleaved to mean activation checkpointing.
// Throws ScheduleError for an unknown schedule or a mode the schedule does not support.
RecomputationMode resolve_recomputation(const std::string& schedule, RecomputationMode requested);

// Whether a known schedule takes `mode` (kNone and kAuto: always).
bool supports_recomputation(const std::string& schedule, RecomputationMode mode);

// The device_mapping `schedule` is relaid out to on `shape`'s N IPUs when it refuses shape's own
// layout: stage k on IPU k mod N, one stage per IPU for interleaved, GPipe, 1F1B and ZB-H1, two
// for interleaved_1f1b (2N stages). Empty when the schedule takes shape's layout, takes any, is
// not a schedule, or refuses shape for another reason than its layout.
std::vector<int> relayout_mapping(const std::string& schedule, const PipelineShape& shape);

// Graphcore's overlap length L for a step-based schedule: the micro-batches one pass of the
// lanes starts (grouped 2N, interleaved N, sequential 1; N for grouped in inference). M must
// be a multiple of L and at least L unless relaxed_divisibility is set. 0 for GPU schedules.
std::int64_t graphcore_lanes(const std::string& schedule, const PipelineShape& shape);

}  // namespace ipusim::schedules
