// A tiny BERT of encoder halves (transformer_attention, transformer_feed_forward) through the
// pipeline: split between an attention half and its feed-forward half, it equals the one-device
// reference; kept whole per stage it costs, and computes, what the model of encoders does.

#include <catch2/catch.hpp>

#include "sim/machine/cost_model.hpp"
#include "sim/numeric/numeric.hpp"
#include "sim/numeric/training.hpp"
#include "sim/report/report.hpp"
#include "tests/sim/bert_tiny_halves.hpp"

using namespace ipusim;

namespace {

const std::string kHalvesProgram = "numeric_tests";

// Stages 1-3 each start with an encoder's feed-forward half, its attention half one stage
// before (Graphcore's att_ffn_placement in small); with the head in a fifth stage on IPU0, or
// without (one stage per IPU).
const std::string kSplitHalves =
    R"(pipeline.splits=["encoder2_ffn","encoder3_ffn","encoder4_ffn","mlm_transform"])";
const std::string kSplitHalvesFourStages =
    R"(pipeline.splits=["encoder2_ffn","encoder3_ffn","encoder4_ffn"])";

sim::RunSpec halves_spec(const std::string& path, const std::vector<std::string>& sets) {
  std::vector<std::string> all = {"pipeline.micro_batch_size=4", "pipeline.repeat_count=2"};
  all.insert(all.end(), sets.begin(), sets.end());
  std::vector<core::Override> overrides;
  for (const auto& set : all)
    overrides.push_back(core::parse_set_argument(set));
  return sim::load_run_spec(path, overrides);
}

bool same_bits(const models::Tensor& a, const models::Tensor& b) {
  return a.shape() == b.shape() &&
         std::equal(a.values().begin(), a.values().end(), b.values().begin(), b.values().end());
}

sim::RunReport halves_numeric(const sim::RunSpec& spec) {
  sim::SimulateOptions options;
  options.numeric = sim::NumericMode::kOn;
  return sim::simulate(spec, options);
}

// Calls `visit(whole layer, halves layer, first tensor, tensors)` for each layer's tensors in the
// model of halves: an encoder's first ten are its attention half's, the other six its FFN's.
template <typename Visit>
void for_each_half(const sim::RunSpec& whole, Visit visit) {
  for (int layer = 0, h = 0; layer < int(whole.model.layers.size()); ++layer, ++h) {
    if (whole.model.layers[std::size_t(layer)].type != models::LayerType::kTransformerEncoder) {
      visit(layer, h, 0, -1);
      continue;
    }
    visit(layer, h, 0, 10);
    ++h;
    visit(layer, h, 10, 6);
  }
}

}  // namespace

TEST_CASE("a tiny BERT split between attention and FFN halves equals its reference") {
  const std::string path = testing::bert_tiny_variant(kHalvesProgram, "halves.json", true);
  const std::vector<std::tuple<std::string, std::string, std::vector<std::string>>> runs = {
      {"grouped", "none", {kSplitHalves, "pipeline.gradient_accumulation_count=10"}},
      {"grouped", "recompute_then_backpropagate", {kSplitHalves}},
      {"grouped", "recompute_and_backpropagate_interleaved", {kSplitHalves}},
      {"sequential", "none", {kSplitHalves}},
      {"1f1b", "none", {kSplitHalvesFourStages, "pipeline.device_mapping=[0,1,2,3]"}},
      {"1f1b",
       "recompute_and_backpropagate_interleaved",
       {kSplitHalvesFourStages, "pipeline.device_mapping=[0,1,2,3]"}},
      {"gpipe", "none", {kSplitHalvesFourStages, "pipeline.device_mapping=[0,1,2,3]"}},
  };
  for (const auto& [schedule, mode, sets] : runs) {
    INFO(schedule << " " << mode);
    std::vector<std::string> all = {"pipeline.pipeline_schedule=\"" + schedule + "\"",
                                    "pipeline.recomputation_mode=\"" + mode + "\"",
                                    "pipeline.gradient_accumulation_count=20"};
    all.insert(all.end(), sets.begin(), sets.end());
    const sim::RunSpec spec = halves_spec(path, all);
    REQUIRE(spec.pipeline.stages.at(1).layers().size() == 2);  // encoder2_ffn, encoder3_attention
    const sim::RunReport report = halves_numeric(spec);
    REQUIRE(report.numeric);
    CHECK(report.numeric->bit_identical);
    CHECK(report.numeric->max_abs_diff_weights == 0.0);
    CHECK(report.numeric->losses == report.numeric->reference_losses);
  }
}

