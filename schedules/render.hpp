#pragma once
// Human- and machine-readable views of one repeat of a schedule: the step table in the style
// of /work/shared/spec/graphcore-schedules.md, and its JSON form. Both show compute ops only,
// with 1-based micro-batches; they are meant for small M (their size grows with M).

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "schedules/schedule.hpp"

namespace ipusim::schedules {

// Step-based: a table `| t | ph | IPU0 | ... |`, one row per step, cells such as "B1 F4"
// (program order; "·" when the IPU computes nothing; R3 and W3 for recomputation and weight
// gradients; a stage number after '@' when the IPU hosts several stages, "F4@2"). Dependency-
// ordered: one line per IPU, "IPU0: F1 F2 B1 ...". Then the phase counts, the stash depth and
// kind per stage, and a line on relaxed divisibility when it applies.
std::string render_step_table(const Schedule& schedule);

// {"schedule", "N", "M", "relaxed", "training", "ipus", "steps": [{"step", "phase",
// "code_phase", "ipus": [[{"op", "stage", "microbatch"}...]...]}...] or "order": [[...]...],
// "stash_depth", "stash_kind", "phases"}. Steps and micro-batches 1-based, stages and IPUs
// 0-based; "substage" is added for concurrent stages.
nlohmann::json schedule_to_json(const Schedule& schedule);

// Writes schedule_to_json(schedule).dump(2) and a newline to `out` as it goes, one task at a
// time, so that its memory stays flat in the number of tasks.
void write_schedule_json(const Schedule& schedule, std::ostream& out);

}  // namespace ipusim::schedules
