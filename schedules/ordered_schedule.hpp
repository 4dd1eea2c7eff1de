#pragma once
// GPU-world pipeline schedules: every IPU runs its own program order and waits only for the
// tasks it depends on (no steps). Orders, for stage k of N on its IPU, M micro-batches:
//   gpipe            F(0) .. F(M-1), then B(0) .. B(M-1): backwards in the same micro-batch
//                    order as the forwards, as drawn in the Megatron-LM paper (Narayanan et
//                    al. 2021, fig. 3), so stashes are read first-in first-out.
//   1f1b             PipeDream-flush: w = min(N-1-k, M) warm-up forwards, then M-w pairs
//                    F(w+j) B(j), then the w remaining backwards.
//   zero_bubble_h1   Qi et al. 2023 ZB-H1: as 1f1b with the backward split into B (input
//                    gradient) and W (weight gradient). Stage k defers its W's by k
//                    micro-batches: W(j-k) follows B(j), and the k deferred W's fill the
//                    cool-down. At most N micro-batches have F done and W pending on any
//                    stage, the peak of 1f1b.
//   interleaved_1f1b Megatron-LM interleaved: P IPUs, v = N/P chunks per IPU, stage k on IPU
//                    k mod P. Virtual index i runs chunk (i/P) mod v (backwards: v-1 minus
//                    that) on micro-batch (i/(P*v))*P + i mod P. Warm-up (P-1-d)*2 + (v-1)*P
//                    forwards on IPU d (all M*v when M == P), then 1F1B pairs, then cool-down.
// Inference runs only the forwards, in the same orders.
//
// Each compute unit expands into a bundle of tasks in program order: F is [infeed] F
// [activation copies] [outfeed]; B is [R] B [gradient copies]; W is W alone.
//
// Phases. Code phases: warm-up, steady and cool-down parts of the order (gpipe: forwards are
// ramp-up, backwards ramp-down). Utilisation phases come from a unit-time simulation with
// F = 1, B = 2 (B = 1 and W = 1 when split), R = 1 and free copies: ramp-up is what starts
// before the last IPU starts its first compute task, ramp-down what starts once the first
// IPU has finished its last compute task. Phase counts count compute tasks over all IPUs.
//
// The simulation runs fewer than S + 2P micro-batches, where P = 1 but for interleaved_1f1b
// and S = N but for interleaved_1f1b's min(N, 2P), so building takes O(N^2) time (O(N*P) for
// interleaved_1f1b) whatever M. From S + P micro-batches on, P more micro-batches insert one
// period (P*v units of each kind) where every IPU runs back to back (its steady part; gpipe's
// forwards and backwards), which delays what follows by exactly the period's work. So from
// M = S + 2P on the simulation runs M' = S + P + (M - S - P) mod P micro-batches, and each of
// the (M - M') / P periods left out adds its units and compute tasks to the main phase of
// every IPU and its work to the ramp-down and the end. The schedule tests check this against
// a simulation of the whole program for every builder and variant: N up to 8 with M up to 64,
// N up to 24 (96 with many chunks per IPU) past M'.

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "schedules/order_rule.hpp"
#include "schedules/schedule.hpp"

namespace ipusim::schedules {

// A dependency-ordered schedule: per IPU, a few segments of repeating unit patterns, from which
// every task is computed; memory depends on N, not on M. `rule` (one of the orders described
// above) outlives the schedule.
class OrderedSchedule final : public Schedule {
 public:
  OrderedSchedule(const OrderRule& rule, PipelineShape shape, RecomputationMode resolved);

  std::string name() const override;
  std::int64_t program_length(int ipu) const override;
  Task program_task(int ipu, std::int64_t index) const override;
  std::size_t program_tasks(int ipu, std::int64_t first, std::span<Task> out) const override;
  std::vector<std::int64_t> stash_depth() const override { return stash_depth_; }
  std::vector<std::int64_t> microbatches_held() const override { return stash_depth_; }
  std::vector<StashKind> stash_kind() const override;
  PhaseCounts phase_counts() const override { return counts_; }

 protected:
  void locate(Task& task) const override;

 private:
  // Compute units of an order; each expands into the bundle of tasks described above.
  enum Unit { kF = 0, kB = 1, kW = 2 };

  // `reps` repetitions of a pattern of units; each unit kind occurs at most once in it and
  // its virtual index advances by one per repetition.
  struct Segment {
    std::array<Unit, 3> units{};
    int length = 0;
    std::int64_t reps = 0;
    std::array<std::int64_t, 3> first{};  // virtual index of the first F, B, W
    std::int64_t unit_begin = 0;
    std::int64_t task_begin = 0;
    CodePhase code = CodePhase::kMain;
    std::vector<std::int64_t> rep_prefix;  // tasks in the first r repetitions, r <= period
  };

  // The program of one IPU.
  struct Program {
    std::vector<int> chunk_stages;                          // stage of each chunk
    std::array<std::vector<std::vector<Task>>, 3> bundles;  // [unit][chunk] task templates
    std::vector<Segment> segments;
    std::int64_t units = 0;
    std::int64_t tasks = 0;
    std::int64_t warmup = 0;
    std::int64_t main_unit = 0;       // first unit of the utilisation main phase
    std::int64_t ramp_down_unit = 0;  // first unit of the utilisation ramp-down
  };

  // Walks the units of a program in order.
  struct Cursor {
    std::size_t segment = 0;
    std::int64_t rep = 0;
    int position = 0;
  };

  class Simulation;

  static void advance(const Program& program, Cursor& cursor);
  Cursor cursor_at(const Program& program, std::int64_t index, std::int64_t& offset) const;
  std::int64_t compute_tasks(Unit unit) const;
  std::int64_t unit_cost(Unit unit) const;

  int chunk_of(Unit unit, std::int64_t index) const;
  std::int64_t microbatch_of(std::int64_t index) const;
  std::int64_t index_of(Unit unit, int chunk, std::int64_t microbatch) const;
  const std::vector<Task>& bundle(const Program& program, Unit unit, std::int64_t index) const;
  std::int64_t tasks_in_reps(const Segment& segment, std::int64_t reps) const;
  std::int64_t unit_number(const Program& program, Unit unit, std::int64_t index,
                           const Segment** found) const;
  void stamp(Task& task, const Program& program, const Segment& segment, std::int64_t unit) const;
  std::int64_t warmup(int ipu) const;
  void build_program(int ipu);
  void add_segment(Program& program, std::vector<Unit> units, std::int64_t reps,
                   CodePhase code) const;
  void count_code_phases();
  std::int64_t simulated_microbatches() const;
  void place_phases();
  void extrapolate_phases(const OrderedSchedule& simulated, std::int64_t periods);
  void find_stash_depth();

  const OrderRule* rule_;
  int group_;   // P: IPUs that one round of virtual indices cycles through
  int chunks_;  // v: stages per IPU
  std::vector<Program> programs_;
  std::vector<std::int64_t> stash_depth_;
  PhaseCounts counts_;
};

}  // namespace ipusim::schedules
