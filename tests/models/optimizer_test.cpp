#include "models/kernels/optimizer.hpp"

#include <catch2/catch.hpp>

using namespace ipusim::models;

namespace {

using Kind = OptimizerConfig::Kind;

// One parameter tensor [1, -2] with gradient [0.5, 0.25], stepped `steps` times.
Tensor step(const OptimizerConfig& config, int steps) {
  const Optimizer optimizer(config);
  Tensor weights({2}, std::vector<float>{1.0f, -2.0f});
  const Tensor gradient({2}, std::vector<float>{0.5f, 0.25f});
  OptimizerState state = optimizer.initial_state(weights.shape());
  for (int i = 0; i < steps; ++i)
    optimizer.apply(weights, gradient, state);
  return weights;
}

}  // namespace

TEST_CASE("optimizers keep 0, 1 and 2 state tensors per parameter") {
  CHECK(state_elements_per_parameter(Kind::kSgd) == 0);
  CHECK(state_elements_per_parameter(Kind::kMomentum) == 1);
  CHECK(state_elements_per_parameter(Kind::kAdam) == 2);
  const Optimizer adam({.kind = Kind::kAdam, .learning_rate = 0.001});
  CHECK(adam.initial_state({3, 4}).slots.size() == 2);
  CHECK(adam.initial_state({3, 4}).slots[1].shape() == Shape{3, 4});
}

TEST_CASE("one SGD step subtracts the learning rate times the gradient") {
  const Tensor w = step({.kind = Kind::kSgd, .learning_rate = 0.1}, 1);
  CHECK(w[0] == 0.95f);
  CHECK(w[1] == -2.025f);
}

TEST_CASE("momentum follows Keras: v = momentum v - lr g, w += v") {
  const OptimizerConfig config{.kind = Kind::kMomentum, .learning_rate = 0.1, .momentum = 0.9};
  const Tensor once = step(config, 1);
  CHECK(once[0] == 0.95f);
  CHECK(once[1] == -2.025f);
  const Tensor twice = step(config, 2);
  CHECK(twice[0] == 0.855f);  // v = -0.095
  CHECK(twice[1] == -2.0725f);
}

TEST_CASE("one Adam step moves each weight by about the learning rate, as Keras does") {
  SECTION("with bias correction") {
    const Tensor w = step({.kind = Kind::kAdam, .learning_rate = 0.001}, 1);
    CHECK(w[0] == 0.99900001f);
    CHECK(w[1] == -2.001f);
  }
  SECTION("without bias correction the step is lr m / (sqrt(v) + epsilon)") {
    const Tensor w =
        step({.kind = Kind::kAdam, .learning_rate = 0.001, .bias_correction = false}, 1);
    CHECK(w[0] == 0.99683774f);
    CHECK(w[1] == -2.00316215f);
  }
}

TEST_CASE("Adam keeps the moments and the step count in its state") {
  const Optimizer optimizer({.kind = Kind::kAdam, .learning_rate = 0.001});
  Tensor w({1}, 1.0f);
  OptimizerState state = optimizer.initial_state(w.shape());
  optimizer.apply(w, Tensor({1}, 0.5f), state);
  CHECK(state.steps == 1);
  CHECK(state.slots[0][0] == 0.05f);     // m = (1 - beta1) g
  CHECK(state.slots[1][0] == 0.00025f);  // v = (1 - beta2) g^2
}

TEST_CASE("fp16 weights are rounded after the update") {
  const Optimizer optimizer({.kind = Kind::kSgd, .learning_rate = 0.1}, DType::kFp16);
  Tensor w({1}, 1.0f);
  OptimizerState state = optimizer.initial_state(w.shape());
  optimizer.apply(w, Tensor({1}, 0.001f), state);  // 0.9999 is not a half
  CHECK(w[0] == 1.0f);
}

TEST_CASE("a mean accumulator divides the sum of the micro-batch gradients by their count") {
  GradientAccumulator mean({2}, DType::kFp32, GradientReduction::kMean);
  GradientAccumulator sum({2}, DType::kFp32, GradientReduction::kSum);
  for (const float g : {1.0f, 2.0f, 4.5f}) {
    const std::vector<float> gradient{g, -g};
    mean.add(gradient);
    sum.add(gradient);
  }
  CHECK(mean.count() == 3);
  CHECK(mean.result()[0] == 2.5f);
  CHECK(mean.result()[1] == -2.5f);
  CHECK(sum.result()[0] == 7.5f);
  mean.reset();
  CHECK(mean.count() == 0);
  CHECK(mean.sum()[0] == 0.0f);
}

