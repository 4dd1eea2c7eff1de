// What plan keeps of its replayed candidates: the best --top, the CSV rows of all of them, and
// the page's points.

#include <catch2/catch.hpp>
#include <regex>
#include <sstream>

#include "sim/sweep/planner.hpp"

namespace {

using namespace ipusim;

sim::PlanRequest keep_test_request(std::vector<std::string> gacs,
                                   std::vector<std::string> micro_batches) {
  sim::PlanRequest request;
  request.config_path = "configs/tf1_mnist_2ipu.json";
  request.gacs = std::move(gacs);
  request.micro_batches = std::move(micro_batches);
  request.jobs = 1;
  return request;
}

// The plan's CSV lines after the header.
std::vector<std::string> keep_test_rows(const std::string& csv) {
  std::vector<std::string> rows;
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line))
    rows.push_back(line);
  return rows;
}

}  // namespace

TEST_CASE("plan keeps the best top candidates and counts every one it replayed") {
  auto request = keep_test_request({"8", "16"}, {"16", "32"});
  request.top = 3;
  const auto result = sim::plan(request);
  // 2 GAC values x 2 micro-batches x 3 schedules x 6 splits of 7 layers, all valid.
  CHECK(result.replayed == 72);
  CHECK(result.ranked.size() == 3);
  auto all = request;
  all.top = 1000;
  const auto every = sim::plan(all);
  REQUIRE(every.ranked.size() == 72);
  for (std::size_t i = 0; i < 3; ++i)
    CHECK(result.ranked[i].key() == every.ranked[i].key());
}

TEST_CASE("the CSV streamed from the scratch file is every candidate ranked in memory") {
  auto request = keep_test_request({"8", "16"}, {"16", "32"});
  request.keep_rows = true;
  const auto streamed = sim::plan_csv(sim::plan(request));
  request.keep_rows = false;
  request.top = 1000;  // all 72 held in `ranked`, written without the ledger
  const auto in_memory = sim::plan_csv(sim::plan(request));
  CHECK(streamed == in_memory);
  const auto rows = keep_test_rows(streamed);
  REQUIRE(rows.size() == 72);
  // The best: split after dense128, grouped, GAC 16, micro-batch 32 on the config's 2 IPUs; the
  // worst: after dense256, sequential, GAC 8, micro-batch 16.
  CHECK(rows.front().rfind("1,\"[\"\"dense128\"\"]\",2,1,\"[0,1]\",2,grouped,16,32,none,none,",
                           0) == 0);
  CHECK(rows.back().rfind("72,\"[\"\"dense256\"\"]\",2,1,\"[0,1]\",2,sequential,8,16,none,none,",
                          0) == 0);
}

TEST_CASE("plan ranks the same whatever the number of jobs") {
  auto request = keep_test_request({"8", "16", "24"}, {"8", "16", "32"});
  request.keep_rows = true;
  const auto one = sim::plan(request);
  request.jobs = 3;
  const auto three = sim::plan(request);
  CHECK(sim::render_plan(one) == sim::render_plan(three));
  CHECK(sim::plan_csv(one) == sim::plan_csv(three));
}

TEST_CASE("a plan page of many candidates says how many of how many it draws") {
  std::vector<std::string> gacs;
  for (int gac = 8; gac <= 80; gac += 8)
    gacs.push_back(std::to_string(gac));
  std::vector<std::string> micro_batches;
  for (int m = 1; m <= 40; ++m)
    micro_batches.push_back(std::to_string(m));
  auto request = keep_test_request(gacs, micro_batches);
  request.keep_points = true;
  request.jobs = 2;
  const auto result = sim::plan(request);
  // 10 GAC values x 40 micro-batches x 3 schedules x 6 splits.
  REQUIRE(result.replayed == 7200);
  const auto html = sim::render_plan_html(result);
  const std::regex note(
      "<p>([0-9,]+) of the 7,200 replayed candidates are drawn: the Pareto front, the best 5, the "
      "extremes of each axis and an even sample in the search&#39;s order \\(every replayed "
      "candidate is in the --csv file\\)\\.");
  std::smatch drawn;
  REQUIRE(std::regex_search(html, drawn, note));
  // Every 4th of 7,200 (the sample halves past 2,000 twice) plus the front, the best and the
  // extremes, some of which the sample already holds.
  const int count = std::stoi(std::regex_replace(drawn[1].str(), std::regex(","), ""));
  CHECK(count >= 1800);
  CHECK(count <= 1800 + 5 + 3 + 1000);
  // One ranked table row per point drawn.
  std::size_t rows = 0;
  for (auto at = html.find("<tr><td class=\"text\">#"); at != std::string::npos;
       at = html.find("<tr><td class=\"text\">#", at + 1))
    ++rows;
  CHECK(rows == std::size_t(count));
  CHECK(html.find("#1 splits=") != std::string::npos);
}
