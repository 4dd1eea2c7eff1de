#include "models/kernels/init.hpp"

#include <algorithm>
#include <cmath>

#include <catch2/catch.hpp>

using namespace ipusim::models;

TEST_CASE("random streams come from std::mt19937_64's standard-mandated bits") {
  Rng rng(5489);  // the engine's default seed: its first output is fixed by the C++ standard
  CHECK(rng.bits() == 14514284786278117030ull);
  Rng uniform(1);
  for (int i = 0; i < 1000; ++i) {
    const double u = uniform.uniform();
    CHECK((u >= 0.0 && u < 1.0));
  }
}

TEST_CASE("derived seeds differ for different keys and repeat for the same key") {
  CHECK(derive_seed(1, std::string_view("dense1")) == derive_seed(1, std::string_view("dense1")));
  CHECK(derive_seed(1, std::string_view("dense1")) != derive_seed(1, std::string_view("dense2")));
  CHECK(derive_seed(1, std::uint64_t{0}) != derive_seed(2, std::uint64_t{0}));
  CHECK(derive_seed(1, std::uint64_t{0}) != derive_seed(1, std::uint64_t{1}));
}

TEST_CASE("bounded draws cover the range without leaving it") {
  Rng rng(9);
  std::vector<int> seen(7, 0);
  for (int i = 0; i < 7000; ++i)
    ++seen[rng.below(7)];
  CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n > 850 && n < 1150; }));
}

TEST_CASE("normal draws have mean 0 and variance 1") {
  Rng rng(11);
  double sum = 0;
  double squares = 0;
  constexpr int kDraws = 20000;
  for (int i = 0; i < kDraws; ++i) {
    const double x = rng.normal();
    sum += x;
    squares += x * x;
  }
  CHECK(std::abs(sum / kDraws) < 0.03);
  CHECK(std::abs(squares / kDraws - 1.0) < 0.03);
}

TEST_CASE("weights are Glorot-uniform and biases zero, keyed by seed and layer id") {
  const std::vector<ParameterSpec> specs{{ParameterSpec::Role::kWeight, {784, 128}, 784, 128},
                                         {ParameterSpec::Role::kBias, {128}, 784, 128}};
  const std::vector<Tensor> params = initial_parameters(specs, 42, "dense1", DType::kFp32);
  REQUIRE(params.size() == 2);
  const float limit = static_cast<float>(std::sqrt(6.0 / (784 + 128)));  // 0.0811
  const auto [low, high] =
      std::minmax_element(params[0].values().begin(), params[0].values().end());
  CHECK(*low >= -limit);
  CHECK(*high <= limit);
  CHECK(*low < -0.99f * limit);
  CHECK(*high > 0.99f * limit);
  CHECK(std::all_of(params[1].values().begin(), params[1].values().end(),
                    [](float b) { return b == 0.0f; }));
  CHECK(bit_identical(initial_parameters(specs, 42, "dense1", DType::kFp32)[0], params[0]));
  CHECK_FALSE(bit_identical(initial_parameters(specs, 42, "dense2", DType::kFp32)[0], params[0]));
  CHECK_FALSE(bit_identical(initial_parameters(specs, 43, "dense1", DType::kFp32)[0], params[0]));
}

TEST_CASE("fp16 initial weights are binary16 values") {
  const std::vector<ParameterSpec> specs{{ParameterSpec::Role::kWeight, {16, 16}, 16, 16}};
  const Tensor w = initial_parameters(specs, 1, "w", DType::kFp16)[0];
  CHECK(std::all_of(w.values().begin(), w.values().end(),
                    [](float v) { return round_to_fp16(v) == v; }));
}
