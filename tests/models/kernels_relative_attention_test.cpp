// relative_attention: Conformer's self-attention with relative positions (WeNet's form), its
// gradients by central differences, its structure against plain attention, what it keeps, and
// its FLOPs and parameters by closed form.

#include <cmath>

#include <catch2/catch.hpp>

#include "models/layers/layer_info.hpp"
#include "models/layers/layer_types.hpp"
#include "tests/models/kernels_test_support.hpp"
#include "tests/models/model_test_support.hpp"

using namespace ipusim::models;
using namespace ipusim::models::testing;

namespace {

// A relative_attention layer over [sequence, hidden] with these keys (JSON text).
Layer relative(const std::string& keys, const std::string& shape = "[5, 8]") {
  const Model model = model_from(with_layers(shape, R"([{"id": "x", "type": "input"},
                 {"id": "rel", "type": "relative_attention", )" +
                                                        keys + "}]"));
  return model.layers.at(1);
}

std::vector<Tensor> random_parameters(const Kernel& kernel) {
  std::vector<Tensor> params;
  for (const ParameterSpec& spec : kernel.parameters())
    params.push_back(random_tensor(spec.shape, 200 + params.size()));
  return params;
}

}  // namespace

TEST_CASE("relative attention's gradients match central differences") {
  const Tensor x = random_tensor({2, 5, 8}, 3);
  SECTION("separate projections") {
    check_gradients(relative(R"("heads": 2)"), {x});
  }
  SECTION("keys and values from one projection") {
    check_gradients(relative(R"("heads": 2, "shared_kv": true)"), {x});
  }
  SECTION("with a padding mask") {
    const Tensor mask({2, 5}, std::vector<float>{1, 1, 1, 0, 0, 1, 1, 1, 1, 1});
    check_gradients(relative(R"("heads": 4)"), {x, mask}, {}, 1);
  }
  SECTION("in fp16") {
    check_gradients(relative(R"("heads": 2)"), {x}, {}, SIZE_MAX, DType::kFp16);
  }
}

TEST_CASE("relative attention without position terms is plain attention") {
  // u, v and Wpos zero: the position scores vanish, and the content scores are Q Kᵀ / sqrt(d),
  // so with the same Q, K, V and output projections the output is attention's to the bit.
  const Tensor x = random_tensor({2, 5, 8}, 4);
  const auto rel = kernel_for(relative(R"("heads": 2)"), {{5, 8}});
  Layer plain = make_layer(LayerType::kAttention, "rel");
  plain.params.heads = 2;
  const auto attention = kernel_for(plain, {{5, 8}});
  std::vector<Tensor> params = random_parameters(*rel);
  for (std::size_t i = 8; i < 11; ++i)
    params[i] = Tensor(params[i].shape(), 0.0f);
  const std::vector<Tensor> shared(params.begin(), params.begin() + 8);
  const ForwardResult ours = rel->forward({&x}, params, {});
  const ForwardResult theirs = attention->forward({&x}, shared, {});
  CHECK(values_of(ours.output) == values_of(theirs.output));
}

TEST_CASE("relative attention scores each key by its position through v and Wpos") {
  // Q and u zero and Wpos the identity: query i scores key j as v_h · PE_j / sqrt(d) for head h,
  // the same for every query. One head of size 4 over 3 positions, v = [1, 0, 0, 1]: the score of
  // key j is (sin(j) + cos(j / 100)) / 2, PE_j's columns 0 and 3 (10000^(2/4) = 100).
  const auto kernel = kernel_for(relative(R"("heads": 1)", "[3, 4]"), {{3, 4}});
  std::vector<Tensor> params = random_parameters(*kernel);
  params[0] = Tensor({4, 4}, 0.0f);
  params[1] = Tensor({4}, 0.0f);
  params[8] = Tensor({4, 4}, std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
  params[9] = Tensor({1, 4}, 0.0f);
  params[10] = Tensor({1, 4}, std::vector<float>{1, 0, 0, 1});
  const Tensor x = random_tensor({1, 3, 4}, 5);
  const ForwardResult result = kernel->forward({&x}, params, {});
  const Tensor& p = result.saved.tensors.at(4);  // after X, Q, K, V
  double scores[3];
  double total = 0;
  for (int j = 0; j < 3; ++j) {
    scores[j] = std::exp((std::sin(double(j)) + std::cos(double(j) / 100)) / 2);
    total += scores[j];
  }
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j)
      CHECK(std::abs(p[i * 3 + j] - scores[j] / total) < 1e-6);
  }
}

TEST_CASE("relative attention keeps Q, K, V, the context and the probabilities it declares") {
  for (const std::string keys :
       {R"("heads": 2)", R"("heads": 2, "shared_kv": true)", R"("heads": 2, "dropout": 0.1)"}) {
    INFO(keys);
    const Layer layer = relative(keys);
    const auto kernel = kernel_for(layer, {{5, 8}});
    const LayerInfo info = layer_info(layer, {{5, 8}}, {5, 8}, DType::kFp32);
    const Tensor x = random_tensor({3, 5, 8}, 6);
    const ForwardResult result = kernel->forward({&x}, random_parameters(*kernel), {});
    CHECK(result.saved.saved_bytes() == 3 * info.saved_bytes + info.seed_bytes);
    // The input and the projections (K doubling as V when shared) and the context, s·h each,
    // and the probabilities heads·s² (twice with dropout), 4 bytes an element.
    const bool shared = keys.find("shared") != std::string::npos;
    const bool dropout = keys.find("dropout") != std::string::npos;
    CHECK(info.saved_bytes == 4 * ((shared ? 4 : 5) * 40 + (dropout ? 2 : 1) * 2 * 25));
  }
}

TEST_CASE("relative attention's parameters and FLOPs by closed form") {
  // s = 6, h = 8: Q, K, V, O are h² + h each (Q and one K/V shared: three), Wpos h², u and v h.
  const double s = 6, h = 8;
  for (const bool shared : {false, true}) {
    INFO(shared);
    const Layer layer =
        relative(shared ? R"("heads": 2, "shared_kv": true)" : R"("heads": 2)", "[6, 8]");
    const LayerInfo info = layer_info(layer, {{6, 8}}, {6, 8}, DType::kFp32);
    CHECK(info.params == (shared ? 3 : 4) * (64 + 8) + 64 + 16);
    // Projections 2·s·h·(2 or 3)h, Wpos 2·s·h², the two score products 2·s²·h each, the
    // weighted sum 2·s²·h and the output projection 2·s·h²; backward twice that.
    const double projections = 2 * s * h * (shared ? 2 : 3) * h;
    CHECK(info.forward_flops == projections + 2 * s * h * h + 3 * 2 * s * s * h + 2 * s * h * h);
    CHECK(info.backward_flops == 2 * info.forward_flops);
  }
}

TEST_CASE("relative attention refuses heads that do not split hidden into even head sizes") {
  CHECK(model_error(with_layers("[5, 8]", R"([{"id": "x", "type": "input"},
      {"id": "rel", "type": "relative_attention", "heads": 8}])")) ==
        "model.json: at /model/layers/1: layer 'rel' (relative_attention) has 8 heads, which must "
        "divide hidden (the last axis) into even head sizes, but 'x' gives [5, 8]");
}
