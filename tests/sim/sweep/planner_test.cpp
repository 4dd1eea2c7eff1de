#include "sim/sweep/planner.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "sim/core/error.hpp"
#include "sim/spec/spec.hpp"
#include "sim/sweep/plan_pricer.hpp"

namespace {

using namespace ipusim;

// The fastest fitting run of a search space, and every candidate that reaches it.
struct BruteForce {
  double throughput = -1;
  std::vector<std::string> best;  // "splits schedule gac" of each candidate at the maximum
  std::size_t valid = 0;
};

std::string label(const std::vector<std::string>& splits, const std::string& schedule,
                  std::int64_t gac) {
  return nlohmann::json(splits).dump() + " " + schedule + " " + std::to_string(gac);
}

void replay_one(const std::string& config, const std::vector<core::Override>& overrides,
                BruteForce& out) {
  std::optional<sim::RunSpec> spec;
  try {
    spec = sim::load_run_spec(config, overrides);
  } catch (const core::ConfigError&) {
    return;
  }
  ++out.valid;
  sim::SimulateOptions options;
  options.allow_oom = true;
  const auto report = sim::simulate(*spec, options);
  if (!report.figures.fits_in_memory || report.figures.throughput < out.throughput)
    return;
  const auto& p = spec->pipeline;
  std::vector<std::string> splits;
  for (std::size_t k = 1; k < p.stages.size(); ++k)
    splits.push_back(spec->model.layers[std::size_t(p.stages[k].layers().front())].id);
  const auto key = label(splits, p.schedule, p.gradient_accumulation_count) + " x" +
                   std::to_string(p.replication_factor);
  if (report.figures.throughput > out.throughput)
    out.best.clear();
  out.throughput = report.figures.throughput;
  out.best.push_back(key);
}

// Replays every split of the config's layers into its stages (or into `shape`'s, overrides of
// device_mapping and replicas), under every schedule and GAC.
BruteForce brute_force(const std::string& config, const std::vector<std::string>& schedules,
                       const std::vector<std::string>& gacs,
                       const std::vector<ipusim::core::Override>& shape = {}, BruteForce out = {}) {
  const auto base = sim::load_run_spec(config, shape);
  const int layers = int(base.model.layers.size());
  const int cuts = int(base.pipeline.stages.size()) - 1;
  std::vector<std::string> splits;
  std::function<void(int)> place = [&](int first) {
    if (int(splits.size()) == cuts) {
      for (const auto& schedule : schedules) {
        for (const auto& gac : gacs) {
          auto overrides = shape;
          overrides.push_back(
              {"/pipeline/pipeline_schedule", nlohmann::json(schedule).dump(), "test"});
          overrides.push_back({"/pipeline/gradient_accumulation_count", gac, "test"});
          overrides.push_back({"/pipeline/splits", nlohmann::json(splits).dump(), "test"});
          replay_one(config, overrides, out);
        }
      }
      return;
    }
    for (int c = first; c < layers; ++c) {
      splits.push_back(base.model.layers[std::size_t(c)].id);
      place(c + 1);
      splits.pop_back();
    }
  };
  place(1);
  return out;
}

void check_planner_matches_brute_force(const std::string& config,
                                       const std::vector<std::string>& gacs) {
  const std::vector<std::string> schedules = {"grouped", "interleaved", "sequential"};
  sim::PlanRequest request;
  request.config_path = config;
  request.gacs = gacs;
  request.jobs = 2;
  const auto result = sim::plan(request);
  const auto expected = brute_force(config, schedules, gacs);
  REQUIRE(result.any_fits());
  REQUIRE(expected.valid > 0);
  const auto& best = result.ranked.front();
  CHECK(best.report->figures.throughput == expected.throughput);
  CHECK_THAT(expected.best,
             Catch::Matchers::VectorContains(label(best.splits, best.schedule, best.gac) + " x1"));
}

}  // namespace

TEST_CASE("the planner's best TF1 MLP split, schedule and GAC are brute force's fastest") {
  check_planner_matches_brute_force("configs/tf1_mnist_2ipu.json", {"8", "16"});
}

TEST_CASE("the planner's best Keras CNN split, schedule and GAC are brute force's fastest") {
  check_planner_matches_brute_force("configs/keras_cnn_2stage.json", {"8", "16"});
}

