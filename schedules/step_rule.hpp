#pragma once
// What tells Graphcore's step schedules apart (step_schedule.hpp): micro-batch m runs slot s at
// step period * m + s, and the schedule either overlaps micro-batches or runs one at a time.
// One rule per schedule file (grouped.cpp, interleaved.cpp, sequential.cpp).

#include <cstdint>
#include <string>

namespace ipusim::schedules {

class StepRule {
 public:
  virtual ~StepRule() = default;
  virtual std::string name() const = 0;
  // Steps from a slot's micro-batch m to its m + 1, with `slots` (S) slots per micro-batch.
  virtual std::int64_t period(int slots, bool training) const = 0;
  // Whether micro-batches overlap: S ramp steps around the M periods, a stash, and an exchange
  // that moves the copies of every slot due. Sequential runs one slot at a time.
  virtual bool pipelined() const { return true; }
  // Whether each stage's forward and backward slots, copies and FIFO run in every step, as
  // Grouped's do, rather than in alternate steps.
  virtual bool every_slot_every_step() const { return false; }
};

}  // namespace ipusim::schedules
