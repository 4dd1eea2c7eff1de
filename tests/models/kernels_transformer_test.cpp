// The kernels of normalisation and transformer layers: layer_norm, batch_norm, softmax, tanh,
// attention, embedding and transformer_encoder.

#include <cmath>
#include <numeric>

#include <catch2/catch.hpp>

#include "models/kernels/kernels.hpp"
#include "models/layers/layer_info.hpp"
#include "models/layers/layer_types.hpp"
#include "models/layers/operations.hpp"
#include "sim/core/error.hpp"
#include "tests/models/kernels_test_support.hpp"

using namespace ipusim::models;
using namespace ipusim::models::testing;

namespace {

Layer layer_norm(double epsilon = kLayerNormEpsilon) {
  Layer layer = make_layer(LayerType::kLayerNorm, "norm");
  layer.params.epsilon = epsilon;
  return layer;
}

Layer batch_norm(double momentum = kBatchNormMomentum) {
  Layer layer = make_layer(LayerType::kBatchNorm, "bn");
  layer.params.epsilon = kBatchNormEpsilon;
  layer.params.momentum = momentum;
  return layer;
}

Layer attention(std::int64_t heads, double rate = 0.0) {
  Layer layer = make_layer(LayerType::kAttention, "attention");
  layer.params.heads = heads;
  layer.params.rate = rate;
  return layer;
}

Layer embedding(std::int64_t vocab, std::int64_t hidden, std::int64_t sequence,
                std::int64_t types = 0) {
  Layer layer = make_layer(LayerType::kEmbedding, "emb");
  layer.params.vocab_size = vocab;
  layer.params.hidden = hidden;
  layer.params.sequence_length = sequence;
  layer.params.max_positions = sequence + 1;
  layer.params.token_types = types;
  layer.params.epsilon = kBertLayerNormEpsilon;
  layer.pointer = "/model/layers/0";
  layer.file = "model.json";
  return layer;
}

Layer encoder(std::int64_t sequence, std::int64_t hidden, std::int64_t heads, std::int64_t ffn,
              double rate) {
  return transformer(LayerType::kTransformerEncoder, sequence, hidden, heads, ffn, rate);
}

Tensor values(Shape shape, std::vector<float> numbers) {
  return Tensor(std::move(shape), numbers);
}

std::vector<Tensor> random_parameters(const Kernel& kernel, std::uint64_t seed) {
  std::vector<Tensor> params;
  for (const ParameterSpec& spec : kernel.parameters())
    params.push_back(random_tensor(spec.shape, seed + params.size()));
  return params;
}

Shape with_batch_shape(std::int64_t batch, const Shape& sample) {
  Shape shape{batch};
  shape.insert(shape.end(), sample.begin(), sample.end());
  return shape;
}

bool all_fp16(const Tensor& tensor) {
  return std::all_of(tensor.values().begin(), tensor.values().end(),
                     [](float v) { return round_to_fp16(v) == v; });
}

}  // namespace

TEST_CASE("layer norm gradients match central differences") {
  check_gradients(layer_norm(), {random_tensor({2, 5}, 1)});
  check_gradients(layer_norm(1e-3), {random_tensor({2, 3, 4}, 2)});
}

TEST_CASE("a layer norm's rows have mean 0 and variance 1 before its scale and bias") {
  const auto kernel = kernel_for(layer_norm(1e-12), {{3, 6}});
  const Tensor x = random_tensor({2, 3, 6}, 3);
  const std::vector<Tensor> params{Tensor({6}, 1.0f), Tensor({6}, 0.0f)};
  const Tensor y = kernel->forward({&x}, params, {}).output;
  for (std::int64_t row = 0; row < 6; ++row) {
    double mean = 0;
    double square = 0;
    for (std::int64_t j = 0; j < 6; ++j) {
      mean += y[row * 6 + j] / 6.0;
      square += double(y[row * 6 + j]) * y[row * 6 + j] / 6.0;
    }
    CHECK(std::abs(mean) < 1e-6);
    CHECK(std::abs(square - mean * mean - 1.0) < 1e-5);
  }
}