TEST_CASE("the planner tries every split the stage rules accept on a small model") {
  sim::PlanRequest request;
  request.config_path = "configs/tf1_mnist_2ipu.json";
  request.jobs = 1;
  const auto result = sim::plan(request);
  // 7 layers make 6 two-stage splits under each of the three step-based schedules.
  CHECK(result.evaluated == 18);
  CHECK(result.replayed + result.invalid == 18);
}

TEST_CASE("the planner refuses a config with explicit stages") {
  const auto path = std::filesystem::path(IPUSIM_BINARY_DIR) / "planner_test_stages.json";
  std::ofstream(path) << R"({"include": ")" IPUSIM_SOURCE_DIR
                         R"(/configs/models/tf1_mnist_mlp.json",
    "pipeline": {"gradient_accumulation_count": 8, "stages": [["flatten", "dense256"], ["dense128", "dense64", "dense32", "logits",
    "cel"]]}})";
  sim::PlanRequest request;
  request.config_path = path.string();
  std::string message;
  try {
    sim::plan(request);
  } catch (const core::ConfigError& error) {
    message = error.what();
  }
  CHECK(message == path.string() +
                       ": at /pipeline/stages: plan moves the split points of pipeline.splits, "
                       "one IPU per stage; a config with explicit (or concurrent) stages is "
                       "outside what it searches: write the stages as pipeline.splits, or plan "
                       "without them");
}

TEST_CASE("the planner searches BERT-Large's splits and beats the layout Graphcore ran") {
  sim::PlanRequest request;
  request.config_path = "configs/bert_large_4ipu.json";
  request.jobs = 2;
  const auto result = sim::plan(request);
  REQUIRE(result.any_fits());
  // 29 layers cut into 5 stages, C(28, 4) ways, under the two schedules that accept two stages
  // on IPU0; the interleaved schedule is skipped with its error.
  CHECK(result.evaluated == 2 * 20475);
  CHECK(result.skipped_settings() == 1);
  sim::SimulateOptions options;
  const auto own = sim::simulate(sim::load_run_spec(request.config_path, {}), options);
  CHECK(result.ranked.front().report->figures.throughput >= own.figures.throughput);
}

namespace {

// The overrides that run the TF1 MLP on `ipus` IPUs per replica, 4 IPUs in all, with an even
// split to load it with.
std::vector<core::Override> tf1_shape(int ipus, const std::vector<std::string>& splits) {
  nlohmann::json mapping = nlohmann::json::array();
  for (int i = 0; i < ipus; ++i)
    mapping.push_back(i);
  return {{"/pipeline/device_mapping", mapping.dump(), "test"},
          {"/pipeline/splits", nlohmann::json(splits).dump(), "test"},
          {"/pipeline/replication_factor", std::to_string(4 / ipus), "test"},
          {"/hardware/ipus", "4", "test"}};
}

sim::PlanRequest tf1_request() {
  sim::PlanRequest request;
  request.config_path = "configs/tf1_mnist_2ipu.json";
  request.jobs = 2;
  return request;
}

}  // namespace

TEST_CASE("the planner's best IPUs per replica, replicas, split and schedule are brute force's") {
  auto request = tf1_request();
  request.ipus_per_replica = {1, 2, 4};
  request.total_ipus = 4;
  request.gacs = {"8", "16"};
  const auto result = sim::plan(request);
  const std::vector<std::string> schedules = {"grouped", "interleaved", "sequential"};
  const std::vector<std::string> gacs = {"8", "16"};
  const std::string config = request.config_path;
  auto expected = brute_force(config, schedules, gacs, tf1_shape(1, {}));
  expected = brute_force(config, schedules, gacs, tf1_shape(2, {"dense128"}), expected);
  expected = brute_force(config, schedules, gacs, tf1_shape(4, {"dense256", "dense128", "dense64"}),
                         expected);
  REQUIRE(result.any_fits());
  const auto& best = result.ranked.front();
  CHECK(best.report->figures.throughput == expected.throughput);
  CHECK_THAT(expected.best,
             Catch::Matchers::VectorContains(label(best.splits, best.schedule, best.gac) + " x" +
                                             std::to_string(best.replicas)));
  // Every shape was searched: 6 and 20 splits of 7 layers into 2 and 4 stages under 3 schedules,
  // the one-stage run under one (every schedule runs it alike), each at 2 GACs.
  CHECK(result.evaluated == (1 + 6 * 3 + 20 * 3) * 2);
}

