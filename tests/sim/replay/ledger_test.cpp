// The ledger alone, with hand-computed totals: compute split at the phase boundaries, a log
// settled before the boundaries are known, BSP steps, the weight update, and the invariants it
// holds the engines to.

#include "sim/replay/ledger.hpp"

#include <array>
#include <catch2/catch.hpp>

#include "sim/core/error.hpp"

using namespace ipusim;
using core::Cycles;
using schedules::Phase;
using sim::detail::Ledger;

namespace {

using ByPhase = std::array<std::int64_t, 4>;

// Two IPUs of a dependency-ordered pipeline ending at 400: IPU1 starts its first compute task
// at 50 (the ramp-up ends), IPU0 finishes its last at 300 (the ramp-down begins).
Ledger two_ipus_to_400() {
  Ledger ledger(2, Ledger::PhaseClock::kBoundaries);
  ledger.compute_span(0, Cycles{0}, Cycles{100});
  ledger.compute_span(1, Cycles{50}, Cycles{150});
  ledger.ramp_up_ends(Cycles{50});
  ledger.compute_span(0, Cycles{100}, Cycles{300});
  ledger.compute_span(1, Cycles{250}, Cycles{400});
  ledger.ramp_down_begins(Cycles{300});
  ledger.end_pipeline(Cycles{400});
  return ledger;
}

}  // namespace

TEST_CASE("a compute span that straddles a phase boundary counts on each side for its part") {
  Ledger ledger = two_ipus_to_400();
  ledger.end_step(Cycles{400});
  CHECK(ledger.phase_cycles() == ByPhase{50, 250, 100, 0});
  // IPU0's [0, 100) straddles the ramp-up's end at 50.
  CHECK(ledger.busy(0).total == 300);
  CHECK(ledger.busy(0).in_phase == ByPhase{50, 250, 0, 0});
  // IPU1's [250, 400) straddles the ramp-down's beginning at 300.
  CHECK(ledger.busy(1).total == 250);
  CHECK(ledger.busy(1).in_phase == ByPhase{0, 150, 100, 0});
}

TEST_CASE("the weight update counts its update as compute and its state traffic as streaming") {
  Ledger ledger = two_ipus_to_400();
  // IPU0: all-reduce until 420, optimizer state streams until 450, the update until 500.
  ledger.weight_update(
      {0, Cycles{400}, Cycles{400}, Cycles{420}, Cycles{450}, Cycles{500}, Cycles{500}}, 64);
  // IPU1 has nothing to update.
  ledger.weight_update(
      {1, Cycles{400}, Cycles{400}, Cycles{400}, Cycles{400}, Cycles{400}, Cycles{400}}, 0);
  ledger.end_step(Cycles{520});
  CHECK(ledger.phase_cycles() == ByPhase{50, 250, 100, 120});
  CHECK(ledger.busy(0).total == 350);
  CHECK(ledger.busy(0).in_phase == ByPhase{50, 250, 0, 50});
  CHECK(ledger.busy(0).streaming == 30);
  CHECK(ledger.busy(0).streamed_bytes == 64);
  CHECK(ledger.busy(1).total == 250);
  CHECK(ledger.busy(1).streaming == 0);
}

TEST_CASE("spans settled before the boundaries are known split as if they had waited") {
  Ledger ledger(2, Ledger::PhaseClock::kBoundaries);
  ledger.compute_span(0, Cycles{0}, Cycles{10});
  ledger.compute_span(0, Cycles{10}, Cycles{20});
  // At 20 IPU1 has not started and no IPU has finished: both boundaries come at 20 or later.
  CHECK(ledger.settle(0, Cycles{20}, Cycles{20}) == 0);
  ledger.compute_span(0, Cycles{20}, Cycles{30});
  ledger.ramp_up_ends(Cycles{25});
  ledger.compute_span(1, Cycles{25}, Cycles{45});
  // [20, 30) ends after the earliest the ramp-down can begin: it waits.
  CHECK(ledger.settle(0, Cycles{25}, Cycles{25}) == 1);
  ledger.compute_span(0, Cycles{30}, Cycles{40});
  ledger.compute_span(1, Cycles{45}, Cycles{60});
  ledger.ramp_down_begins(Cycles{40});
  ledger.end_pipeline(Cycles{60});
  ledger.end_step(Cycles{60});
  CHECK(ledger.phase_cycles() == ByPhase{25, 15, 20, 0});
  CHECK(ledger.busy(0).in_phase == ByPhase{25, 15, 0, 0});
  CHECK(ledger.busy(1).in_phase == ByPhase{0, 15, 20, 0});
}

