#pragma once
// Internal to the replay: the one place a step's totals are folded from what the engines tell
// it. The engines only time work; the ledger adds up each IPU's busy cycles (in total, by
// phase, on its host link and its link to streaming memory) and the phases' lengths, and
// checks that they agree: busy cycles by phase sum to the busy cycles, the phases to the step.
//
// The phases come one of two ways. A BSP engine knows each step's phase, so it tells the
// ledger the phase with every compute task and every step (PhaseClock::kSteps). A
// dependency-ordered engine learns the phase boundaries only as it goes (the ramp-up ends when
// the last IPU starts its first compute task, the ramp-down begins when the first IPU finishes
// its last), and the fast path not even in time order; so it logs each compute span, and the
// ledger splits the spans at the boundaries it is told (PhaseClock::kBoundaries): a span that
// straddles a boundary counts on each side for the part that runs there. So that memory stays
// flat in the number of micro-batches, the engine has the ledger settle an IPU's log whenever
// compute_span() asks, giving the earliest times the boundaries not yet told can come.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "schedules/task.hpp"
#include "sim/core/error.hpp"
#include "sim/core/time.hpp"
#include "sim/replay/replay_observer.hpp"

namespace ipusim::sim::detail {

// Cycles an IPU was busy, in total and by phase.
struct BusyTotals {
  std::int64_t total = 0;  // compute: F, B, R, W and the weight update
  std::array<std::int64_t, 4> in_phase{};
  std::int64_t host = 0;
  std::int64_t streaming = 0;  // cycles on the link to streaming memory
  std::int64_t streamed_bytes = 0;
};

class Ledger {
 public:
  enum class PhaseClock { kSteps, kBoundaries };

  Ledger(int ipus, PhaseClock clock);

  // Compute whose phase is known when it runs (BSP steps).
  void compute(int ipu, std::int64_t cycles, schedules::Phase phase) {
    auto& busy = accounts_[std::size_t(ipu)].busy;
    busy.total += cycles;
    busy.in_phase[schedules::index(phase)] += cycles;
  }
  // Compute whose phase follows from boundaries told later; an IPU's spans come in its order.
  // True when the IPU's log is due to be settled.
  bool compute_span(int ipu, core::Cycles start, core::Cycles end) {
    auto& account = accounts_[std::size_t(ipu)];
    account.busy.total += (end - start).count;
    account.spans.push_back({start.count, end.count});
    return account.spans.size() - account.head >= account.settle_at;
  }
  // Folds into the totals the IPU's logged spans whose shares of the phases are known, given
  // that the ramp-up ends no earlier than `up_from` and the ramp-down begins no earlier than
  // `down_from` where not told yet; returns how many spans the IPU's log still holds.
  std::size_t settle(int ipu, core::Cycles up_from, core::Cycles down_from);
  void host_transfer(int ipu, std::int64_t cycles) {
    accounts_[std::size_t(ipu)].busy.host += cycles;
  }
  void stream(int ipu, std::int64_t cycles, std::int64_t bytes);

  // kSteps: a step in `phase` ends at `end`; steps run back to back from 0, and Sequential's
  // are many and short.
  void step_ends(schedules::Phase phase, core::Cycles end) {
    IPUSIM_CHECK(end >= steps_end_);
    phase_cycles_[schedules::index(phase)] += (end - steps_end_).count;
    steps_end_ = end;
  }
  // kBoundaries: each told once; the ramp-up ends at 0 when it never does (an IPU without
  // compute never starts).
  void ramp_up_ends(core::Cycles at);
  void ramp_down_begins(core::Cycles at);
  // The pipeline's last task ended at `end`: no logged span runs past it.
  void end_pipeline(core::Cycles end);

  // One IPU's weight update, from the pipeline's end: its update counts as compute, its
  // optimizer state streaming (`offload_bytes`) as streaming.
  void weight_update(const WeightUpdateSpan& span, std::int64_t offload_bytes);
  // The step ends at `end`, after the weight-update phase; checks the invariants.
  void end_step(core::Cycles end);

  const BusyTotals& busy(int ipu) const { return accounts_[std::size_t(ipu)].busy; }
  const std::array<std::int64_t, 4>& phase_cycles() const { return phase_cycles_; }

 private:
  // An IPU's log is settled every few hundred spans at first, then whenever it has doubled
  // since: spans wait for the boundaries only while an IPU runs ahead of the others.
  static constexpr std::size_t kFirstSettle = 256;

  // A compute span on one IPU, in cycles.
  struct Span {
    std::int64_t start = 0;
    std::int64_t end = 0;
  };
  // An IPU's totals, and its compute spans not yet split between the phases.
  struct Account {
    BusyTotals busy;
    std::vector<Span> spans;  // from head on, oldest first
    std::size_t head = 0;
    std::size_t settle_at = kFirstSettle;
    std::int64_t before_up = 0;  // busy cycles before the boundaries, of spans settled
    std::int64_t before_down = 0;
    std::int64_t settled_end = 0;  // where the last settled span ended
  };
  // A boundary known, or the earliest it can come.
  struct Boundary {
    bool told = false;
    std::int64_t at = 0;
  };

  // The part of a span before a boundary (all of it while the boundary is not told: only
  // spans that end before it can come are settled then).
  static std::int64_t share_before(const Boundary& boundary, Span span) {
    if (!boundary.told)
      return span.end - span.start;
    return std::clamp(boundary.at - span.start, std::int64_t{0}, span.end - span.start);
  }
  void split_phases(core::Cycles end);

  PhaseClock clock_;
  std::vector<Account> accounts_;  // by IPU
  std::array<std::int64_t, 4> phase_cycles_{};
  Boundary up_;
  Boundary down_;
  core::Cycles steps_end_{0};
  bool pipeline_ended_ = false;
  core::Cycles pipeline_end_{0};
};

}  // namespace ipusim::sim::detail
