#include "sim/run/run_figures.hpp"

#include <catch2/catch.hpp>

#include "sim/core/config_file.hpp"
#include "sim/report/report.hpp"

using namespace ipusim;

namespace {

// Two equal stages of one dense layer each, forward and backward 100 cycles, on the ideal
// hardware: GPipe over M micro-batches runs IPU0's first forward alone (ramp-up), both IPUs
// for 8 x 100 cycles (main) and IPU0's last backward alone (ramp-down).
nlohmann::json two_stages(bool training) {
  nlohmann::json layers = nlohmann::json::array();
  for (const char* id : {"d0", "d1"}) {
    layers.push_back({{"id", id},
                      {"type", "dense"},
                      {"units", 4},
                      {"cycles", {{"forward", 100}, {"backward", 100}}}});
  }
  layers.push_back({{"id", "loss"},
                    {"type", "softmax_cross_entropy"},
                    {"cycles", {{"forward", 0}, {"backward", 0}}}});
  return {{"model", {{"name", "two"}, {"input", {{"shape", {4}}}}, {"layers", layers}}},
          {"pipeline",
           {{"splits", {"d1"}},
            {"pipeline_schedule", "gpipe"},
            {"gradient_accumulation_count", 4},
            {"training", training}}},
          {"hardware", {{"preset", "ideal"}}}};
}

struct Run {
  sim::RunSpec spec;
  sim::RunReport report;
};

Run simulate(const nlohmann::json& config) {
  Run run;
  run.spec = sim::build_run_spec(core::ConfigDocument::from_json(config, "test.json"));
  run.report = sim::simulate(run.spec, {});
  return run;
}

constexpr auto kRampUp = schedules::index(schedules::Phase::kRampUp);
constexpr auto kMain = schedules::index(schedules::Phase::kMain);
constexpr auto kRampDown = schedules::index(schedules::Phase::kRampDown);
constexpr auto kWeightUpdate = schedules::index(schedules::Phase::kWeightUpdate);

}  // namespace

TEST_CASE("a two-stage GPipe run's figures are the hand-derived ones") {
  const auto run = simulate(two_stages(true));
  const auto& replay = run.report.replay;
  const auto& f = run.report.figures;
  // The ideal hardware updates these 40 parameters in one cycle: a step of 100 + 800 + 100 + 1.
  REQUIRE(replay.phase_cycles == std::array<std::int64_t, 4>{100, 800, 100, 1});
  REQUIRE(replay.step_cycles == 1001);
  const double clock = run.spec.hardware.clock_hz;
  CHECK(f.step_seconds == Approx(1001 / clock));
  CHECK(f.throughput == Approx(4 * clock / 1001));  // 4 samples a step
  CHECK(f.throughput_per_ipu == Approx(2 * clock / 1001));
  CHECK(!f.sequence_throughput.has_value());
  CHECK(f.pipeline_cycles == 1000);
  CHECK(f.phase_share[kMain] == Approx(800.0 / 1001));
  CHECK(f.phase_seconds[kRampUp] == Approx(100 / clock));
  // IPU1 waits through ramp-up's 100 cycles, IPU0 through ramp-down's: 200 of 2 x 1001.
  CHECK(f.ramp_overhead == Approx(200.0 / 2002));
  // Each IPU computes 4 x (100 + 100) of the 2 x 1000 IPU-cycles of the pipeline phases.
  CHECK(f.bubble_fraction == Approx(400.0 / 2000));
  CHECK(f.bubble_ratio == Approx(400.0 / 1600));
  REQUIRE(f.ipus.size() == 2);
  for (const auto& ipu : f.ipus) {
    CHECK(ipu.utilisation == Approx(801.0 / 1001));
    CHECK(ipu.utilisation_by_phase[kWeightUpdate] == 1.0);
    CHECK(ipu.host_link_utilisation == 0.0);
  }
  CHECK(f.ipus[0].utilisation_by_phase == std::array<double, 4>{1.0, 0.75, 1.0, 1.0});
  CHECK(f.ipus[1].utilisation_by_phase == std::array<double, 4>{0.0, 1.0, 0.0, 1.0});
  CHECK(f.utilisation_mean == Approx(801.0 / 1001));
  CHECK(f.utilisation_min == Approx(801.0 / 1001));
}

TEST_CASE("a run's memory figures are its fullest IPU's, against the capacity") {
  const auto run = simulate(two_stages(true));
  const auto& ipus = run.report.replay.ipus;
  const auto& f = run.report.figures;
  const auto fullest = std::max(ipus[0].peak_memory_bytes, ipus[1].peak_memory_bytes);
  CHECK(f.peak_memory_bytes_max == fullest);
  CHECK(f.fullest_ipu == (ipus[1].peak_memory_bytes > ipus[0].peak_memory_bytes ? 1 : 0));
  CHECK(f.peak_stash_bytes_max == std::max(ipus[0].peak_stash_bytes, ipus[1].peak_stash_bytes));
  CHECK(f.peak_memory_capacity_share ==
        Approx(double(fullest) / double(run.spec.hardware.memory_per_ipu_bytes)));
  CHECK(f.fits_in_memory);
  CHECK(f.ipus[1].fits_in_memory);
  CHECK(f.ipus[0].streaming_memory_bytes == 0);  // nothing offloaded
}

TEST_CASE("an inference run's empty weight-update phase has shares of 0, not NaN") {
  const auto run = simulate(two_stages(false));
  const auto& f = run.report.figures;
  REQUIRE(run.report.replay.phase_cycles[kWeightUpdate] == 0);
  CHECK(f.phase_share[kWeightUpdate] == 0.0);
  for (const auto& ipu : f.ipus)
    CHECK(ipu.utilisation_by_phase[kWeightUpdate] == 0.0);
  CHECK(f.collective_cycles == 0);
}

TEST_CASE("each operation's figures are its FLOPs, rate and share of its sub-stage") {
  const auto run = simulate(two_stages(true));
  const auto& cost = *run.report.cost;
  const auto& figures = run.report.figures.operations;
  REQUIRE(figures.size() == cost.stages.size());
  const auto& sub = cost.stages[0][0];
  REQUIRE(figures[0][0].size() == sub.operations.size());
  std::int64_t sub_cycles = 0;
  for (std::size_t k = 0; k < sub.operations.size(); ++k) {
    const auto& op = sub.operations[k];
    sub_cycles += op.forward.cycles + op.backward.cycles;
    CHECK(figures[0][0][k].flops == op.forward_flops + op.backward_flops);
  }
  // Profiled cycles: the sub-stage's 200 cycles are its operations', and they carry no FLOPs.
  REQUIRE(sub_cycles == 200);
  double shares = 0;
  for (const auto& op : figures[0][0]) {
    shares += op.share_of_substage;
    CHECK(op.achieved_flops_per_second == 0.0);
  }
  CHECK(shares == Approx(1.0));
}
