// The configs of published pipelined runs under configs/examples/ each validate, replay and fit
// in memory at their published micro-batch.

#include <catch2/catch.hpp>
#include <filesystem>

#include "sim/run/run.hpp"
#include "sim/spec/spec.hpp"

using namespace ipusim;

TEST_CASE("every config of a published run in configs/examples runs and fits in memory") {
  const std::filesystem::path folder =
      std::filesystem::path(IPUSIM_SOURCE_DIR) / "configs/examples";
  int configs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    if (entry.path().extension() != ".json")
      continue;
    INFO(entry.path().filename().string());
    const sim::RunSpec spec = sim::load_run_spec(entry.path().string(), {});
    const sim::RunReport report = sim::simulate(spec, {});
    CHECK(report.figures.fits_in_memory);
    CHECK(report.figures.throughput > 0);
    ++configs;
  }
  CHECK(configs >= 1);
}