TEST_CASE("a layer norm scales and shifts the normalised row") {
  const auto kernel = kernel_for(layer_norm(1e-12), {{2}});
  const Tensor x = values({1, 2}, {1, 3});
  const std::vector<Tensor> params{values({2}, {2, 3}), values({2}, {10, 20})};
  const Tensor y = kernel->forward({&x}, params, {}).output;
  CHECK(y[0] == 8.0f);   // x̂ = -1: 2 x -1 + 10
  CHECK(y[1] == 23.0f);  // x̂ = +1: 3 x 1 + 20
}

TEST_CASE("softmax and tanh gradients match central differences") {
  check_gradients(make_layer(LayerType::kSoftmax), {random_tensor({2, 3, 4}, 4)});
  check_gradients(make_layer(LayerType::kTanh), {random_tensor({2, 7}, 5)});
}

TEST_CASE("softmax rows sum to 1 and keep the order of their logits") {
  const auto kernel = kernel_for(make_layer(LayerType::kSoftmax), {{4, 5}});
  const Tensor x = random_tensor({3, 4, 5}, 6);
  const Tensor y = kernel->forward({&x}, {}, {}).output;
  for (std::int64_t row = 0; row < 12; ++row) {
    double sum = 0;
    for (std::int64_t j = 0; j < 5; ++j)
      sum += y[row * 5 + j];
    CHECK(std::abs(sum - 1.0) < 1e-6);
    for (std::int64_t j = 1; j < 5; ++j)
      CHECK((x[row * 5 + j] > x[row * 5]) == (y[row * 5 + j] > y[row * 5]));
  }
  const Tensor t = kernel_for(make_layer(LayerType::kTanh), {{4, 5}})->forward({&x}, {}, {}).output;
  CHECK(t.shape() == x.shape());
  CHECK(t[0] == std::tanh(x[0]));
}

TEST_CASE("batch norm gradients match central differences") {
  check_gradients(batch_norm(), {random_tensor({3, 4}, 7)});
  check_gradients(batch_norm(), {random_tensor({2, 3, 2}, 8)});
}

TEST_CASE("batch norm normalises each channel over the micro-batch") {
  const auto kernel = kernel_for(batch_norm(), {{2}});
  const Tensor x = values({2, 2}, {1, 10, 3, 30});
  const std::vector<Tensor> params{Tensor({2}, 1.0f), Tensor({2}, 0.0f)};
  const ForwardResult result = kernel->forward({&x}, params, {});
  // Channel 0: mean 2, variance 1; channel 1: mean 20, variance 100.
  CHECK(result.statistics[0][0] == 2.0f);
  CHECK(result.statistics[0][1] == 20.0f);
  CHECK(result.statistics[1][0] == 1.0f);
  CHECK(result.statistics[1][1] == 100.0f);
  CHECK(std::abs(result.output[0] + 1.0f / std::sqrt(1.0f + 1e-3f)) < 1e-6);
  CHECK(std::abs(result.output[3] - 10.0f / std::sqrt(100.0f + 1e-3f)) < 1e-6);
}

TEST_CASE("batch norm's running statistics after two micro-batches follow the momentum rule") {
  const auto kernel = kernel_for(batch_norm(0.9), {{1}});
  std::vector<Tensor> running = kernel->initial_running_statistics();
  REQUIRE(running.size() == 2);
  CHECK(running[0][0] == 0.0f);
  CHECK(running[1][0] == 1.0f);
  const std::vector<Tensor> params{Tensor({1}, 1.0f), Tensor({1}, 0.0f)};
  const Tensor first = values({2, 1}, {1, 3});   // mean 2, variance 1
  const Tensor second = values({2, 1}, {4, 8});  // mean 6, variance 4
  for (const Tensor* batch : {&first, &second})
    kernel->update_running_statistics(running, kernel->forward({batch}, params, {}).statistics);
  // mean: 0.9 (0.9 x 0 + 0.1 x 2) + 0.1 x 6; variance: 0.9 (0.9 x 1 + 0.1 x 1) + 0.1 x 4.
  CHECK(std::abs(running[0][0] - 0.78f) < 1e-6);
  CHECK(std::abs(running[1][0] - 1.3f) < 1e-6);
  // Inference normalises with the running statistics.
  ForwardContext context;
  context.inference = true;
  context.running = running;
  const Tensor y = kernel->forward({&first}, params, context).output;
  CHECK(std::abs(y[0] - (1.0f - 0.78f) / std::sqrt(1.3f + 1e-3f)) < 1e-6);
}