TEST_CASE("an fp16 accumulator rounds after every add, so small gradients can vanish") {
  GradientAccumulator fp16({1}, DType::kFp16, GradientReduction::kSum);
  GradientAccumulator fp32({1}, DType::kFp32, GradientReduction::kSum);
  const std::vector<float> one{1.0f};
  const std::vector<float> tiny{0x1.0p-11f};  // half an fp16 ulp at 1
  fp16.add(one);
  fp32.add(one);
  for (int i = 0; i < 4; ++i) {
    fp16.add(tiny);
    fp32.add(tiny);
  }
  CHECK(fp16.result()[0] == 1.0f);
  CHECK(fp32.result()[0] == 1.001953125f);
}

TEST_CASE("LAMB keeps two moments, in the dtypes it is given") {
  CHECK(state_elements_per_parameter(Kind::kLamb) == 2);
  CHECK(state_bytes_per_parameter({.kind = Kind::kLamb}, DType::kFp32) == 8);
  CHECK(state_bytes_per_parameter({.kind = Kind::kLamb, .m_dtype = DType::kFp16}, DType::kFp32) ==
        6);
  CHECK(state_bytes_per_parameter(
            {.kind = Kind::kAdam, .m_dtype = DType::kFp16, .v_dtype = DType::kFp16},
            DType::kFp32) == 4);
  CHECK(state_bytes_per_parameter({.kind = Kind::kMomentum}, DType::kFp32) == 4);
  CHECK(state_bytes_per_parameter({.kind = Kind::kMomentum}, DType::kFp16) == 2);  // 16.16
  CHECK(state_bytes_per_parameter({.kind = Kind::kSgd}, DType::kFp32) == 0);
}

TEST_CASE("LAMB decays weights and embeddings, not biases and normalisation parameters") {
  CHECK(takes_weight_decay(ParameterSpec::Role::kWeight));
  CHECK(takes_weight_decay(ParameterSpec::Role::kEmbedding));
  CHECK_FALSE(takes_weight_decay(ParameterSpec::Role::kBias));
  CHECK_FALSE(takes_weight_decay(ParameterSpec::Role::kScale));
  CHECK_FALSE(takes_weight_decay(ParameterSpec::Role::kTable));
  CHECK_FALSE(takes_weight_decay(ParameterSpec::Role::kToken));
}

// w = [3, 4] (norm 5), g = [0.5, -0.5]. At step 1 the bias-corrected moments are m = g and
// v = g^2, so m / (sqrt(v) + epsilon) = g / (|g| + 0.5) = [0.5, -0.5] with epsilon 0.5.
TEST_CASE("one LAMB step scales the decayed Adam update by the trust ratio ||w|| / ||u||") {
  const OptimizerConfig config{
      .kind = Kind::kLamb, .learning_rate = 0.01, .epsilon = 0.5, .weight_decay = 0.1};
  const Optimizer optimizer(config);
  const Tensor gradient({2}, std::vector<float>{0.5f, -0.5f});
  SECTION("a weight: u = [0.5, -0.5] + 0.1 [3, 4] = [0.8, -0.1], ratio 5 / sqrt(0.65)") {
    Tensor w({2}, std::vector<float>{3.0f, 4.0f});
    OptimizerState state = optimizer.initial_state(w.shape());
    optimizer.apply(w, gradient, state);
    CHECK(w[0] == 2.95038605f);  // 3 - 0.01 x 6.2017367 x 0.8
    CHECK(w[1] == 4.00620174f);  // 4 + 0.01 x 6.2017367 x 0.1
  }
  SECTION("a bias is not decayed: u = [0.5, -0.5], ratio 5 / sqrt(0.5)") {
    Tensor w({2}, std::vector<float>{3.0f, 4.0f});
    OptimizerState state = optimizer.initial_state(w.shape(), false);
    optimizer.apply(w, gradient, state);
    CHECK(w[0] == 2.96464467f);  // 3 - 0.01 x 7.0710678 x 0.5
    CHECK(w[1] == 4.03535557f);
  }
  SECTION("a tensor of norm 0 (a bias at its start) takes the ratio 1") {
    Tensor w({2}, 0.0f);
    OptimizerState state = optimizer.initial_state(w.shape(), false);
    optimizer.apply(w, gradient, state);
    CHECK(w[0] == -0.005f);
    CHECK(w[1] == 0.005f);
  }
}

