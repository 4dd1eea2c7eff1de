// Serialised operations, as Graphcore's GPT-2 runs its LM head and loss: dense's
// serialization_factor (PopTorch's serializedMatMul over the output channels) and
// softmax_cross_entropy's serialized_seq_len (the loss chunk by chunk). The lowering's compute
// sets and temporaries, FLOPs left whole, and the errors' exact texts.

#include <catch2/catch.hpp>
#include <string>

#include "model_test_support.hpp"

using namespace ipusim::models;
using ipusim::models::testing::model_error;
using ipusim::models::testing::model_from;
using ipusim::models::testing::with_layers;

namespace {

// A causal LM of 16 tokens over a vocabulary of 48, hidden 32: the embedding, its tied head and
// the loss, with `head_keys` and `loss_keys` added to the head and the loss.
Model serialised_lm(const std::string& head_keys, const std::string& loss_keys) {
  return model_from(with_layers("[16]", R"([
      {"id": "wte", "type": "embedding", "vocab_size": 48, "hidden": 32, "sequence_length": 16,
       "positions": false, "layer_norm": false},
      {"id": "lm_head", "type": "dense", "units": 48, "bias": false, "tied_to": "wte")" +
                                            head_keys + R"(},
      {"id": "loss", "type": "softmax_cross_entropy")" +
                                            loss_keys + "}]"));
}

const Operation& head_matmul(const Model& model) {
  return model.info.at(1).operations.at(0);
}

const Operation& loss_operation(const Model& model) {
  return model.info.at(2).operations.at(0);
}

}  // namespace

TEST_CASE("a tied head serialised four ways runs four compute sets a pass for a quarter each") {
  const Model whole = serialised_lm("", "");
  const Model serialised = serialised_lm(R"(, "serialization_factor": 4)", "");
  const Operation& one = head_matmul(whole);
  const Operation& four = head_matmul(serialised);
  CHECK(one.forward.compute_sets == 1);
  CHECK(one.backward.compute_sets == 2);
  CHECK(four.forward.compute_sets == 4);
  CHECK(four.backward.compute_sets == 8);
  // The word matrix, 48 x 32, laid out for the lookup, is rearranged for the matmul: whole, or a
  // slice of 12 x 32 at a time.
  CHECK(one.temporary_weight_elements == 48 * 32);
  CHECK(four.temporary_weight_elements == 12 * 32);
  CHECK(four.temporary_elements == 0);
  // The work is the same: 2 x 16 x 32 x 48 FLOPs forward, twice that back.
  CHECK(four.forward.flops == 2.0 * 16 * 32 * 48);
  CHECK(serialised.info.at(1).forward_flops == whole.info.at(1).forward_flops);
  CHECK(serialised.info.at(1).backward_flops == 2.0 * 2 * 16 * 32 * 48);
}

TEST_CASE("an untied dense has no rearranged weights, serialised or not") {
  const Model model = model_from(with_layers("[16, 32]", R"([
      {"id": "d", "type": "dense", "units": 48, "serialization_factor": 3}])"));
  const Operation& matmul = model.info.at(0).operations.at(0);
  CHECK(matmul.forward.compute_sets == 3);
  CHECK(matmul.temporary_weight_elements == 0);
  CHECK(matmul.temporary_elements == 0);
}

TEST_CASE("the loss in chunks of 4 tokens holds a chunk's one-hot labels at a time") {
  const Model whole_model = serialised_lm("", "");
  const Model chunked_model = serialised_lm("", R"(, "serialized_seq_len": 4)");
  const Operation& whole = loss_operation(whole_model);
  const Operation& chunked = loss_operation(chunked_model);
  // PopART's one-hot is the probabilities' size: 16 tokens x 48, or 4 x 48 for a chunk of 4.
  CHECK(whole.temporary_elements == 16 * 48);
  CHECK(chunked.temporary_elements == 4 * 48);
  // Four chunks, each the whole loss's three compute sets forward and one back.
  CHECK(whole.forward.compute_sets == 3);
  CHECK(chunked.forward.compute_sets == 12);
  CHECK(chunked.backward.compute_sets == 4);
  CHECK(chunked.forward.flops == whole.forward.flops);
  // A chunk as long as the sequence is the whole loss.
  const Model one_chunk = serialised_lm("", R"(, "serialized_seq_len": 16)");
  CHECK(loss_operation(one_chunk).temporary_elements == 16 * 48);
}

TEST_CASE("a classifier's loss holds one row of one-hot labels a sample") {
  const Model model = model_from(with_layers("[10]", R"([
      {"id": "loss", "type": "softmax_cross_entropy"}])"));
  CHECK(model.info.at(0).operations.at(0).temporary_elements == 10);
}

TEST_CASE("serialisation that does not divide is refused, naming the numbers") {
  CHECK(model_error(with_layers("[16, 32]", R"([
      {"id": "d", "type": "dense", "units": 48, "serialization_factor": 5}])")) ==
        "model.json: at /model/layers/0: layer 'd' (dense) needs units divisible by its "
        "serialization_factor 5, but units is 48");
  CHECK(model_error(with_layers("[16, 48]", R"([
      {"id": "loss", "type": "softmax_cross_entropy", "serialized_seq_len": 5}])")) ==
        "model.json: at /model/layers/0: layer 'loss' (softmax_cross_entropy) needs its "
        "serialized_seq_len to divide the 16 rows of logits a sample has, but the model input "
        "is [16, 48]");
  CHECK(model_error(with_layers("[16, 32]", R"([
      {"id": "d", "type": "dense", "units": 48, "serialization_factor": 0}])")) ==
        "model.json: at /model/layers/0/serialization_factor: expected an integer from 1 to "
        "1048576, found 0");
}