TEST_CASE("attention gradients match central differences with a mask and with dropout") {
  check_gradients(attention(2), {random_tensor({2, 3, 4}, 9)});
  check_gradients(attention(1, 0.3), {random_tensor({2, 3, 4}, 10)});
  const Tensor mask = values({2, 3}, {1, 1, 0, 1, 0, 1});
  check_gradients(attention(2), {random_tensor({2, 3, 4}, 11), mask}, {}, 1);
}

TEST_CASE("one-head attention with identity weights is softmax(x xT / sqrt(h)) x") {
  const auto kernel = kernel_for(attention(1), {{2, 2}});
  std::vector<Tensor> params;
  for (int i = 0; i < 4; ++i) {
    params.push_back(values({2, 2}, {1, 0, 0, 1}));
    params.push_back(Tensor({2}, 0.0f));
  }
  const Tensor x = values({1, 2, 2}, {1, 0, 0, 2});
  const Tensor y = kernel->forward({&x}, params, {}).output;
  // Scores x xT / sqrt(2): row 0 [1, 0] / sqrt 2, row 1 [0, 4] / sqrt 2.
  const double a = std::exp(1 / std::sqrt(2.0)) / (std::exp(1 / std::sqrt(2.0)) + 1);
  const double b = 1 / (1 + std::exp(4 / std::sqrt(2.0)));
  CHECK(std::abs(y[0] - a) < 1e-6);
  CHECK(std::abs(y[1] - 2 * (1 - a)) < 1e-6);
  CHECK(std::abs(y[2] - b) < 1e-6);
  CHECK(std::abs(y[3] - 2 * (1 - b)) < 1e-6);
  // Masking the second key leaves every query with the first value alone.
  const auto masked = kernel_for(attention(1), {{2, 2}, {2}});
  const Tensor mask = values({1, 2}, {1, 0});
  const Tensor z = masked->forward({&x, &mask}, params, {}).output;
  CHECK(std::vector<float>(z.values().begin(), z.values().end()) == std::vector<float>{1, 0, 1, 0});
}

TEST_CASE("attention keeps one dropout seed and the same mask in backward") {
  const auto kernel = kernel_for(attention(2, 0.5), {{4, 4}});
  const Tensor x = random_tensor({2, 4, 4}, 12);
  const auto params = random_parameters(*kernel, 13);
  const ForwardResult once = kernel->forward({&x}, params, {3, 1});
  const ForwardResult again = kernel->forward({&x}, params, {3, 1});
  CHECK(once.saved.seeds.size() == 1);
  CHECK(once.saved.seeds == again.saved.seeds);
  CHECK(bit_identical(once.output, again.output));
  CHECK(once.saved.seeds != kernel->forward({&x}, params, {4, 1}).saved.seeds);
  CHECK(kernel->forward({&x}, params, {3, 1}).saved.saved_bytes() ==
        2 * kernel->saved_bytes_per_sample() + 8);
}

TEST_CASE("transformer encoder gradients match central differences") {
  check_gradients(encoder(3, 4, 2, 6, 0.0), {random_tensor({2, 3, 4}, 14)});
  check_gradients(encoder(3, 4, 1, 5, 0.2), {random_tensor({2, 3, 4}, 15)});
  const Tensor mask = values({2, 3}, {1, 0, 1, 1, 1, 0});
  check_gradients(encoder(3, 4, 2, 6, 0.1), {random_tensor({2, 3, 4}, 16), mask}, {}, 1);
}