TEST_CASE("LAMB without bias correction uses the raw moments, as PopART's LambNoBias does") {
  // m = 0.1 g, v = 0.001 g^2: m / (sqrt(v) + 0.5) = ±0.05 / (0.0158114 + 0.5) = ±0.0969347;
  // u = [0.3969347, 0.3030653], ratio 5 / 0.4994054 = 10.0119068.
  const Optimizer optimizer({.kind = Kind::kLamb,
                             .learning_rate = 0.01,
                             .epsilon = 0.5,
                             .bias_correction = false,
                             .weight_decay = 0.1});
  Tensor w({2}, std::vector<float>{3.0f, 4.0f});
  OptimizerState state = optimizer.initial_state(w.shape());
  optimizer.apply(w, Tensor({2}, std::vector<float>{0.5f, -0.5f}), state);
  CHECK(w[0] == 2.96025920f);
  CHECK(w[1] == 3.96965742f);
}

TEST_CASE("moments kept in fp16 are rounded to binary16 after every update") {
  const Optimizer optimizer({.kind = Kind::kAdam, .learning_rate = 0.001, .m_dtype = DType::kFp16});
  Tensor w({1}, 1.0f);
  OptimizerState state = optimizer.initial_state(w.shape());
  optimizer.apply(w, Tensor({1}, 0.5f), state);
  CHECK(state.slots[0][0] == 0.04998779296875f);  // 0.05, the nearest half below
  CHECK(state.slots[1][0] == 0.00025f);           // v stays fp32
}

// w = [3, 4] (norm 5), g = [0.4, -0.3] (norm 0.5), eta 0.1, weight decay 0.1, epsilon 0: the
// trust ratio is 0.1 x 5 / (0.5 + 0.1 x 5) = 0.5, g + 0.1 w = [0.7, 0.1].
TEST_CASE("one LARS step scales the decayed gradient by eta ||w|| / (||g|| + decay ||w||)") {
  const Optimizer optimizer({.kind = Kind::kLars,
                             .learning_rate = 0.1,
                             .momentum = 0.9,
                             .epsilon = 0,
                             .weight_decay = 0.1,
                             .eta = 0.1});
  const Tensor gradient({2}, std::vector<float>{0.4f, -0.3f});
  SECTION("a weight: v = 0.1 x 0.5 x [0.7, 0.1], then a second step with momentum") {
    Tensor w({2}, std::vector<float>{3.0f, 4.0f});
    OptimizerState state = optimizer.initial_state(w.shape());
    optimizer.apply(w, gradient, state);
    CHECK(state.slots[0][0] == Approx(0.035).epsilon(1e-6));
    CHECK(state.slots[0][1] == Approx(0.005).epsilon(1e-6));
    CHECK(w[0] == 2.965f);
    CHECK(w[1] == 3.995f);
    // ||w|| = sqrt(24.75125) = 4.975063; ratio 0.4975063 / 0.9975063 = 0.4987500;
    // v = 0.9 x [0.035, 0.005] + 0.0498750 x [0.6965, 0.0995] = [0.0662379, 0.0094626].
    optimizer.apply(w, gradient, state);
    CHECK(w[0] == Approx(2.965 - 0.0662379).epsilon(1e-6));
    CHECK(w[1] == Approx(3.995 - 0.0094626).epsilon(1e-6));
  }
  SECTION("a bias is excluded: no trust ratio and no decay, v = 0.1 g") {
    Tensor w({2}, std::vector<float>{3.0f, 4.0f});
    OptimizerState state = optimizer.initial_state(w.shape(), false);
    optimizer.apply(w, gradient, state);
    CHECK(w[0] == 2.96f);
    CHECK(w[1] == 4.03f);
  }
  SECTION("a tensor of norm 0 takes the ratio 1") {
    Tensor w({2}, 0.0f);
    OptimizerState state = optimizer.initial_state(w.shape());
    optimizer.apply(w, gradient, state);
    CHECK(w[0] == Approx(-0.04).epsilon(1e-6));
    CHECK(w[1] == Approx(0.03).epsilon(1e-6));
  }
  CHECK(state_elements_per_parameter(Kind::kLars) == 1);
  CHECK(state_bytes_per_parameter({.kind = Kind::kLars}, DType::kFp32) == 4);
  CHECK(state_bytes_per_parameter({.kind = Kind::kLars}, DType::kFp16) == 2);
}