TEST_CASE("a ramp-up that never ends (an IPU without compute) takes no time") {
  // IPU1 has no compute, so the ramp-up never ends.
  Ledger ledger(2, Ledger::PhaseClock::kBoundaries);
  ledger.ramp_up_ends(Cycles{0});
  ledger.compute_span(0, Cycles{0}, Cycles{100});
  ledger.ramp_down_begins(Cycles{100});
  ledger.end_pipeline(Cycles{120});
  ledger.end_step(Cycles{120});
  CHECK(ledger.phase_cycles() == ByPhase{0, 100, 20, 0});
  CHECK(ledger.busy(0).in_phase == ByPhase{0, 100, 0, 0});
  CHECK(ledger.busy(1).total == 0);
}

TEST_CASE("a BSP step's compute counts towards the step's phase") {
  Ledger ledger(2, Ledger::PhaseClock::kSteps);
  ledger.compute(0, 70, Phase::kRampUp);
  ledger.step_ends(Phase::kRampUp, Cycles{100});
  ledger.compute(0, 30, Phase::kMain);
  ledger.compute(1, 80, Phase::kMain);
  ledger.host_transfer(1, 15);
  ledger.stream(1, 40, 1024);
  ledger.step_ends(Phase::kMain, Cycles{250});
  ledger.end_pipeline(Cycles{250});
  ledger.end_step(Cycles{250});
  CHECK(ledger.phase_cycles() == ByPhase{100, 150, 0, 0});
  CHECK(ledger.busy(0).in_phase == ByPhase{70, 30, 0, 0});
  CHECK(ledger.busy(1).in_phase == ByPhase{0, 80, 0, 0});
  CHECK(ledger.busy(1).host == 15);
  CHECK(ledger.busy(1).streaming == 40);
  CHECK(ledger.busy(1).streamed_bytes == 1024);
}

TEST_CASE("a BSP step that ends before the last one is a bug in the engine") {
  Ledger ledger(1, Ledger::PhaseClock::kSteps);
  ledger.step_ends(Phase::kRampUp, Cycles{100});
  CHECK_THROWS_AS(ledger.step_ends(Phase::kMain, Cycles{90}), core::InternalError);
}

TEST_CASE("BSP steps that end before the pipeline are a bug in the engine") {
  Ledger ledger(1, Ledger::PhaseClock::kSteps);
  ledger.step_ends(Phase::kRampUp, Cycles{100});
  CHECK_THROWS_AS(ledger.end_pipeline(Cycles{120}), core::InternalError);
}

TEST_CASE("a compute span that ends after the pipeline is a bug in the engine") {
  Ledger ledger(1, Ledger::PhaseClock::kBoundaries);
  ledger.compute_span(0, Cycles{0}, Cycles{60});
  ledger.ramp_up_ends(Cycles{0});
  ledger.ramp_down_begins(Cycles{60});
  CHECK_THROWS_AS(ledger.end_pipeline(Cycles{50}), core::InternalError);
}

TEST_CASE("a step that ends before its pipeline is a bug in the engine") {
  Ledger ledger = two_ipus_to_400();
  CHECK_THROWS_AS(ledger.end_step(Cycles{399}), core::InternalError);
}