TEST_CASE("a transformer encoder has the parameters the cost model counts") {
  const Layer layer = encoder(8, 16, 4, 64, 0.1);
  const auto kernel = kernel_for(layer, {{8, 16}});
  CHECK(kernel->parameters().size() == 16);
  CHECK(parameter_count(*kernel) == layer_info(layer, {{8, 16}}, {8, 16}, DType::kFp32).params);
  CHECK(parameter_count(*kernel) == 4 * (16 * 16 + 16) + 4 * 16 + 2 * 16 * 64 + 64 + 16);
  const Layer self = attention(4, 0.1);
  CHECK(parameter_count(*kernel_for(self, {{8, 16}})) ==
        layer_info(self, {{8, 16}}, {8, 16}, DType::kFp32).params);
  const Layer words = embedding(50, 8, 4, 2);
  CHECK(parameter_count(*kernel_for(words, {{4}})) ==
        layer_info(words, {{4}}, {4, 8}, DType::kFp32).params);
}

TEST_CASE("an encoder's three dropout seeds are kept and its masks drawn again in backward") {
  const auto kernel = kernel_for(encoder(4, 8, 2, 16, 0.5), {{4, 8}});
  const Tensor x = random_tensor({2, 4, 8}, 17);
  const auto params = random_parameters(*kernel, 18);
  const ForwardResult result = kernel->forward({&x}, params, {1, 0});
  CHECK(result.saved.seeds.size() == 3);
  CHECK(kernel->saved_bytes_per_micro_batch() == 24);
  CHECK(result.saved.saved_bytes() == 2 * kernel->saved_bytes_per_sample() + 24);
  ForwardContext inference;
  inference.inference = true;
  const Tensor plain = kernel->forward({&x}, params, inference).output;
  CHECK_FALSE(bit_identical(plain, result.output));
  CHECK(bit_identical(plain, kernel->forward({&x}, params, inference).output));
}

TEST_CASE("embedding parameter gradients match central differences") {
  check_gradients(embedding(5, 4, 3), {values({2, 3}, {0, 4, 2, 2, 2, 1})}, {}, 0);
  check_gradients(embedding(5, 4, 3, 2),
                  {values({2, 3}, {1, 3, 0, 4, 4, 2}), values({2, 3}, {0, 0, 1, 0, 1, 1})}, {}, 0);
}

TEST_CASE("embedding backward scatter-adds the rows of repeated tokens") {
  const auto kernel = kernel_for(embedding(4, 3, 3), {{3}});
  const Tensor ids = values({1, 3}, {1, 1, 2});
  const auto params = random_parameters(*kernel, 19);
  const ForwardResult result = kernel->forward({&ids}, params, {});
  CHECK(result.saved.indices == std::vector<std::int32_t>{1, 1, 2});
  auto accumulators = sum_accumulators(*kernel);
  const auto gradients =
      kernel->backward(random_tensor({1, 3, 3}, 20), result.saved, params, accumulators);
  CHECK(gradients.at(0).elements() == 3);  // ids take a zero gradient
  const Tensor& words = accumulators[0].sum();
  const Tensor& positions = accumulators[1].sum();  // row i: the gradient at position i
  for (std::int64_t j = 0; j < 3; ++j) {
    CHECK(words[0 * 3 + j] == 0.0f);
    CHECK(words[1 * 3 + j] == positions[0 * 3 + j] + positions[1 * 3 + j]);
    CHECK(words[2 * 3 + j] == positions[2 * 3 + j]);
    CHECK(words[3 * 3 + j] == 0.0f);
    CHECK(positions[3 * 3 + j] == 0.0f);  // max_positions 4: the last row is unused
  }
}

TEST_CASE("an embedding looks up word, position and type rows") {
  const auto kernel = kernel_for(embedding(3, 2, 2, 2), {{2}, {2}});
  const Tensor ids = values({1, 2}, {2, 0});
  const Tensor types = values({1, 2}, {1, 0});
  std::vector<Tensor> params{values({3, 2}, {0, 0, 1, 1, 5, 7}), values({3, 2}, {1, 2, 3, 4, 0, 0}),
                             values({2, 2}, {0, 0, 10, 10}), Tensor({2}, 1.0f), Tensor({2}, 0.0f)};
  const ForwardResult result = kernel->forward({&ids, &types}, params, {});
  // Before the layer norm: [5 + 1 + 10, 7 + 2 + 10] and [0 + 3, 0 + 4].
  CHECK(std::vector<float>(result.saved.tensors[0].values().begin(),
                           result.saved.tensors[0].values().end()) ==
        std::vector<float>{16, 19, 3, 4});
  CHECK(result.saved.indices == std::vector<std::int32_t>{2, 0, 1, 0});
}