TEST_CASE("more IPUs per replica keep a head mapped back to IPU0 there") {
  const auto path = std::filesystem::path(IPUSIM_BINARY_DIR) / "planner_test_head.json";
  std::ofstream(path) << R"({"include": ")" IPUSIM_SOURCE_DIR
                         R"(/configs/tf1_mnist_2ipu.json",
    "pipeline": {"pipeline_schedule": "sequential", "splits": ["dense128", "logits"],
                 "device_mapping": [0, 1, 0]}})";
  sim::PlanRequest request;
  request.config_path = path.string();
  request.ipus_per_replica = {4};
  request.total_ipus = 8;
  request.top = 1;
  const auto result = sim::plan(request);
  REQUIRE(!result.ranked.empty());
  const auto& c = result.ranked.front();
  CHECK(c.ipus_per_replica == 4);
  CHECK(c.replicas == 2);
  CHECK(c.spec->pipeline.device_mapping() == std::vector<int>{0, 1, 2, 3, 0});
  CHECK(c.spec->hardware.ipus == 8);
  // 7 layers into 5 stages: C(6, 4) splits.
  CHECK(result.evaluated == 15);
}

TEST_CASE("a global batch sets each setting's GAC over micro-batch and replicas") {
  auto request = tf1_request();
  request.schedules = {"sequential"};
  request.micro_batches = {"16", "32"};
  request.ipus_per_replica = {2};
  request.total_ipus = 4;
  request.global_batch = 1024;
  const auto result = sim::plan(request);
  REQUIRE(!result.ranked.empty());
  for (const auto& c : result.ranked) {
    CHECK(c.replicas == 2);
    CHECK(c.micro_batch * c.gac * c.replicas == 1024);
  }
  request.global_batch = 1000;
  request.micro_batches = {"16"};
  std::string message;
  try {
    sim::plan(request);
  } catch (const core::ConfigError& error) {
    message = error.what();
  }
  CHECK(message ==
        "configs/tf1_mnist_2ipu.json: no combination of the values asked for is a "
        "valid config; the first: --ipus-per-replica 2 --schedules sequential "
        "--micro-batch 16: --global-batch 1000 is not a multiple of micro-batch 16 x "
        "2 replica(s)");
}

TEST_CASE("the planner tries each offload and says which it chose") {
  auto request = tf1_request();
  request.schedules = {"grouped"};
  request.offloads = {"none", "weight_update_variables"};
  request.fixed_splits = true;
  const auto result = sim::plan(request);
  REQUIRE(result.ranked.size() == 2);
  std::map<std::string, std::int64_t> peak;
  for (const auto& c : result.ranked) {
    CHECK(c.spec->pipeline.offload_weight_update_variables ==
          (c.offload == "weight_update_variables"));
    peak[c.offload] = c.estimated_peak_max();
    CHECK_THAT(c.key(), Catch::Matchers::EndsWith(" offload=" + c.offload));
  }
  // Offloading moves the optimizer state (Adam: 2 fp32 per parameter) off the chip.
  CHECK(peak.at("none") > peak.at("weight_update_variables"));
}

