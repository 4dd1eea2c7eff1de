// Operations' temporaries in a task's memory: a task holds its largest operation's temporaries
// beside its activations, and serialising the tied LM head or the loss shrinks them.

#include <catch2/catch.hpp>

#include "sim/machine/cost_model.hpp"

using namespace ipusim;

namespace {

// gpt_tiny's last stage on IPU0: ln_f, the head tied to the 48 x 32 word matrix and the loss
// over 16 tokens, micro-batch 4, fp32.
sim::RunSpec gpt_tiny(const std::vector<std::string>& sets) {
  std::vector<core::Override> overrides;
  for (const auto& set : sets)
    overrides.push_back(core::parse_set_argument(set));
  return sim::load_run_spec("configs/gpt_tiny_2ipu.json", overrides);
}

sim::SubstageCost gpt_tiny_last_stage(const std::vector<std::string>& sets) {
  return sim::build_cost_model(gpt_tiny(sets)).stages.at(2).at(0);
}

const std::string kHeadFactor = "/model/layers/17/serialization_factor=";
const std::string kLossChunk = "/model/layers/18/serialized_seq_len=";

}  // namespace

TEST_CASE("a task holds its largest operation's temporaries beside its activations") {
  // The loss's one-hot: 16 x 48 logits x 4 samples x 4 bytes = 12,288; the head's rearranged
  // word matrix: 48 x 32 x 4 bytes = 6,144.
  const auto whole = gpt_tiny_last_stage({});
  CHECK(whole.temporary_bytes == 12288);
  // In chunks of 4 tokens the loss holds 3,072, and the head's 6,144 is the largest.
  const auto chunked = gpt_tiny_last_stage({kLossChunk + "4"});
  CHECK(chunked.temporary_bytes == 6144);
  // With the head in four slices of 12 x 32 as well (1,536), the loss's chunk is the largest.
  const auto both = gpt_tiny_last_stage({kLossChunk + "4", kHeadFactor + "4"});
  CHECK(both.temporary_bytes == 3072);
  // The activations themselves do not change, nor what the backward adds to them.
  CHECK(whole.live_bytes - whole.temporary_bytes == both.live_bytes - both.temporary_bytes);
  CHECK(whole.backward_live_bytes - whole.live_bytes == both.backward_live_bytes - both.live_bytes);
}

TEST_CASE("serialising adds a compute set's overhead a slice and leaves the work") {
  // The fitted formula's closed form: a planned product plans each slice anew.
  const std::string fitted = "hardware.operations.pricing=\"fitted\"";
  const auto whole = gpt_tiny_last_stage({fitted});
  const auto both = gpt_tiny_last_stage({fitted, kLossChunk + "4", kHeadFactor + "4"});
  CHECK(both.forward_flops == whole.forward_flops);
  CHECK(both.backward_flops == whole.backward_flops);
  // Each compute set costs its sync and its exchange's fixed cycles; the work, the tiles and the
  // bytes exchanged stay. Forward: the head 1 -> 4 sets, the loss 3 -> 12, 12 more; backward:
  // the head 2 -> 8, the loss 1 -> 4, 9 more.
  const auto ops = gpt_tiny({}).hardware.operations;
  const double set_cycles = ops.compute_set_cycles + double(ops.exchange_cycles);
  CHECK(double(both.forward_cycles - whole.forward_cycles) == 12 * set_cycles);
  CHECK(double(both.backward_cycles - whole.backward_cycles) == 9 * set_cycles);
}
