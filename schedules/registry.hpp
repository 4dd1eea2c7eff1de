#pragma once
// The registry of schedules (build.cpp): one row per schedule, each made by a function in the
// schedule's own file. Adding a schedule is a file with its rule (step_rule.hpp or
// order_rule.hpp) and its row function, and one line in build.cpp's registry.

#include <cstdint>
#include <memory>
#include <string>

#include "schedules/build.hpp"
#include "schedules/order_rule.hpp"
#include "schedules/ordered_schedule.hpp"
#include "schedules/step_schedule.hpp"
#include "sim/core/row_fn.hpp"

namespace ipusim::schedules {

using Lanes = std::int64_t(const PipelineShape& shape);
using PlacementCheck = void(const std::string& name, const PipelineShape& shape);
using MakeSchedule = std::unique_ptr<Schedule>(const PipelineShape& shape, RecomputationMode mode,
                                               bool relaxed);

// A row names every function (core::RowFn has no default), so a schedule cannot be half added.
struct ScheduleRow {
  ScheduleInfo info;
  bool graphcore = false;  // Graphcore's divisibility rule applies (lanes > 0)
  RecomputationMode auto_recomputation = RecomputationMode::kNone;
  bool then_backpropagate = false;     // supports recompute_then_backpropagate
  bool interleaved_recompute = false;  // supports recompute_and_backpropagate_interleaved
  // Graphcore's overlap length (0: a GPU schedule, which has no divisibility rule).
  core::RowFn<Lanes> lanes;
  // Throws ScheduleError when the stage-to-IPU mapping does not suit the schedule.
  core::RowFn<PlacementCheck> placement;
  core::RowFn<MakeSchedule> make;
  // The stages per IPU of the layout the schedule is relaid out to when it refuses a config's
  // (stage k on IPU k mod N): 1 for one stage per IPU, 2 for Megatron-LM's virtual stages; 0 for
  // the schedules that take any layout.
  int relayout_stages_per_ipu = 0;
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

// The one instance of a schedule's rule, made on first use.
template <class Rule>
const Rule& rule_instance() {
  static const Rule rule;
  return rule;
}

template <class Rule>
std::unique_ptr<Schedule> make_stepped(const PipelineShape& shape, RecomputationMode mode,
                                       bool relaxed) {
  return std::make_unique<StepSchedule>(rule_instance<Rule>(), shape, mode, relaxed);
}

template <class Rule>
std::unique_ptr<Schedule> make_ordered(const PipelineShape& shape, RecomputationMode mode, bool) {
  return std::make_unique<OrderedSchedule>(rule_instance<Rule>(), shape, mode);
}

// A GPU-world schedule's row: no divisibility rule, and activation checkpointing
// (recompute_and_backpropagate_interleaved, also its auto) as its one recomputation.
template <class Rule>
ScheduleRow gpu_row(std::string when_to_use, PlacementCheck* placement,
                    int relayout_stages_per_ipu) {
  return {.info = {rule_instance<Rule>().name(), std::move(when_to_use)},
          .graphcore = false,
          .auto_recomputation = RecomputationMode::kRecomputeAndBackpropagateInterleaved,
          .then_backpropagate = false,
          .interleaved_recompute = true,
          .lanes = no_lanes,
          .placement = placement,
          .make = make_ordered<Rule>,
          .relayout_stages_per_ipu = relayout_stages_per_ipu};
}

}  // namespace ipusim::schedules
