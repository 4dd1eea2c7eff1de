#include "sim/run/replay_budget.hpp"

#include <catch2/catch.hpp>

#include "sim/core/config_file.hpp"

using namespace ipusim;

namespace {

sim::RunSpec tf1_at(const std::string& gac, const std::string& repeats = "10") {
  return sim::load_run_spec(
      "configs/tf1_mnist_2ipu.json",
      {core::parse_set_argument("pipeline.gradient_accumulation_count=" + gac),
       core::parse_set_argument("pipeline.repeat_count=" + repeats)});
}

}  // namespace

// The TF1 MLP's grouped schedule on 2 IPUs runs 8 tasks a micro-batch (infeed, F and B on each
// IPU, the two copies, outfeed).
TEST_CASE("a replay of more than 2e8 tasks is announced with its size and time, shorter ones not") {
  // 8 x 33,554,432 = 268,435,456 tasks, 6.7 s at 40 million a second.
  CHECK(sim::long_replay_notice(tf1_at("33554432"), false) ==
        "replaying about 2.7e+08 tasks (8 a micro-batch x 33,554,432 micro-batches): about 7 s "
        "at 40 million tasks a second");
  // With the kernels, every repeat replays: 8 x 4,194,304 x 10.
  CHECK(sim::long_replay_notice(tf1_at("4194304"), true) ==
        "replaying about 3.4e+08 tasks (8 a micro-batch x 4,194,304 micro-batches x 10 repeats, "
        "the kernels running in each): about 8 s at 40 million tasks a second, and longer for "
        "the kernels");
  CHECK(sim::long_replay_notice(tf1_at("4194304"), false).empty());  // 3.4e7 tasks
  CHECK(sim::long_replay_notice(tf1_at("16"), true).empty());
}
