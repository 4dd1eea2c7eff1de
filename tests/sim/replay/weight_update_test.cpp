// The weight-update phase with replicas: sharded optimizer state (reduce-scatter, the update
// of a shard, all-gather), hierarchical collectives across IPU-Link domains, the host call
// that ends each device program, and the instances' input pipelines.

#include <catch2/catch.hpp>

#include "sim/core/config_file.hpp"
#include "sim/machine/memory_category.hpp"
#include "sim/replay/replay.hpp"
#include "sim/report/report.hpp"
#include "tests/sim/replicated_pair.hpp"
#include "tests/test_support.hpp"

using namespace ipusim;

namespace {

// The shared pair of dense stages under Adam (two fp32 moments: 1,283,200 B of state per IPU).
nlohmann::json adam_replicas(int replicas, bool sharded) {
  auto config = testing::replicated_pair(replicas);
  config["pipeline"]["replicated_optimizer_state_sharding"] = sharded;
  config["pipeline"]["optimizer"] = {{"type", "adam"}, {"learning_rate", 0.001}};
  return config;
}

sim::RunReport simulate(const nlohmann::json& config) {
  const auto spec = sim::build_run_spec(core::ConfigDocument::from_json(config, "test.json"));
  return sim::simulate(spec, {});
}

std::string spec_error(const nlohmann::json& config) {
  return testing::error_of<core::ConfigError>(
      [&] { sim::build_run_spec(core::ConfigDocument::from_json(config, "test.json")); });
}

std::int64_t state_bytes(const sim::RunReport& report, int ipu) {
  return report.replay.ipus[ipu].memory_at_peak.at(sim::MemoryCategory::kOptimizerState);
}

std::int64_t weight_update_phase(const sim::RunReport& report) {
  return report.replay.phase_cycles[schedules::index(schedules::Phase::kWeightUpdate)];
}

}  // namespace

TEST_CASE("sharded optimizer state keeps 1/R of the state on each replica's IPUs") {
  const auto replicated = simulate(adam_replicas(4, false));
  const auto sharded = simulate(adam_replicas(4, true));
  for (int ipu : {0, 1}) {
    CHECK(state_bytes(replicated, ipu) == 1'283'200);
    CHECK(state_bytes(sharded, ipu) == 1'283'200 / 4);
  }
}

TEST_CASE("with one replica sharding the optimizer state changes nothing") {
  const auto replicated = simulate(adam_replicas(1, false));
  const auto sharded = simulate(adam_replicas(1, true));
  CHECK(state_bytes(sharded, 0) == 1'283'200);
  CHECK(sharded.replay.step_cycles == replicated.replay.step_cycles);
}