TEST_CASE("a stage of encoder halves costs what the stage of their encoders does") {
  const auto halves =
      halves_spec(testing::bert_tiny_variant(kHalvesProgram, "halves.json", true), {});
  const auto whole =
      halves_spec(testing::bert_tiny_variant(kHalvesProgram, "whole.json", false), {});
  for (const std::string mode : {"none", "recompute_then_backpropagate"}) {
    INFO(mode);
    const std::vector<std::string> sets = {"pipeline.recomputation_mode=\"" + mode + "\""};
    const auto a = sim::build_cost_model(halves_spec(halves.config_path, sets));
    const auto b = sim::build_cost_model(halves_spec(whole.config_path, sets));
    REQUIRE(a.stages.size() == b.stages.size());
    for (std::size_t k = 0; k < a.stages.size(); ++k) {
      const sim::SubstageCost& x = a.stages[k].at(0);
      const sim::SubstageCost& y = b.stages[k].at(0);
      INFO("stage " << k);
      CHECK(x.forward_cycles == y.forward_cycles);
      CHECK(x.backward_cycles == y.backward_cycles);
      CHECK(x.weight_grad_cycles == y.weight_grad_cycles);
      CHECK(x.recompute_cycles == y.recompute_cycles);
      CHECK(x.forward_flops == y.forward_flops);
      CHECK(x.stash_bytes == y.stash_bytes);
      CHECK(x.live_bytes == y.live_bytes);
      CHECK(x.params == y.params);
      CHECK(x.operations.size() == y.operations.size());
    }
  }
  sim::SimulateOptions options;
  const sim::RunReport a = sim::simulate(halves, options);
  const sim::RunReport b = sim::simulate(whole, options);
  CHECK(a.replay.step_cycles == b.replay.step_cycles);
  REQUIRE(a.replay.ipus.size() == b.replay.ipus.size());
  for (std::size_t i = 0; i < a.replay.ipus.size(); ++i) {
    CHECK(a.replay.ipus[i].peak_memory_bytes == b.replay.ipus[i].peak_memory_bytes);
    CHECK(a.replay.ipus[i].peak_stash_bytes == b.replay.ipus[i].peak_stash_bytes);
  }
}

TEST_CASE("a tiny BERT of halves trains bit for bit as the one of whole encoders") {
  // Without dropout, since a half draws its masks by its own id. The halves are split between
  // an attention half and its FFN half, the encoders at the config's splits: the pipelines
  // differ, the numbers do not.
  const auto halves =
      halves_spec(testing::bert_tiny_variant(kHalvesProgram, "halves_no_dropout.json", true, 0.0),
                  {kSplitHalves});
  const auto whole = halves_spec(
      testing::bert_tiny_variant(kHalvesProgram, "whole_no_dropout.json", false, 0.0), {});
  auto whole_parameters = sim::starting_parameters(whole);
  auto halves_parameters = sim::starting_parameters(halves);
  // The halves start from the encoders' weights: each half's tensors are the encoder's, in order.
  for_each_half(whole, [&](int layer, int half, int first, int count) {
    const auto from = whole_parameters.parameters(layer).subspan(std::size_t(first));
    const auto to = halves_parameters.mutable_parameters(half);
    std::copy(from.begin(), count < 0 ? from.end() : from.begin() + count, to.begin());
  });
  sim::NumericOptions keep;
  keep.keep_first_gradients = true;
  const auto whole_data = sim::training_data(whole);
  const auto halves_data = sim::training_data(halves);
  sim::NumericPipeline whole_run(whole, whole_parameters, *whole_data, keep);
  sim::NumericPipeline halves_run(halves, halves_parameters, *halves_data, keep);
  const auto whole_cost = sim::build_cost_model(whole);
  const auto halves_cost = sim::build_cost_model(halves);
  for (int step = 0; step < 2; ++step) {
    sim::replay(whole, whole_cost, {false, {&whole_run}, {}});
    sim::replay(halves, halves_cost, {false, {&halves_run}, {}});
  }
  REQUIRE(whole_run.losses().size() == 2);
  CHECK(whole_run.losses() == halves_run.losses());
  // The first update's gradients and the weights after two updates, tensor by tensor.
  int tensors = 0;
  for_each_half(whole, [&](int layer, int half, int first, int count) {
    const auto whole_weights = whole_parameters.parameters(layer).subspan(std::size_t(first));
    const auto half_weights = halves_parameters.parameters(half);
    const auto found = whole_run.first_gradients().find(layer);
    for (std::size_t p = 0; p < half_weights.size(); ++p) {
      INFO("layer " << halves.model.layers[std::size_t(half)].id << " parameter " << p);
      CHECK(same_bits(whole_weights[p], half_weights[p]));
      if (found != whole_run.first_gradients().end())
        CHECK(same_bits(found->second.at(std::size_t(first) + p),
                        halves_run.first_gradients().at(half).at(p)));
      ++tensors;
    }
    CHECK((count < 0 || std::size_t(count) == half_weights.size()));
  });
  CHECK(tensors ==
        74);  // the embedding's 5, four encoders' 16 each, the head's 5 (the decoder its bias)
}