// Keras' Embedding and ONNX's Gather: "positions": false, "layer_norm": false.
Layer lookup(std::int64_t vocab, std::int64_t hidden, std::int64_t sequence) {
  Layer layer = embedding(vocab, hidden, sequence);
  layer.params.positions = false;
  layer.params.max_positions = 0;
  layer.params.normalized = false;
  return layer;
}

TEST_CASE("plain lookup gradients match central differences in fp32 and fp16") {
  for (const DType dtype : {DType::kFp32, DType::kFp16}) {
    INFO(dtype_name(dtype));
    check_gradients(lookup(5, 4, 3), {values({2, 3}, {0, 4, 2, 2, 2, 1})}, {}, 0, dtype);
  }
}

TEST_CASE("fp16 gradients of the transformer kernels match central differences") {
  constexpr DType kFp16 = DType::kFp16;
  check_gradients(layer_norm(), {random_tensor({2, 5}, 1)}, {}, SIZE_MAX, kFp16);
  check_gradients(make_layer(LayerType::kSoftmax), {random_tensor({2, 3, 4}, 4)}, {}, SIZE_MAX,
                  kFp16);
  check_gradients(make_layer(LayerType::kTanh), {random_tensor({2, 7}, 5)}, {}, SIZE_MAX, kFp16);
  check_gradients(batch_norm(), {random_tensor({3, 4}, 7)}, {}, SIZE_MAX, kFp16);
  check_gradients(attention(2), {random_tensor({2, 3, 4}, 9)}, {}, SIZE_MAX, kFp16);
  check_gradients(attention(1, 0.3), {random_tensor({2, 3, 4}, 10)}, {}, SIZE_MAX, kFp16);
  check_gradients(attention(2), {random_tensor({2, 3, 4}, 11), values({2, 3}, {1, 1, 0, 1, 0, 1})},
                  {}, 1, kFp16);
  check_gradients(encoder(3, 4, 2, 6, 0.0), {random_tensor({2, 3, 4}, 14)}, {}, SIZE_MAX, kFp16);
  check_gradients(encoder(3, 4, 1, 5, 0.2), {random_tensor({2, 3, 4}, 15)}, {}, SIZE_MAX, kFp16);
  check_gradients(embedding(5, 4, 3, 2),
                  {values({2, 3}, {1, 3, 0, 4, 4, 2}), values({2, 3}, {0, 0, 1, 0, 1, 1})}, {}, 0,
                  kFp16);
}

TEST_CASE("a plain lookup returns the word rows and scatter-adds their gradients") {
  const auto kernel = kernel_for(lookup(4, 2, 3), {{3}});
  REQUIRE(kernel->parameters().size() == 1);
  CHECK(kernel->parameters()[0].shape == Shape{4, 2});
  const Tensor ids = values({1, 3}, {3, 0, 3});
  const std::vector<Tensor> params{values({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8})};
  const ForwardResult result = kernel->forward({&ids}, params, {});
  CHECK(std::vector<float>(result.output.values().begin(), result.output.values().end()) ==
        std::vector<float>{7, 8, 1, 2, 7, 8});
  CHECK(result.saved.tensors.empty());
  auto accumulators = sum_accumulators(*kernel);
  kernel->backward(values({1, 3, 2}, {1, 10, 100, 1000, 2, 20}), result.saved, params,
                   accumulators);
  const Tensor& words = accumulators[0].sum();
  CHECK(std::vector<float>(words.values().begin(), words.values().end()) ==
        std::vector<float>{100, 1000, 0, 0, 0, 0, 3, 30});
}

TEST_CASE("an embedding with positions and no layer norm adds the position rows") {
  Layer layer = embedding(3, 2, 2);
  layer.params.normalized = false;
  const auto kernel = kernel_for(layer, {{2}});
  REQUIRE(kernel->parameters().size() == 2);
  const Tensor ids = values({1, 2}, {2, 1});
  const std::vector<Tensor> params{values({3, 2}, {0, 0, 1, 1, 5, 7}),
                                   values({3, 2}, {10, 20, 30, 40, 0, 0})};
  const ForwardResult result = kernel->forward({&ids}, params, {});
  CHECK(std::vector<float>(result.output.values().begin(), result.output.values().end()) ==
        std::vector<float>{15, 27, 31, 41});
  check_gradients(layer, {values({2, 2}, {0, 2, 1, 1})}, {}, 0);
  check_gradients(lookup(5, 3, 2), {values({2, 2}, {4, 0, 4, 1})}, {}, 0);
}

