// ipusim plan on a model of encoder halves: it searches the splits between an attention half
// and its FFN half, and its per-IPU column counts the two halves apart.

#include <catch2/catch.hpp>

#include "sim/sweep/planner.hpp"
#include "tests/sim/bert_tiny_halves.hpp"

using namespace ipusim;

TEST_CASE("plan searches the splits between encoder halves and counts each half per IPU") {
  sim::PlanRequest request;
  request.config_path = testing::bert_tiny_variant("sweep_tests", "halves.json", true);
  request.schedules = {"grouped"};
  request.top = 2;
  request.jobs = 2;
  const auto result = sim::plan(request);
  // 20 layers, five stages: every choice of 4 of the 19 places between two layers.
  CHECK(result.evaluated == 3876);
  const std::string table = sim::render_plan(result);
  CHECK(table.find("Rank    attention/FFN halves per IPU") != std::string::npos);

  request.base_overrides = {core::parse_set_argument(
      R"(pipeline.splits=["encoder2_ffn","encoder3_ffn","encoder4_ffn","mlm_transform"])")};
  request.fixed_splits = true;
  const auto fixed = sim::plan(request);
  REQUIRE_FALSE(fixed.ranked.empty());
  CHECK(fixed.ranked.front().key().rfind(
            R"(splits=["encoder2_ffn","encoder3_ffn","encoder4_ffn","mlm_transform"])", 0) == 0);
  // IPU0: embeddings, encoder1 and encoder2's attention half, then the head; IPUs 1-3 each an
  // FFN half and the next attention half, the last FFN half alone.
  CHECK(sim::render_plan(fixed).find("#1      2/1+head,1/1,1/1,0/1") != std::string::npos);
}