TEST_CASE("the shipped tiny BERT of halves is bert_tiny's encoders written as halves") {
  const auto shipped = sim::load_run_spec("configs/bert_tiny_halves_4ipu.json", {});
  const auto made =
      sim::load_run_spec(testing::bert_tiny_variant(kHalvesProgram, "halves.json", true),
                         {core::parse_set_argument(kSplitHalves)});
  REQUIRE(shipped.model.layers.size() == made.model.layers.size());
  for (std::size_t i = 0; i < made.model.layers.size(); ++i) {
    const auto& a = shipped.model.layers[i];
    const auto& b = made.model.layers[i];
    INFO(b.id);
    CHECK(a.id == b.id);
    CHECK(a.type == b.type);
    CHECK(shipped.model.graph.inputs_of(int(i)) == made.model.graph.inputs_of(int(i)));
    CHECK(shipped.model.info[i].params == made.model.info[i].params);
    CHECK(a.params.rate == b.params.rate);
  }
  REQUIRE(shipped.pipeline.stages.size() == made.pipeline.stages.size());
  for (std::size_t k = 0; k < made.pipeline.stages.size(); ++k)
    CHECK(shipped.pipeline.stages[k].layers() == made.pipeline.stages[k].layers());
  CHECK(shipped.pipeline.device_mapping() == made.pipeline.device_mapping());
}

TEST_CASE("explicit stages may part an encoder's halves, but not put the FFN half first") {
  const std::string head = R"(["rows","ids_row","ids","types_row","types","mask_row","mask",)"
                           R"("embeddings",)";
  const std::string tail =
      R"(["encoder3_attention","encoder3_ffn","encoder4_attention"],["encoder4_ffn"],)"
      R"(["mlm_transform","mlm_norm","mlm_decoder","loss"]])";
  const auto with_stages = [&](const std::string& stages) {
    return sim::load_run_spec("configs/bert_tiny_halves_4ipu.json",
                              {core::parse_set_argument("pipeline.splits=null"),
                               core::parse_set_argument("pipeline.stages=" + stages)});
  };
  const auto spec = with_stages("[" + head +
                                R"("encoder1_attention"],["encoder1_ffn","encoder2_attention",)"
                                R"("encoder2_ffn"],)" +
                                tail);
  CHECK(spec.pipeline.stages.at(1).layers().front() == spec.model.index_of("encoder1_ffn"));
  CHECK_THROWS_WITH(
      with_stages("[" + head +
                  R"("encoder1_ffn"],["encoder1_attention","encoder2_attention","encoder2_ffn"],)" +
                  tail),
      Catch::EndsWith("at /pipeline/stages: layer 'encoder1_ffn' is in stage 0 but its input "
                      "'encoder1_attention' is in the later stage 1"));
}
