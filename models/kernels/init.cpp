#include "models/kernels/init.hpp"

#include <cmath>
#include <numbers>

namespace ipusim::models {
namespace {

constexpr double kEmbeddingLimit = 0.05;  // Keras' Embedding: RandomUniform(-0.05, 0.05)
constexpr double kTableStddev = 0.02;     // torchvision's ViT: pos_embedding.normal_(std=0.02)

void draw(const ParameterSpec& spec, Rng& rng, Tensor& tensor) {
  if (spec.role == ParameterSpec::Role::kTable) {
    for (float& value : tensor.values())
      value = static_cast<float>(rng.normal() * kTableStddev);
    return;
  }
  const double limit = spec.role == ParameterSpec::Role::kEmbedding
                           ? kEmbeddingLimit
                           : std::sqrt(6.0 / static_cast<double>(spec.fan_in + spec.fan_out));
  for (float& value : tensor.values())
    value = static_cast<float>((2.0 * rng.uniform() - 1.0) * limit);
}

}  // namespace

std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t key) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ull * (key + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::uint64_t derive_seed(std::uint64_t seed, std::string_view key) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (const char c : key) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ull;
  }
  return derive_seed(seed, hash);
}

double Rng::uniform() {
  return static_cast<double>(bits() >> 11) * 0x1.0p-53;
}

double Rng::normal() {
  const double u1 = uniform();
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log1p(-u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

std::uint64_t Rng::below(std::uint64_t n) {
  // 2^64 mod n: rejecting draws below it leaves a range that is a multiple of n.
  const std::uint64_t threshold = (0 - n) % n;
  for (;;) {
    const std::uint64_t draw = bits();
    if (draw >= threshold)
      return draw % n;
  }
}

std::vector<Tensor> initial_parameters(const std::vector<ParameterSpec>& specs, std::uint64_t seed,
                                       std::string_view layer_id, DType dtype) {
  Rng rng(derive_seed(seed, layer_id));
  std::vector<Tensor> parameters;
  for (const ParameterSpec& spec : specs) {
    Tensor tensor(spec.shape, spec.role == ParameterSpec::Role::kScale ? 1.0f : 0.0f);
    const bool drawn = spec.role == ParameterSpec::Role::kWeight ||
                       spec.role == ParameterSpec::Role::kEmbedding ||
                       spec.role == ParameterSpec::Role::kTable;
    if (drawn) {
      draw(spec, rng, tensor);
      round_to_dtype(tensor, dtype);
    }
    parameters.push_back(std::move(tensor));
  }
  return parameters;
}

}  // namespace ipusim::models
