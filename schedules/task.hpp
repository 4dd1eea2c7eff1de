#pragma once
// One unit of work of a pipeline schedule, as the replay engine sees it: what runs (op), for
// which stage and micro-batch, on which IPU, and where it sits in the program (step, phases).
// Tasks are values generated on demand by a Schedule; none are stored.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ipusim::schedules {

enum class Op {
  kForward,       // F_k: forward of stage k
  kBackward,      // B_k: backward of stage k (input and weight gradients unless W is split off)
  kRecompute,     // R_k: recomputes F_k's activations for B_k
  kWeightGrad,    // W_k: weight gradient split off B_k (zero-bubble schedules only)
  kCopy,          // inter-IPU copy of an activation or a gradient
  kInfeed,        // host -> IPU: the input of F_0
  kOutfeed,       // IPU -> host: the output (loss) of the last stage's forward
  kWeightUpdate,  // applies the accumulated gradients once the pipeline has drained
  kAllReduce,     // cross-replica gradient reduction before the weight update
};

// Utilisation phases: ramp-up while the pipeline fills, main while it is full, ramp-down while
// it drains (each schedule family documents its exact rule), then the weight update.
enum class Phase { kRampUp, kMain, kRampDown, kWeightUpdate };

// Program sections: Graphcore's ramp-up / Repeat(main) / ramp-down and the resource update;
// for dependency-ordered schedules the warm-up, steady and cool-down parts of the order.
enum class CodePhase { kRampUp, kMain, kRampDown, kWeightUpdate };

// What an inter-IPU copy carries: F_k's output forward, or B_k's input gradient backward.
enum class CopyKind { kNone, kActivation, kGradient };

// A task is a value: schedules generate it, the replay consumes it, nothing stores it.
struct Task {
  Op op = Op::kForward;
  int stage = -1;    // copies: the stage that produced the tensor; WU and all-reduce: -1
  int substage = 0;  // index of `ipu` within a concurrent stage's IPUs (0 otherwise)
  std::int64_t microbatch = -1;  // 0-based; printed 1-based
  int ipu = -1;                  // copies: the source IPU
  int peer_ipu = -1;             // copies: the destination IPU
  CopyKind copy = CopyKind::kNone;
  std::int64_t step = -1;  // 0-based step within one repeat; -1 for dependency-ordered schedules
  Phase phase = Phase::kRampUp;
  CodePhase code_phase = CodePhase::kRampUp;

  friend bool operator==(const Task&, const Task&) = default;
};

// F, B, R and W occupy an IPU's compute; copies, feeds and the weight update do not count.
// Inline: the replay asks for every task.
inline bool is_compute(Op op) {
  return op == Op::kForward || op == Op::kBackward || op == Op::kRecompute || op == Op::kWeightGrad;
}

// The same work regardless of where the schedule places it (step and phases ignored).
bool same_work(const Task& a, const Task& b);

// Hashes the fields that same_work compares.
struct TaskWorkHash {
  std::size_t operator()(const Task& task) const;
};
struct TaskWorkEqual {
  bool operator()(const Task& a, const Task& b) const { return same_work(a, b); }
};

// 'F', 'B', 'R' or 'W' for compute ops.
char op_letter(Op op);
// The task kind's one name in reports, traces and charts: "forward", "backward", "recompute",
// "weight gradient", "copy", "infeed", "outfeed", "weight update", "all-reduce".
std::string_view to_string(Op op);

// Every phase, in order; arrays of per-phase figures are indexed by index(phase).
inline constexpr std::array<Phase, 4> kPhases = {Phase::kRampUp, Phase::kMain, Phase::kRampDown,
                                                 Phase::kWeightUpdate};
// The phases a run has, in order: all four in training; an inference pass has no weight
// update, so reports leave it out rather than print a phase of 0 cycles.
std::vector<Phase> phases_of_run(bool training);
constexpr std::size_t index(Phase phase) {
  return static_cast<std::size_t>(phase);
}
// The phases' one spelling each, in tables and traces ("ramp-up", "main", "ramp-down",
// "weight update") and as JSON or CSV keys ("ramp_up", "main", "ramp_down", "weight_update").
std::string_view to_string(Phase phase);
std::string_view phase_key(Phase phase);
// The label as a table heading: "Ramp-up", "Main", "Ramp-down", "Weight update".
std::string phase_heading(Phase phase);
std::string_view to_string(CodePhase phase);  // the words of the matching Phase

// A readable name with 1-based micro-batches: "F[s1,m3]@IPU1", "copy-act[s1,m3] IPU1->IPU2".
std::string to_string(const Task& task);

}  // namespace ipusim::schedules