TEST_CASE("sharded state: reduce-scatter, the shard's update, then all-gather of the weights") {
  const auto replicated = simulate(adam_replicas(4, false));
  const auto sharded = simulate(adam_replicas(4, true));
  const auto& all = replicated.replay.weight_update;
  // All-reduce of 641,600 B over 4 replicas: 6 steps of 160,400 B at 2 GB/s.
  CHECK(all.reduce_scatter == 0);
  CHECK(all.all_reduce == 6 * (100 + 80'200));
  CHECK(all.all_gather == 0);
  const auto& shard = sharded.replay.weight_update;
  // 3 steps each of the gradients, then of the fp32 weights, 160,400 B a step.
  CHECK(shard.reduce_scatter == 3 * (100 + 80'200));
  CHECK(shard.all_reduce == 0);  // one IPU-Link domain: nothing between domains
  CHECK(shard.all_gather == 3 * (100 + 80'200));
  // Adam's 4 vector passes over 160,400 and 40,100 parameters on 1,472 tiles at 2/3 of an fp32
  // element a cycle each: ceil(641,600 / 981.33) and ceil(160,400 / 981.33).
  CHECK(all.update == 654);
  CHECK(shard.update == 164);
  CHECK(weight_update_phase(sharded) == shard.reduce_scatter + shard.update + shard.all_gather);
}

TEST_CASE("across IPU-Link domains the shard is all-reduced over the GW-Links") {
  auto config = adam_replicas(4, true);
  config["hardware"]["ipus_per_ild"] = 4;  // 2 domains of 2 replicas: the sharding group is 2
  const auto report = simulate(config);
  CHECK(state_bytes(report, 0) == 1'283'200 / 2);
  const auto& parts = report.replay.weight_update;
  CHECK(parts.reduce_scatter == 100 + 160'400);     // 1 step of 320,800 B at 2 GB/s
  CHECK(parts.all_reduce == 2 * (1000 + 320'800));  // 2 steps of 160,400 B at 0.5 GB/s
  CHECK(parts.all_gather == 100 + 160'400);
}

TEST_CASE("offloaded sharded state streams only the shard") {
  auto config = adam_replicas(4, true);
  config["pipeline"]["offload_weight_update_variables"] = true;
  config["hardware"]["streaming_memory_bandwidth"] = "1 GB/s";
  const auto report = simulate(config);
  // The shard's 320,800 B of moments, read and written back at 1 B a cycle.
  CHECK(report.replay.weight_update.state_stream == 641'600);
  CHECK(report.replay.ipus[0].memory_at_peak.count(sim::MemoryCategory::kOptimizerState) == 0);
}

// 5 µs at 1 GHz is 5,000 cycles.
TEST_CASE("each weight update ends with one host call") {
  auto config = adam_replicas(1, false);
  const auto without = simulate(config);
  config["hardware"]["host_call"] = {{"per_program", "5us"}, {"per_tensor", "0s"}};
  const auto with = simulate(config);
  CHECK(with.replay.weight_update.host_call == 5000);
  CHECK(weight_update_phase(with) - weight_update_phase(without) == 5000);
}

TEST_CASE("a device program's host call is shared by its repeat_count weight updates") {
  auto config = adam_replicas(1, false);
  config["hardware"]["host_call"] = {{"per_program", "5us"}, {"per_tensor", "0s"}};
  config["pipeline"]["repeat_count"] = 4;
  CHECK(simulate(config).replay.weight_update.host_call == 5000 / 4);
  config["pipeline"]["repeat_count"] = 3;
  CHECK(simulate(config).replay.weight_update.host_call == 1667);  // 5,000 / 3 rounded up
}

// The pair's two dense layers hold four tensors (a weight and a bias each): 1 ms a program and
// 1 ms a tensor make 5 ms, 5,000,000 cycles at 1 GHz.
TEST_CASE("a host call takes its time per program and per weight tensor") {
  auto config = adam_replicas(1, false);
  config["hardware"]["host_call"] = {{"per_program", "1ms"}, {"per_tensor", "1ms"}};
  const auto report = simulate(config);
  CHECK(report.spec->model.weight_tensors() == 4);
  CHECK(report.replay.weight_update.host_call == 5'000'000);
  config["model"]["layers"][0]["bias"] = false;  // three tensors
  CHECK(simulate(config).replay.weight_update.host_call == 4'000'000);
}

TEST_CASE("the host call is a time, and the old cycle count says where it went") {
  auto config = adam_replicas(1, false);
  config["hardware"]["host_call"] = {{"per_tensor", "-1ms"}};
  CHECK(spec_error(config) ==
        "test.json: at /hardware/host_call/per_tensor: cannot read \"-1ms\" "
        "as a duration: it is negative (write it like \"15ns\")");
  config["hardware"]["host_call"] = {{"per_tensr", "1ms"}};
  CHECK(spec_error(config) ==
        "test.json: at /hardware/host_call/per_tensr: unknown key "
        "'per_tensr'; did you mean 'per_tensor'?");
  config["hardware"].erase("host_call");
  config["hardware"]["sync"] = {{"host_round_trip_cycles", 5000}};
  CHECK(spec_error(config) ==
        "test.json: at /hardware/sync/host_round_trip_cycles: the cost of a host call is now a "
        "time, charged once per device program: use hardware.host_call, e.g. {\"per_program\": "
        "\"10us\", \"per_tensor\": \"450us\"}");
}

TEST_CASE("Graphcore's names for the weight updates of a program say what to write") {
  auto config = adam_replicas(1, false);
  config["pipeline"]["batches_per_step"] = 4;
  CHECK(spec_error(config) ==
        "test.json: at /pipeline/batches_per_step: PopART's batches_per_step counts the weight "
        "updates one device program runs: write it as repeat_count");
  config["pipeline"].erase("batches_per_step");
  config["pipeline"]["steps_per_execution"] = 16;
  CHECK(spec_error(config) ==
        "test.json: at /pipeline/steps_per_execution: Keras's steps_per_execution counts "
        "micro-batches: write steps_per_execution / gradient_accumulation_count as repeat_count");
}

// A step's input is 4 micro-batches of one sample, 400 fp32 values and an int32 label: 1,604 B
// a replica. At 1 MB/s and 1 GHz a byte takes 1,000 cycles.
TEST_CASE("a host slower than the IPUs makes them wait, and replicas on one host share it") {
  auto config = adam_replicas(4, false);
  config["hardware"]["host_input_bandwidth"] = "1 MB/s";
  config["hardware"]["ipus"] = 8;
  config["hardware"]["ipus_per_host"] = 2;  // one replica a host: 4 hosts
  const auto own_host = simulate(config);
  CHECK(own_host.cost->host_input.hosts == 4);
  CHECK(own_host.cost->host_input.bytes == 4 * 1604);
  CHECK(own_host.replay.step_cycles == 4 * 1604 * 1000);
  // The IPUs' own step, as with a host that is never late, plus the wait makes the input's time.
  auto fast = config;
  fast["hardware"]["host_input_bandwidth"] = "1 TB/s";
  const auto device = simulate(fast).replay.step_cycles;
  CHECK(own_host.replay.weight_update.input_wait == 4 * 1604 * 1000 - device);
  config["hardware"]["ipus_per_host"] = 8;  // all four replicas on one host
  const auto shared = simulate(config);
  CHECK(shared.cost->host_input.hosts == 1);
  CHECK(shared.cost->host_input.replicas_per_host == 4);
  CHECK(shared.replay.step_cycles == 4 * 4 * 1604 * 1000);
  CHECK(simulate(fast).replay.weight_update.input_wait == 0);
}

// Four replicas on one host of 1 MB/s, run by two instances of two replicas: each instance
// prepares 2 replicas x 4 samples x 1,604 B = 12,832 B a step at its half of the host, 0.5 MB/s,
// in 25.664 ms; decoding its 8 samples at 40 a second takes 200 ms.
TEST_CASE("instances share their host's input bandwidth, and decode at their own rate") {
  auto config = adam_replicas(4, false);
  config["hardware"]["ipus"] = 8;
  config["hardware"]["ipus_per_host"] = 8;
  config["hardware"]["host_input_bandwidth"] = "1 MB/s";
  config["pipeline"]["replicas_per_instance"] = 2;
  const auto shared = simulate(config);
  const auto& input = shared.cost->host_input;
  CHECK(input.instances == 2);
  CHECK(input.instances_per_host() == 2);
  CHECK(input.replicas_per_instance == 2);
  CHECK(input.bytes == 2 * 4 * 1604);
  CHECK(input.cycles == 25'664'000);
  CHECK(shared.replay.step_cycles == 25'664'000);
  config["hardware"]["instance_decode_rate"] = 40;
  CHECK(simulate(config).cost->host_input.cycles == 25'664'000);  // samples come decoded
  config["data"] = {{"host_decode", true}};
  const auto decoded = simulate(config);
  CHECK(decoded.cost->host_input.decoding);
  CHECK(decoded.cost->host_input.cycles == 200'000'000);
  config["hardware"]["instance_decode_rate"] = "40/s";
  CHECK(spec_error(config) ==
        "test.json: at /hardware/instance_decode_rate: expected a number, found a string "
        "\"40/s\"");
  config["hardware"]["instance_decode_rate"] = 0;
  CHECK(spec_error(config) ==
        "test.json: at /hardware/instance_decode_rate: expected samples a "
        "second from 0.0167 to 1e12, found 0");
}

TEST_CASE("instances must share the replicas alike, each on one host") {
  auto config = adam_replicas(4, false);
  config["hardware"]["ipus"] = 8;
  config["pipeline"]["replicas_per_instance"] = 3;
  CHECK(spec_error(config) ==
        "test.json: at /pipeline/replicas_per_instance: 3 replicas an instance cannot share 4 "
        "replicas alike: expected a divisor of replication_factor");
  config["hardware"]["ipus_per_host"] = 4;  // two hosts of two replicas
  config["pipeline"]["replicas_per_instance"] = 4;
  CHECK(spec_error(config) ==
        "test.json: at /pipeline/replicas_per_instance: 4 replicas an instance do not fill hosts "
        "of 2 replicas (hardware.ipus_per_host) alike: an instance's replicas sit on one host, and "
        "each host runs the same whole number of instances");
  // Fewer replicas than an instance drives make one instance, which must still fit a host.
  config["pipeline"]["replicas_per_instance"] = 8;
  CHECK(spec_error(config) ==
        "test.json: at /pipeline/replicas_per_instance: 4 replicas an instance do not fill hosts "
        "of 2 replicas (hardware.ipus_per_host) alike: an instance's replicas sit on one host, and "
        "each host runs the same whole number of instances");
}

// A replica sweep keeps each instance's share: fewer replicas than an instance drives make one.
TEST_CASE("fewer replicas than an instance drives make one instance of them all") {
  auto config = adam_replicas(1, false);
  config["pipeline"]["replicas_per_instance"] = 2;
  const auto one = simulate(config);
  CHECK(one.cost->host_input.instances == 1);
  CHECK(one.cost->host_input.replicas_per_instance == 1);
}
