#include "sim/machine/collectives.hpp"

#include <catch2/catch.hpp>

#include "sim/core/config_file.hpp"
#include "sim/core/error.hpp"
#include "tests/sim/replicated_pair.hpp"
#include "tests/test_support.hpp"

using namespace ipusim;

namespace {

// At 1 GHz a link of 1 GB/s moves one byte a cycle, so ring steps are easy to count by hand.
constexpr double kGhz = 1e9;

// The shared pair of dense stages, its replicas in IPU-Link domains of `ipus_per_ild` IPUs.
nlohmann::json replicated(int replicas, int ipus_per_ild) {
  auto config = testing::replicated_pair(replicas);
  config["hardware"]["ipus_per_ild"] = ipus_per_ild;
  return config;
}

sim::RunSpec spec_of(const nlohmann::json& config) {
  return sim::build_run_spec(core::ConfigDocument::from_json(config, "test.json"));
}

std::string config_error(const nlohmann::json& config) {
  return testing::error_of<core::ConfigError>([&] { spec_of(config); });
}

}  // namespace

TEST_CASE("a ring reduce-scatter and all-gather take n-1 steps of 1/n, an all-reduce 2(n-1)") {
  const sim::RingLink link{1e9, 100};
  // 8,000 B over 4 replicas: steps of 2,000 B, 2,000 cycles plus 100 of latency.
  CHECK(sim::ring_reduce_scatter_cycles(8000, 4, link, kGhz) == 3 * 2100);
  CHECK(sim::ring_all_gather_cycles(8000, 4, link, kGhz) == 3 * 2100);
  CHECK(sim::ring_all_reduce_cycles(8000, 4, link, kGhz) == 6 * 2100);
  CHECK(sim::ring_all_reduce_cycles(8000, 1, link, kGhz) == 0);
  // An unlimited link pays only the latency.
  CHECK(sim::ring_all_reduce_cycles(8000, 4, {0, 100}, kGhz) == 600);
}

TEST_CASE(
    "replicas fill IPU-Link domains of 64 IPUs: POD128 and POD256 hold 8 replicas of 8 each") {
  std::string error;
  const auto pod64 = sim::replica_layout(8, 8, 64, &error);
  CHECK((pod64.per_ild == 8 && pod64.ilds() == 1));
  const auto pod128 = sim::replica_layout(16, 8, 64, &error);
  CHECK((pod128.per_ild == 8 && pod128.ilds() == 2));
  const auto pod256 = sim::replica_layout(32, 8, 64, &error);
  CHECK((pod256.per_ild == 8 && pod256.ilds() == 4));
  CHECK(error.empty());
}

TEST_CASE("inside one IPU-Link domain the all-reduce is today's ring over the rail links") {
  const auto spec = spec_of(replicated(4, 64));
  const sim::Collectives collectives(spec);
  CHECK(collectives.layout().ilds() == 1);
  // 641,600 B in 6 steps of 160,400 B at 2 GB/s: 80,200 cycles plus 100 each.
  CHECK(collectives.all_reduce(641'600) == 6 * (100 + 80'200));
  CHECK(collectives.reduce_scatter(641'600) == 3 * (100 + 80'200));
  CHECK(collectives.all_gather(641'600) == 3 * (100 + 80'200));
  CHECK(collectives.cross_ild_all_reduce(160'400) == 0);
}

TEST_CASE("across IPU-Link domains the all-reduce is hierarchical over the GW-Links") {
  // 4 replicas of 2 IPUs in domains of 4 IPUs: 2 domains of 2 replicas.
  const auto spec = spec_of(replicated(4, 4));
  const sim::Collectives collectives(spec);
  CHECK(collectives.layout().ilds() == 2);
  CHECK(collectives.layout().per_ild == 2);
  // Reduce-scatter inside: 1 step of 320,800 B at 2 GB/s, 160,400 + 100 cycles.
  const std::int64_t inside = 100 + 160'400;
  CHECK(collectives.reduce_scatter(641'600) == inside);
  // The 320,800 B shard between the 2 domains: 2 steps of 160,400 B at 0.5 GB/s, 320,800 +
  // 1,000 cycles each.
  const std::int64_t between = 2 * (1000 + 320'800);
  CHECK(collectives.cross_ild_all_reduce(320'800) == between);
  CHECK(collectives.all_reduce(641'600) == inside + between + inside);
}

TEST_CASE("replicas that do not fill IPU-Link domains alike are a config error") {
  auto config = replicated(3, 4);
  CHECK(config_error(config) ==
        "test.json: at /pipeline/replication_factor: 3 replicas of 2 IPUs do not fill IPU-Link "
        "domains of 4 IPUs (hardware.ipus_per_ild) alike: each domain must hold the same whole "
        "number of replicas");
}

TEST_CASE("bad IPU-Link domain and GW-Link keys name their JSON path") {
  auto zero = replicated(4, 0);
  CHECK(config_error(zero) ==
        "test.json: at /hardware/ipus_per_ild: expected an integer from 1 to 1024, found 0");
  auto misspelt = replicated(4, 64);
  misspelt["hardware"]["gw_link"] = {{"bandwith", "1 GB/s"}};
  CHECK(config_error(misspelt) ==
        "test.json: at /hardware/gw_link/bandwith: unknown key 'bandwith'; did you mean "
        "'bandwidth'?");
  auto slow = replicated(4, 64);
  slow["hardware"]["gw_link"] = {{"bandwidth", "1 B/s"}};
  CHECK(config_error(slow) ==
        "test.json: at /hardware/gw_link/bandwidth: expected a bandwidth from 1kB/s to 1PB/s, "
        "found \"1 B/s\" (the ideal preset models free transfers)");
  auto host_call = replicated(4, 64);
  // Two hours, past the hour the key takes (durations are written in s, ms, us, ns or ps).
  host_call["hardware"]["host_call"] = {{"per_program", "7200s"}};
  CHECK(config_error(host_call) ==
        "test.json: at /hardware/host_call/per_program: expected a time from 0s to 3600s, found "
        "\"7200s\"");
}