TEST_CASE("the planner refuses search values it cannot act on, naming the option") {
  const auto message = [](sim::PlanRequest request) {
    try {
      sim::plan(request);
    } catch (const core::ConfigError& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  auto request = tf1_request();
  request.ipus_per_replica = {3};
  CHECK(message(request) ==
        "--ipus-per-replica 3: expected a power of two: multi-IPU devices "
        "come in 1, 2, 4, 8, 16, ... IPUs");
  request = tf1_request();
  request.offloads = {"weight_update_variable"};
  CHECK(message(request) ==
        "--offload weight_update_variable: expected one of 'none', "
        "'weight_update_variables', 'stash_fifos' or 'both'; did you mean "
        "'weight_update_variables'?");
  request = tf1_request();
  request.recomputations = {"none", "recompute_then_backprop"};
  CHECK(message(request) ==
        "--recomputation recompute_then_backprop: expected one of 'none', 'auto', "
        "'recompute_then_backpropagate' or 'recompute_and_backpropagate_interleaved'; did you "
        "mean 'recompute_then_backpropagate'?");
  // The three default schedules count: 3 x 256 x 150 = 115,200 settings.
  request = tf1_request();
  for (int i = 1; i <= 256; ++i)
    request.gacs.push_back(std::to_string(i));
  for (int i = 1; i <= 150; ++i)
    request.micro_batches.push_back(std::to_string(i));
  CHECK(message(request) ==
        "3 --schedules x 256 --gac x 150 --micro-batch (the default schedules): the lists make "
        "115,200 settings, more than the 100,000 plan searches in one run; search fewer values");
  request = tf1_request();
  request.global_batch = 512;
  request.gacs = {"8"};
  CHECK(message(request) ==
        "--global-batch 512: --global-batch sets the gradient accumulation "
        "count; drop --gac or --global-batch");
  request = tf1_request();
  request.ipus_per_replica = {4};
  request.base_overrides = {{"/pipeline/splits", "[\"dense64\"]", "--splits dense64"}};
  CHECK(message(request) ==
        "--ipus-per-replica 4: the split is fixed (--splits or --set "
        "pipeline.splits), and with it the number of stages; leave the split "
        "free to try other IPU counts");
}

TEST_CASE("the shards of a plan search every setting once between them") {
  auto request = tf1_request();
  request.gacs = {"8", "16"};
  const auto whole = sim::plan(request);
  std::size_t settings = 0;
  std::size_t evaluated = 0;
  for (int i = 1; i <= 3; ++i) {
    request.shard = {i, 3};
    const auto part = sim::plan(request);
    settings += part.settings;
    evaluated += part.evaluated;
  }
  CHECK(whole.settings == 6);
  CHECK(settings == 6);
  CHECK(evaluated == whole.evaluated);
}

TEST_CASE(
    "the planner's estimate counts a tied word matrix's copy on another IPU like the replay") {
  // bert_tiny over four stages puts its decoder on IPU3, tied to the 64 x 32 word matrix on
  // IPU0: a copy of the matrix and its accumulator (fp32 each). Untied, the decoder owns the
  // matrix there with Adam's two fp32 moments besides: 2,048 x 8 bytes more.
  const std::vector<std::string> four_stages = {
      "pipeline.splits=[\"encoder2\",\"encoder3\",\"encoder4\"]",
      "pipeline.device_mapping=[0,1,2,3]", "pipeline.gradient_accumulation_count=8",
      "pipeline.pipeline_schedule=\"1f1b\""};
  const auto spec_with = [&](bool tied) {
    std::vector<core::Override> overrides;
    for (const auto& set : four_stages)
      overrides.push_back(core::parse_set_argument(set));
    if (!tied)
      overrides.push_back(core::parse_set_argument("/model/layers/14/tied_to=null"));
    return sim::load_run_spec("configs/bert_tiny_4ipu.json", overrides);
  };
  const auto tied = spec_with(true);
  const auto untied = spec_with(false);
  REQUIRE(tied.model.layers[14].id == "mlm_decoder");
  REQUIRE(untied.model.layers[14].tied_to.empty());
  const std::vector<int> cuts = {tied.model.index_of("encoder2"), tied.model.index_of("encoder3"),
                                 tied.model.index_of("encoder4")};
  sim::PlanCandidate with_copy;
  sim::PlanCandidate owning;
  sim::plan_detail::SplitPricer(tied).estimate(cuts, with_copy);
  sim::plan_detail::SplitPricer(untied).estimate(cuts, owning);
  CHECK(owning.estimated_peak_bytes[3] - with_copy.estimated_peak_bytes[3] == 2048 * 8);
  CHECK(owning.estimated_peak_bytes[0] == with_copy.estimated_peak_bytes[0]);
  const auto replayed = [](const sim::RunSpec& spec) {
    return sim::simulate(spec, {}).replay.ipus[3].peak_memory_bytes;
  };
  CHECK(replayed(untied) - replayed(tied) == 2048 * 8);
}

TEST_CASE("the planner's estimate keeps one replica's shard of sharded optimizer state") {
  // The TF1 MLP split at dense32 on 2 IPUs x 4 replicas with Adam: IPU1 holds dense32 and
  // logits, 64x32+32 + 32x10+10 = 2,410 parameters, whose two fp32 moments take 19,280 bytes;
  // sharded over the 4 replicas each keeps 4,820 bytes of them.
  const auto spec_with = [](bool sharded) {
    return sim::load_run_spec(
        "configs/tf1_mnist_2ipu.json",
        {core::parse_set_argument("pipeline.replication_factor=4"),
         core::parse_set_argument("pipeline.optimizer={\"type\": \"adam\"}"),
         core::parse_set_argument(std::string("pipeline.replicated_optimizer_state_sharding=") +
                                  (sharded ? "true" : "false"))});
  };
  const auto whole = spec_with(false);
  const auto sharded = spec_with(true);
  const std::vector<int> cuts = {whole.model.index_of("dense32")};
  sim::PlanCandidate kept;
  sim::PlanCandidate shard;
  sim::plan_detail::SplitPricer(whole).estimate(cuts, kept);
  sim::plan_detail::SplitPricer(sharded).estimate(cuts, shard);
  CHECK(kept.estimated_peak_bytes[1] - shard.estimated_peak_bytes[1] == 19'280 - 4'820);
  const auto replayed = [](const sim::RunSpec& spec) {
    return sim::simulate(spec, {}).replay.ipus[1].peak_memory_bytes;
  };
  CHECK(replayed(whole) - replayed(sharded) == 19'280 - 4'820);
}

TEST_CASE("a plan keeps the candidates nearest to fitting of those over capacity by the estimate") {
  sim::PlanRequest request;
  request.config_path = "configs/tf1_mnist_2ipu.json";
  request.base_overrides = {core::parse_set_argument("hardware.memory_per_ipu=\"12.3MB\"")};
  request.gacs = {"8", "16", "32"};
  request.jobs = 2;
  const auto result = sim::plan(request);
  CHECK(result.evaluated == 54);
  CHECK(result.over_capacity == 45);
  // The split after dense64 under sequential (one micro-batch held, no FIFO) overflows IPU0 by
  // the least, 273,696 bytes, at every GAC; then the same split under interleaved, whose IPU0
  // holds its FIFO's micro-batches besides. The five kept follow the search's order.
  REQUIRE(result.nearest_over_capacity.size() == 5);
  const auto& nearest = result.nearest_over_capacity.front();
  CHECK(nearest.key() ==
        "splits=[\"dense64\"] schedule=sequential gac=8 micro-batch=32 recomputation=none");
  CHECK(nearest.estimated_peak_bytes.at(0) == 12'300'000 + 273'696);
  CHECK(result.nearest_over_capacity.back().key() ==
        "splits=[\"dense64\"] schedule=interleaved gac=16 micro-batch=32 recomputation=none");
  const auto html = sim::render_plan_html(result);
  CHECK(html.find("<p>45 of the 54 candidates evaluated on the cost model were over capacity by "
                  "the estimate") != std::string::npos);
  CHECK(html.find("schedule=sequential gac=8 micro-batch=32 recomputation=none</td><td "
                  "class=\"text\">IPU0</td><td>12.57 MB of 12.30 MB</td><td>273,696</td></tr>") !=
        std::string::npos);
}

TEST_CASE("a plan keeps the first 64 reasons it skips settings for and counts the rest") {
  // The 71 odd GACs from 1 to 141 are each refused by the grouped schedule's rule (a multiple
  // of 4 for 2 stages), each with its own text, since the text names the GAC.
  sim::PlanRequest request;
  request.config_path = "configs/tf1_mnist_2ipu.json";
  request.schedules = {"grouped"};
  request.gacs = {"8"};
  for (int gac = 1; gac <= 141; gac += 2)
    request.gacs.push_back(std::to_string(gac));
  request.jobs = 2;
  const auto result = sim::plan(request);
  CHECK(result.skipped_settings() == 71);
  REQUIRE(result.skipped.size() == 64);
  CHECK(result.skipped.front().first_label == "--schedules grouped --gac 1");
  CHECK(result.skipped.back().first_label == "--schedules grouped --gac 127");
  CHECK(result.skipped_for_other_reasons == 7);
  const auto text = sim::render_plan(result);
  CHECK(text.find("\nskipped: 7 other setting(s) for reasons past the first 64 listed\n") !=
        std::string::npos);
}
