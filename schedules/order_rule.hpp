#pragma once
// What tells the dependency-ordered (GPU-world) schedules apart (ordered_schedule.hpp): how
// stages sit on IPUs, whether the backward splits, and how many forwards warm up. One rule per
// schedule file (gpipe.cpp, one_f_one_b.cpp, interleaved_1f1b.cpp, zero_bubble_h1.cpp).

#include <cstdint>
#include <string>

namespace ipusim::schedules {

// One IPU's place in the pipeline, as a rule sees it.
struct OrderPosition {
  std::int64_t microbatches = 0;  // M
  int stages = 0;                 // N
  int ipu = 0;
  int first_stage = 0;  // the IPU's first chunk's stage
  int group = 1;        // P: IPUs one round of virtual indices cycles through
  int chunks = 1;       // v: stages per IPU
};

class OrderRule {
 public:
  virtual ~OrderRule() = default;
  virtual std::string name() const = 0;
  // Whether stage k runs on IPU k mod P, v chunks per IPU (Megatron-LM's virtual stages),
  // rather than one stage per IPU.
  virtual bool virtual_stages() const { return false; }
  // Whether the backward splits into B (input gradient) and W (weight gradient).
  virtual bool splits_weight_grad() const { return false; }
  // The forwards an IPU runs before its first backward when training.
  virtual std::int64_t warmup(const OrderPosition& at) const = 0;
};

}  // namespace ipusim::schedules
