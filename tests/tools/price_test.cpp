// `ipusim price`: one operation's plan and cycles, and the errors of its arguments.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/tools/cli_support.hpp"

namespace {

using namespace ipusim::testing;

TEST_CASE("price matmul prints each pass's plan and writes it as JSON") {
  const std::string json = scratch("price.json");
  const auto result = run_ipusim({"price", "matmul", "1472x16x16", "--json", json});
  REQUIRE(result.code == 0);
  CHECK(result.out.rfind("matmul [1472, 16] x [16, 16], fp16 (fp32 partials) on a bow IPU, "
                         "available_memory_proportion 0.60\n",
                         0) == 0);
  const auto plan = nlohmann::json::parse(read_file(json));
  REQUIRE(plan["passes"].size() == 3);
  const auto& forward = plan["passes"][0];
  // One row a tile: the 256 weights come to each tile at 4 bytes a cycle, the inputs are there.
  CHECK(forward["split"]["field"] == 1472);
  CHECK(forward["cycles"]["input_exchange"] == 0);
  CHECK(forward["cycles"]["weight_exchange"] == 128);
  CHECK(forward["vertex"] == "AMP 1x1");
  CHECK(forward["macs"] == 1472.0 * 16 * 16);
}

TEST_CASE("price vector lists the compute sets of a norm forward and backward") {
  const auto result = run_ipusim({"price", "vector", "layer_norm", "2048x64"});
  REQUIRE(result.code == 0);
  CHECK(result.out.find("forward: 7 compute sets") != std::string::npos);
  // 13 steps, the gradients of scale and shift each with a second stage: they reduce over the
  // 2048 rows, which span the tiles.
  CHECK(result.out.find("backward: 15 compute sets") != std::string::npos);
}

TEST_CASE("price names a malformed shape, groups that do not divide, and a misspelt operation") {
  auto result = run_ipusim({"price", "matmul", "512x"});
  CHECK(result.code == 1);
  CHECK(result.err ==
        "error: shape: expected MxKxN, integers from 1 to 1073741824 joined by 'x', found "
        "'512x'\n");
  result =
      run_ipusim({"price", "conv", "--field", "8x8", "--in", "6", "--out", "4", "--groups", "4"});
  CHECK(result.code == 1);
  CHECK(result.err ==
        "error: --groups: expected a number of groups dividing --in 6 and --out 4, found 4\n");
  result = run_ipusim({"price", "vector", "layernorm", "4x4"});
  CHECK(result.code == 1);
  CHECK(result.err.find("found 'layernorm'; did you mean 'layer_norm'?") != std::string::npos);
}

}  // namespace

TEST_CASE("run --ops shows each operation's plan under planned pricing, and only then") {
  const auto planned = run_ipusim({"run", "configs/tf1_mnist_2ipu.json", "--no-numeric", "--ops",
                                   "--set", "hardware.operations.pricing=planned"});
  REQUIRE(planned.code == 0);
  CHECK_THAT(planned.out, Catch::Contains("Plan (g/f/i/o)"));
  CHECK_THAT(planned.out, Catch::Contains("AMP 1x1 "));
  const auto fitted = run_ipusim({"run", "configs/tf1_mnist_2ipu.json", "--no-numeric", "--ops",
                                  "--set", "hardware.operations.pricing=fitted"});
  REQUIRE(fitted.code == 0);
  CHECK_THAT(fitted.out, !Catch::Contains("Plan (g/f/i/o)"));
}

TEST_CASE("price refuses what it cannot count, and a tall field is priced by its rows' runs") {
  auto result = run_ipusim({"price", "matmul", "1073741824x1073741824x1073741824"});
  CHECK(result.code == 1);
  // 2 x 2^90 = 2.48e27 FLOPs, in si's largest prefix, P.
  CHECK(result.err ==
        "error: shape: the operation computes 2.48e+12 PFLOP a pass, more than the 2^60 (1.15 "
        "EFLOP) ipusim prices\n");
  result = run_ipusim({"price", "matmul", "64x64x64", "--dtype", "fp32", "--partials", "fp16"});
  CHECK(result.code == 1);
  CHECK(result.err ==
        "error: --partials: fp32 inputs take fp32 partials (poplin forces them), found fp16\n");
  // A million rows of one position: each worker's rows are one run, so the search stays quick.
  result = run_ipusim(
      {"price", "conv", "--field", "1048576x1", "--kernel", "3x1", "--in", "16", "--out", "16"});
  CHECK(result.code == 0);
}