TEST_CASE("a plain lookup costs and saves what its kernel does") {
  for (const Layer& layer : {lookup(10, 8, 6), [] {
                               Layer l = embedding(10, 8, 6);
                               l.params.normalized = false;
                               return l;
                             }()}) {
    const auto kernel = kernel_for(layer, {{6}});
    const LayerInfo info = layer_info(layer, {{6}}, kernel->output_shape(), DType::kFp32);
    CHECK(info.params == parameter_count(*kernel));
    CHECK(info.saved_bytes == 4 * 6);  // the token ids only
    const Tensor ids({2, 6}, 1.0f);
    CHECK(kernel->forward({&ids}, random_parameters(*kernel, 5), {}).saved.saved_bytes() ==
          2 * info.saved_bytes);
  }
  CHECK(lower_layer(lookup(10, 8, 6), {{6}}, {6, 8}).size() == 1);  // the gather alone
}

TEST_CASE("an embedding refuses token ids out of range or not integers") {
  const auto kernel = kernel_for(embedding(16, 2, 3, 2), {{3}, {3}});
  const auto params = random_parameters(*kernel, 21);
  const Tensor good = values({2, 3}, {0, 1, 15, 2, 3, 4});
  const Tensor types = values({2, 3}, {0, 1, 1, 0, 0, 0});
  CHECK_NOTHROW(kernel->forward({&good, &types}, params, {}));
  const Tensor high = values({2, 3}, {0, 1, 15, 2, 16, 4});
  CHECK_THROWS_WITH(kernel->forward({&high, &types}, params, {}),
                    "model.json: at /model/layers/0: layer 'emb' (embedding) reads token id 16 "
                    "(sample 1, position 1), which is outside the vocabulary [0, 16)");
  const Tensor fraction = values({2, 3}, {0, 2.5f, 15, 2, 3, 4});
  CHECK_THROWS_WITH(kernel->forward({&fraction, &types}, params, {}),
                    "model.json: at /model/layers/0: layer 'emb' (embedding) reads token id 2.5 "
                    "(sample 0, position 1), which is not an integer");
  const Tensor negative = values({2, 3}, {0, 1, -1, 2, 3, 4});
  CHECK_THROWS_WITH(kernel->forward({&negative, &types}, params, {}),
                    "model.json: at /model/layers/0: layer 'emb' (embedding) reads token id -1 "
                    "(sample 0, position 2), which is outside the vocabulary [0, 16)");
  const Tensor bad_types = values({2, 3}, {0, 1, 2, 0, 0, 0});
  CHECK_THROWS_WITH(kernel->forward({&good, &bad_types}, params, {}),
                    "model.json: at /model/layers/0: layer 'emb' (embedding) reads token type 2 "
                    "(sample 0, position 2), which is outside its token types [0, 2)");
}

