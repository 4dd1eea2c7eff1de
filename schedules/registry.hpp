#pragma once
// The registry of schedules (build.cpp): one row per schedule, each made by a function in the
// schedule's own file. Adding a schedule is a file with its rule (step_rule.hpp or
// order_rule.hpp) and its row function, and one line in build.cpp's registry.

#include <cstdint>
#include <memory>
#include <string>

#include "schedules/build.hpp"
#include "schedules/order_rule.hpp"

namespace ipusim::schedules {

struct ScheduleRow {
  ScheduleInfo info;
  bool graphcore = false;  // Graphcore's divisibility rule applies (lanes > 0)
  RecomputationMode auto_recomputation = RecomputationMode::kNone;
  bool then_backpropagate = false;     // supports recompute_then_backpropagate
  bool interleaved_recompute = false;  // supports recompute_and_backpropagate_interleaved
  // Graphcore's overlap length (0: a GPU schedule, which has no divisibility rule).
  std::int64_t (*lanes)(const PipelineShape& shape) = nullptr;
  // Throws ScheduleError when the stage-to-IPU mapping does not suit the schedule.
  void (*placement)(const std::string& name, const PipelineShape& shape) = nullptr;
  std::unique_ptr<Schedule> (*make)(const PipelineShape& shape, RecomputationMode mode,
                                    bool relaxed) = nullptr;
};

ScheduleRow grouped_row();
ScheduleRow interleaved_row();
ScheduleRow sequential_row();
ScheduleRow gpipe_row();
ScheduleRow one_f_one_b_row();
ScheduleRow interleaved_1f1b_row();
ScheduleRow zero_bubble_h1_row();

// Shared by the rows.
std::int64_t no_lanes(const PipelineShape& shape);
// Graphcore's grouped and sequential schedules run several stages on one IPU back to back.
void any_placement(const std::string& name, const PipelineShape& shape);
void one_stage_per_ipu(const std::string& name, const PipelineShape& shape);
// The first two stages that share an IPU, as "stages 0 and 2 are both on IPU 0", or "".
std::string shared_ipu(const PipelineShape& shape);
// 1F1B's warm-up, which ZB-H1 keeps (one_f_one_b.cpp).
std::int64_t one_f_one_b_warmup(const OrderPosition& at);

}  // namespace ipusim::schedules
