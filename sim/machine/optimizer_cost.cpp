#include "sim/machine/optimizer_cost.hpp"

namespace ipusim::sim {
namespace {

// The weight update as vector work over the parameters, computed in fp32 as Graphcore's
// optimizers do (LAMBIpuOptimizer's optimizer_compute_precisions default to fp32). Elementwise
// passes: SGD one (w -= lr g), momentum two (velocity, weights), Adam four (two moments, the
// square root and divide, the weights); LAMB is Adam's plus one scaling the update by its trust
// ratio; LARS is momentum's two plus one adding the decay term (g + weight_decay w). Each pass
// is a compute set over every tile.
constexpr int kAdamUpdatePasses = 4;
constexpr int kTrustRatioScalePasses = 1;
constexpr int kDecayTermPasses = 1;
// LAMB's trust ratio ||w|| / ||u|| and LARS' ||w|| / ||g|| need two squared norms per parameter
// tensor, fp32 reductions over all its elements. A reduction across tiles takes two compute sets
// (partial sums on each tile, then their sum), as the layer norm's statistics do.
constexpr int kTrustRatioNormReductions = 2;
constexpr int kComputeSetsPerNormReduction = 2;

int elementwise_update_passes(models::OptimizerConfig::Kind kind) {
  switch (kind) {
    case models::OptimizerConfig::Kind::kSgd:
      return 1;
    case models::OptimizerConfig::Kind::kMomentum:
      return 2;
    case models::OptimizerConfig::Kind::kAdam:
      return kAdamUpdatePasses;
    case models::OptimizerConfig::Kind::kLamb:
      return kAdamUpdatePasses + kTrustRatioScalePasses;
    case models::OptimizerConfig::Kind::kLars:
      return 2 + kDecayTermPasses;
  }
  return 1;
}

}  // namespace

std::vector<models::Operation> weight_update_operations(models::OptimizerConfig::Kind kind,
                                                        double params) {
  const int passes = elementwise_update_passes(kind);
  // Two FLOPs an element of each pass (a multiply-add).
  models::Operation update{"optimizer", models::OpClass::kElementwise, {}, {}};
  update.forward = {params * passes, params * passes, 0, passes, 2 * params * passes};
  if (kind != models::OptimizerConfig::Kind::kLamb && kind != models::OptimizerConfig::Kind::kLars)
    return {update};
  models::Operation norms{"trust_ratio_norms", models::OpClass::kReduction, {}, {}};
  const double elements = params * kTrustRatioNormReductions;
  norms.forward = {elements, elements, 0, kTrustRatioNormReductions * kComputeSetsPerNormReduction,
                   2 * elements};
  return {update, norms};
}

}  // namespace ipusim::sim