TEST_CASE("fp16 transformer kernels round outputs, gradients and parameter gradients") {
  struct Case {
    Layer layer;
    std::vector<Shape> shapes;
    std::vector<Tensor> inputs;
  };
  const std::vector<Case> cases = {
      {layer_norm(), {{6}}, {random_tensor({3, 6}, 22)}},
      {batch_norm(), {{6}}, {random_tensor({3, 6}, 23)}},
      {make_layer(LayerType::kSoftmax), {{6}}, {random_tensor({3, 6}, 24)}},
      {attention(2, 0.2), {{3, 4}}, {random_tensor({2, 3, 4}, 25)}},
      {encoder(3, 4, 2, 8, 0.2), {{3, 4}}, {random_tensor({2, 3, 4}, 26)}},
      {embedding(6, 4, 3), {{3}}, {values({2, 3}, {5, 0, 1, 3, 3, 2})}},
  };
  for (const Case& c : cases) {
    INFO(layer_type_name(c.layer.type));
    const auto fp16 = kernel_for(c.layer, c.shapes, DType::kFp16);
    const auto fp32 = kernel_for(c.layer, c.shapes, DType::kFp32);
    std::vector<Tensor> params = random_parameters(*fp16, 27);
    for (Tensor& param : params)
      round_to_dtype(param, DType::kFp16);
    const ForwardResult result = fp16->forward(pointers(c.inputs), params, {});
    CHECK(all_fp16(result.output));
    // Rounding moves the output by about fp16's precision, no more.
    const Tensor reference = fp32->forward(pointers(c.inputs), params, {}).output;
    for (std::int64_t i = 0; i < reference.elements(); ++i)
      CHECK(std::abs(result.output[i] - reference[i]) <= 0.02 * (1 + std::abs(reference[i])));
    auto accumulators = sum_accumulators(*fp16);
    const auto gradients = fp16->backward(random_tensor(result.output.shape(), 28), result.saved,
                                          params, accumulators);
    CHECK(all_fp16(gradients.at(0)));
    for (const GradientAccumulator& accumulator : accumulators)
      CHECK(all_fp16(accumulator.sum()));
  }
}

TEST_CASE("the new kernels' saved bytes equal what the memory model charges") {
  const std::vector<std::pair<Layer, std::vector<Shape>>> cases = {
      {layer_norm(), {{4, 8}}},
      {batch_norm(), {{5, 5, 3}}},
      {make_layer(LayerType::kSoftmax), {{3, 7}}},
      {make_layer(LayerType::kTanh), {{12}}},
      {attention(2), {{6, 8}}},
      {attention(4, 0.1), {{6, 8}}},
      {attention(2), {{6, 8}, {6}}},
      {encoder(6, 8, 2, 32, 0.1), {{6, 8}}},
      {encoder(6, 8, 2, 20, 0.0), {{6, 8}, {6}}},
      {embedding(10, 8, 6), {{6}}},
      {embedding(10, 8, 6, 2), {{6}, {6}}},
  };
  constexpr std::int64_t kBatch = 2;
  for (const DType dtype : {DType::kFp32, DType::kFp16}) {
    for (const auto& [layer, shapes] : cases) {
      INFO(layer_type_name(layer.type) << " " << dtype_name(dtype) << " inputs " << shapes.size());
      const auto kernel = kernel_for(layer, shapes, dtype);
      const LayerInfo info = layer_info(layer, shapes, kernel->output_shape(), dtype);
      std::vector<Tensor> inputs;
      for (const Shape& shape : shapes)
        inputs.emplace_back(with_batch_shape(kBatch, shape), 1.0f);
      const auto params = random_parameters(*kernel, 29);
      const ForwardResult result = kernel->forward(pointers(inputs), params, {});
      CHECK(result.saved.saved_bytes() == kBatch * info.saved_bytes + info.seed_bytes);
    }
  }
}

TEST_CASE("attention lowers to the operations of an encoder's attention block") {
  const auto names = [](const Layer& layer, const std::vector<Shape>& inputs) {
    std::vector<std::string> out;
    for (const Operation& op : lower_layer(layer, inputs, inputs.front()))
      out.push_back(op.name);
    return out;
  };
  CHECK(names(attention(2, 0.1), {{6, 8}}) ==
        std::vector<std::string>{"qkv_projection", "attention_scores", "softmax",
                                 "attention_dropout", "context", "output_projection"});
  CHECK(names(attention(2), {{6, 8}}).size() == 5);
  CHECK(names(encoder(6, 8, 2, 32, 0.1), {{6, 8}}).size() == 11);
  CHECK(names(layer_norm(), {{6, 8}}) == std::vector<std::string>{"layer_norm"});
  CHECK(names(batch_norm(), {{6, 8}}) == std::vector<std::string>{"batch_norm"});
  CHECK(lower_layer(make_layer(LayerType::kSoftmax), {{4}}, {4}).at(0).op_class ==
        OpClass::kNonLinear);
  CHECK(lower_layer(make_layer(LayerType::kTanh), {{4}}, {4}).at(0).op_class ==
        OpClass::kNonLinear);
}
