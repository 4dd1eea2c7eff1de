// transformer_attention and transformer_feed_forward, the halves of transformer_encoder that
// Graphcore's BERT places on different pipeline stages: their keys, errors and figures.

#include <catch2/catch.hpp>

#include "model_test_support.hpp"
#include "models/layers/layer_parse.hpp"

using namespace ipusim::models;
using ipusim::models::testing::model_error;
using ipusim::models::testing::model_from;
using ipusim::models::testing::with_layers;

namespace {

Layer half_from(const std::string& layer_json) {
  const auto json = nlohmann::json{{"layers", {nlohmann::json::parse(layer_json)}}};
  const auto document = ipusim::core::ConfigDocument::from_json(json, "model.json");
  return parse_layer(document.root().at("layers").at(std::size_t{0}));
}

// A [16, 32] input, then `layers` (JSON text of the rest of the list).
std::string on_sequence(const std::string& layers) {
  return with_layers("[16, 32]", "[" + layers + "]");
}

// Two encoders written whole, or each as its two halves; hidden 32, 4 heads, ffn 64.
const std::string kEncoders = R"(
    {"id": "e1", "type": "transformer_encoder", "hidden": 32, "heads": 4, "sequence_length": 16,
     "ffn": 64},
    {"id": "e2", "type": "transformer_encoder", "hidden": 32, "heads": 4, "sequence_length": 16,
     "ffn": 64})";
const std::string kHalves = R"(
    {"id": "a1", "type": "transformer_attention", "hidden": 32, "heads": 4,
     "sequence_length": 16},
    {"id": "f1", "type": "transformer_feed_forward", "hidden": 32, "sequence_length": 16,
     "ffn": 64},
    {"id": "a2", "type": "transformer_attention", "hidden": 32, "heads": 4,
     "sequence_length": 16},
    {"id": "f2", "type": "transformer_feed_forward", "hidden": 32, "sequence_length": 16,
     "ffn": 64})";

}  // namespace

TEST_CASE("the halves of an encoder read its keys with BERT's defaults") {
  const Layer attention = half_from(
      R"({"id": "a", "type": "transformer_attention", "hidden": 16, "heads": 4,
          "sequence_length": 8})");
  CHECK(attention.type == LayerType::kTransformerAttention);
  CHECK(attention.params.hidden == 16);
  CHECK(attention.params.heads == 4);
  CHECK(attention.params.sequence_length == 8);
  CHECK(attention.params.rate == 0.1);
  const Layer feed_forward = half_from(
      R"({"id": "f", "type": "transformer_feed_forward", "hidden": 16, "sequence_length": 8,
          "dropout": 0})");
  CHECK(feed_forward.type == LayerType::kTransformerFeedForward);
  CHECK(feed_forward.params.ffn == 64);
  CHECK(feed_forward.params.rate == 0.0);
}

TEST_CASE("a bad key or value of an encoder half is an error at its JSON path") {
  CHECK(model_error(on_sequence(R"({"id": "a", "type": "transformer_attention", "hidden": 32,
                                    "heads": 5, "sequence_length": 16})")) ==
        "model.json: at /model/layers/0/heads: heads (5) must divide hidden (32)");
  CHECK(model_error(on_sequence(R"({"id": "a", "type": "transformer_attention", "hidden": 32,
                                    "heads": 4, "sequence_length": 16, "ffn": 64})")) ==
        "model.json: at /model/layers/0/ffn: unknown key 'ffn'; the keys allowed here are "
        "'id', 'type', 'inputs', 'cycles', 'checkpoint', 'hidden', 'heads', 'sequence_length', "
        "'dropout' or 'causal'");
  CHECK(model_error(on_sequence(R"({"id": "f", "type": "transformer_feed_forward",
                                    "hidden": 32, "sequence_length": 16, "fnn": 64})")) ==
        "model.json: at /model/layers/0/fnn: unknown key 'fnn'; did you mean 'ffn'?");
  CHECK(model_error(on_sequence(R"({"id": "f", "type": "transformer_feed_forward",
                                    "hidden": 32, "sequence_length": 16, "dropout": 1})")) ==
        "model.json: at /model/layers/0/dropout: expected a dropout rate from 0 up to (not "
        "including) 1, found 1");
  CHECK(model_error(on_sequence(R"({"id": "f", "type": "transformer_feed_forward",
                                    "sequence_length": 16})")) ==
        "model.json: at /model/layers/0: missing required field 'hidden'");
  CHECK(model_error(on_sequence(R"({"id": "f", "type": "transformer_feed_foward",
                                    "hidden": 32, "sequence_length": 16})")) ==
        "model.json: at /model/layers/0/type: unknown layer type 'transformer_feed_foward'; did "
        "you mean 'transformer_feed_forward'?");
}

