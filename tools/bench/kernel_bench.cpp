// Single-thread GFLOP/s of the dense and conv2d kernels beside the core's FMA peak, measured by
// a microbenchmark with the widest FMA the compiler targets. Best of several runs: VMs are noisy.

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "models/kernels/kernels.hpp"

namespace {

using ipusim::models::DType;
using ipusim::models::ForwardResult;
using ipusim::models::GradientAccumulator;
using ipusim::models::GradientReduction;
using ipusim::models::Layer;
using ipusim::models::LayerType;
using ipusim::models::ParameterSpec;
using ipusim::models::Shape;
using ipusim::models::Tensor;

constexpr int kRepeats = 5;

double best_seconds(const std::function<void()>& run) {
  double best = 1e30;
  for (int i = 0; i < kRepeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    best = std::min(best, elapsed.count());
  }
  return best;
}

// Enough independent FMA chains to cover the FMA latency on every issue port.
constexpr int kChains = 16;
constexpr long kIterations = 20'000'000;

#if defined(__AVX512F__)
constexpr const char* kIsa = "AVX-512F (16 fp32 lanes)";
constexpr int kLanes = 16;
float fma_loop() {
  __m512 acc[kChains];
  for (int j = 0; j < kChains; ++j)
    acc[j] = _mm512_set1_ps(static_cast<float>(j));
  const __m512 a = _mm512_set1_ps(0.999999f);
  const __m512 b = _mm512_set1_ps(1e-6f);
  for (long i = 0; i < kIterations; ++i) {
    for (int j = 0; j < kChains; ++j)
      acc[j] = _mm512_fmadd_ps(acc[j], a, b);
  }
  alignas(64) float lanes[16];
  float sum = 0.0f;
  for (int j = 0; j < kChains; ++j) {
    _mm512_store_ps(lanes, acc[j]);
    for (const float lane : lanes)
      sum += lane;
  }
  return sum;
}
#elif defined(__AVX2__) && defined(__FMA__)
constexpr const char* kIsa = "AVX2 + FMA (8 fp32 lanes)";
constexpr int kLanes = 8;
float fma_loop() {
  __m256 acc[kChains];
  for (int j = 0; j < kChains; ++j)
    acc[j] = _mm256_set1_ps(static_cast<float>(j));
  const __m256 a = _mm256_set1_ps(0.999999f);
  const __m256 b = _mm256_set1_ps(1e-6f);
  for (long i = 0; i < kIterations; ++i) {
    for (int j = 0; j < kChains; ++j)
      acc[j] = _mm256_fmadd_ps(acc[j], a, b);
  }
  alignas(32) float lanes[8];
  float sum = 0.0f;
  for (int j = 0; j < kChains; ++j) {
    _mm256_store_ps(lanes, acc[j]);
    for (const float lane : lanes)
      sum += lane;
  }
  return sum;
}
#else
constexpr const char* kIsa = "SSE2 multiply + add (4 fp32 lanes, no FMA)";
constexpr int kLanes = 4;
float fma_loop() {
  __m128 acc[kChains];
  for (int j = 0; j < kChains; ++j)
    acc[j] = _mm_set1_ps(static_cast<float>(j));
  const __m128 a = _mm_set1_ps(0.999999f);
  const __m128 b = _mm_set1_ps(1e-6f);
  for (long i = 0; i < kIterations; ++i) {
    for (int j = 0; j < kChains; ++j)
      acc[j] = _mm_add_ps(_mm_mul_ps(acc[j], a), b);
  }
  alignas(16) float lanes[4];
  float sum = 0.0f;
  for (int j = 0; j < kChains; ++j) {
    _mm_store_ps(lanes, acc[j]);
    for (const float lane : lanes)
      sum += lane;
  }
  return sum;
}
#endif

double fma_peak_gflops() {
  volatile float sink = 0.0f;
  const double seconds = best_seconds([&] { sink = sink + fma_loop(); });
  return 2.0 * kLanes * kChains * static_cast<double>(kIterations) / seconds / 1e9;
}

Tensor filled(Shape shape, float value) {
  return Tensor(std::move(shape), value);
}

// Times one layer's forward and backward pass on a batch; FLOPs as the cost model counts them
// (a multiply-add is two; backward is the input and the weight gradients).
void bench_layer(const char* name, const Layer& layer, const Shape& sample, std::int64_t batch,
                 double forward_flops, double peak) {
  const auto kernel = ipusim::models::make_kernel(layer, {sample}, DType::kFp32, 1);
  Shape batched{batch};
  batched.insert(batched.end(), sample.begin(), sample.end());
  const Tensor x = filled(batched, 0.5f);
  std::vector<Tensor> params;
  std::vector<GradientAccumulator> accumulators;
  for (const ParameterSpec& spec : kernel->parameters()) {
    params.push_back(filled(spec.shape, 0.01f));
    accumulators.emplace_back(spec.shape, DType::kFp32, GradientReduction::kSum);
  }
  ForwardResult result;
  const double forward = best_seconds([&] { result = kernel->forward({&x}, params, {}); });
  const Tensor gradient = filled(result.output.shape(), 1.0f);
  const double backward =
      best_seconds([&] { kernel->backward(gradient, result.saved, params, accumulators); });
  const auto report = [&](const char* pass, double flops, double seconds) {
    const double gflops = flops / seconds / 1e9;
    std::printf("  %-40s %-8s %8.1f GFLOP/s  %5.1f%% of peak  (%.2f ms)\n", name, pass, gflops,
                100.0 * gflops / peak, seconds * 1e3);
  };
  report("forward", forward_flops, forward);
  report("backward", 2 * forward_flops, backward);
}

}  // namespace

int main() {
  std::printf("kernel_bench: single thread, best of %d\n", kRepeats);
  std::printf("  compiler target: %s; Eigen uses %s\n", kIsa, Eigen::SimdInstructionSetsInUse());
  const double peak = fma_peak_gflops();
  std::printf("  %-40s %-8s %8.1f GFLOP/s\n", "FMA peak microbenchmark", "", peak);

  Layer dense;
  dense.type = LayerType::kDense;
  dense.params.units = 1024;
  bench_layer("dense 256 x 1024 -> 1024", dense, {1024}, 256, 2.0 * 256 * 1024 * 1024, peak);

  Layer conv;
  conv.type = LayerType::kConv2d;
  conv.params.filters = 64;
  conv.params.kernel_h = conv.params.kernel_w = 3;
  conv.params.padding = ipusim::models::kSamePadding;
  bench_layer("conv2d 32 x 28x28x32 -> 64, 3x3 same", conv, {28, 28, 32}, 32,
              2.0 * 32 * 28 * 28 * 3 * 3 * 32 * 64, peak);
  return 0;
}
