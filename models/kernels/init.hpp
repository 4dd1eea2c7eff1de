#pragma once
// Seeded random numbers that are the same on every standard library: ipusim draws uniform and
// normal values from the raw bits of std::mt19937_64 itself (std distributions are
// implementation-defined). Streams are keyed by the run seed plus what they are for (a layer
// id, a micro-batch index...), so that the pipeline and the reference draw the same numbers in
// whatever order they visit layers.

#include <cstdint>
#include <random>
#include <string_view>
#include <vector>

#include "models/kernels/tensor.hpp"

namespace ipusim::models {

// Mixes a key into a seed (splitmix64 finaliser), so nearby keys give unrelated streams.
std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t key);
// Keys a seed by a name (FNV-1a of its bytes), e.g. a layer id.
std::uint64_t derive_seed(std::uint64_t seed, std::string_view key);

// One random stream.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}

  std::uint64_t bits() { return engine_(); }
  // Uniform in [0, 1), with 53 random bits.
  double uniform();
  // Standard normal by Box-Muller (one value per two uniforms, no caching).
  double normal();
  // Uniform in [0, n), without modulo bias (rejection sampling).
  std::uint64_t below(std::uint64_t n);

 private:
  std::mt19937_64 engine_;
};

// What a parameter tensor is, so it can be initialised like Keras does.
struct ParameterSpec {
  enum class Role {
    kWeight,
    kBias,
    kScale,      // a normalisation's gamma
    kEmbedding,  // a lookup table: rows of an embedding
    kTable,      // position_table's: added to the activations
    kToken,      // class_token's: a learned token
  };
  Role role = Role::kWeight;
  Shape shape;
  std::int64_t fan_in = 0;
  std::int64_t fan_out = 0;
};

// Keras defaults: Glorot-uniform weights (limit sqrt(6 / (fan_in + fan_out))), zero biases,
// scales of one, and embedding tables uniform in [-0.05, 0.05) (Keras' Embedding), drawn in
// order from the stream keyed by (seed, layer id) and rounded to `dtype`. ViT's for its own two:
// a position table normal with standard deviation 0.02 and a class token of zeros, as
// torchvision's VisionTransformer initialises pos_embedding and class_token
// (torchvision/models/vision_transformer.py).
std::vector<Tensor> initial_parameters(const std::vector<ParameterSpec>& specs, std::uint64_t seed,
                                       std::string_view layer_id, DType dtype);

}  // namespace ipusim::models