TEST_CASE("an encoder half needs a sequence_length by hidden input, and only attention a mask") {
  CHECK(model_error(on_sequence(R"({"id": "f", "type": "transformer_feed_forward",
                                    "hidden": 16, "sequence_length": 16})")) ==
        "model.json: at /model/layers/0: layer 'f' (transformer_feed_forward) needs an input of "
        "shape [16, 16] (sequence_length, hidden), but the model input is [16, 32]");
  CHECK(model_error(on_sequence(R"({"id": "x", "type": "input"},
      {"id": "f", "type": "transformer_feed_forward", "hidden": 32, "sequence_length": 16,
       "inputs": ["x", "x"]})")) ==
        "model.json: at /model/layers/1/inputs: layer 'f' (transformer_feed_forward) takes one "
        "input, but \"inputs\" lists 2");
  CHECK(model_error(on_sequence(R"({"id": "x", "type": "input"},
      {"id": "a", "type": "transformer_attention", "hidden": 32, "heads": 4,
       "sequence_length": 16, "inputs": ["x", "x"]})")) ==
        "model.json: at /model/layers/1: layer 'a' (transformer_attention) takes a padding mask "
        "of shape [16] (sequence_length), but 'x' gives [16, 32]");
}

TEST_CASE("an encoder's halves count its parameters, FLOPs, stash and seeds between them") {
  const Model whole = model_from(on_sequence(kEncoders));
  const Model halves = model_from(on_sequence(kHalves));
  REQUIRE(halves.info.size() == 4);
  const std::int64_t h = 32;
  const std::int64_t f = 64;
  const std::int64_t s = 16;
  CHECK(halves.info[0].params == 4 * h * h + 4 * h + 2 * h);  // 4,288
  CHECK(halves.info[1].params == 2 * h * f + f + h + 2 * h);  // 4,256
  CHECK(whole.info[0].params == halves.info[0].params + halves.info[1].params);
  CHECK(halves.info[0].forward_flops == 8 * s * h * h + 4 * s * s * h);
  CHECK(halves.info[1].forward_flops == 4 * s * h * f);
  // Attention: X, Q, K, V, context and the layer norm's input (6·s·h), the probabilities before
  // and after dropout (2·heads·s²); feed-forward: its input, the layer norm's, GELU's input and
  // output (2·s·h + 2·s·ffn); fp32.
  CHECK(halves.info[0].saved_bytes == (6 * s * h + 2 * 4 * s * s) * 4);
  CHECK(halves.info[1].saved_bytes == (2 * s * h + 2 * s * f) * 4);
  CHECK(halves.info[0].seed_bytes == 16);
  CHECK(halves.info[1].seed_bytes == 8);
  // The attention half's output lives inside the encoder: not among the live activations.
  CHECK(halves.info[0].live_bytes == 0);
  CHECK(halves.info[0].activation_bytes == s * h * 4);
  CHECK(halves.info[1].live_bytes == whole.info[0].live_bytes);
  for (std::size_t e = 0; e < 2; ++e) {
    const LayerInfo& encoder = whole.info[e];
    const LayerInfo& attention = halves.info[2 * e];
    const LayerInfo& feed_forward = halves.info[2 * e + 1];
    CHECK(encoder.params == attention.params + feed_forward.params);
    CHECK(encoder.forward_flops == attention.forward_flops + feed_forward.forward_flops);
    CHECK(encoder.backward_flops == attention.backward_flops + feed_forward.backward_flops);
    CHECK(encoder.saved_bytes == attention.saved_bytes + feed_forward.saved_bytes);
    CHECK(encoder.seed_bytes == attention.seed_bytes + feed_forward.seed_bytes);
    CHECK(encoder.weight_bytes == attention.weight_bytes + feed_forward.weight_bytes);
    CHECK(encoder.live_bytes == attention.live_bytes + feed_forward.live_bytes);
  }
}

TEST_CASE("an encoder lowers to its attention half's operations, then its FFN half's") {
  const Model whole = model_from(on_sequence(kEncoders));
  const Model halves = model_from(on_sequence(kHalves));
  std::vector<Operation> joined = halves.info[0].operations;
  for (const Operation& op : halves.info[1].operations)
    joined.push_back(op);
  const auto& encoder = whole.info[0].operations;
  REQUIRE(joined.size() == encoder.size());
  CHECK(halves.info[0].operations.size() == 7);
  CHECK(halves.info[0].operations.back().name == "add_layer_norm_1");
  CHECK(halves.info[1].operations.front().name == "ffn1");
  for (std::size_t i = 0; i < encoder.size(); ++i) {
    INFO(encoder[i].name);
    CHECK(joined[i].name == encoder[i].name);
    CHECK(joined[i].op_class == encoder[i].op_class);
    for (const auto& [a, b] : {std::pair{&joined[i].forward, &encoder[i].forward},
                               std::pair{&joined[i].backward, &encoder[i].backward}}) {
      CHECK(a->work == b->work);
      CHECK(a->exchanged_elements == b->exchanged_elements);
      CHECK(a->weight_elements == b->weight_elements);
      CHECK(a->compute_sets == b->compute_sets);
      CHECK(a->flops == b->flops);
    }
  }
}
