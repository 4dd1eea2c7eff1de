#pragma once
// Builders shared by the kernel tests: layers by type, seeded random tensors, one-call
// forward and backward, and the check of gradients against central differences.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "models/kernels/init.hpp"
#include "models/kernels/kernels.hpp"

namespace ipusim::models::testing {

// The elements of all of `kernel`'s parameter tensors.
inline std::int64_t parameter_count(const Kernel& kernel) {
  std::int64_t count = 0;
  for (const ParameterSpec& spec : kernel.parameters())
    count += element_count(spec.shape);
  return count;
}

inline Layer make_layer(LayerType type, const std::string& id = "layer") {
  Layer layer;
  layer.id = id;
  layer.type = type;
  return layer;
}

// An encoder layer or one of its halves, all named "encoder": a half keyed like its encoder
// draws the encoder's dropout masks.
inline Layer transformer(LayerType type, std::int64_t sequence, std::int64_t hidden,
                         std::int64_t heads, std::int64_t ffn, double rate) {
  Layer layer = make_layer(type, "encoder");
  layer.params.sequence_length = sequence;
  layer.params.hidden = hidden;
  layer.params.heads = heads;
  layer.params.ffn = ffn;
  layer.params.rate = rate;
  return layer;
}

inline Layer dense(std::int64_t units, Activation activation = Activation::kNone,
                   bool bias = true) {
  Layer layer = make_layer(LayerType::kDense, "dense");
  layer.params.units = units;
  layer.params.activation = activation;
  layer.params.bias = bias;
  return layer;
}

inline Layer conv2d(std::int64_t filters, std::int64_t kernel, std::int64_t stride, Padding padding,
                    Activation activation = Activation::kNone) {
  Layer layer = make_layer(LayerType::kConv2d, "conv");
  layer.params.filters = filters;
  layer.params.kernel_h = layer.params.kernel_w = kernel;
  layer.params.stride_h = layer.params.stride_w = stride;
  layer.params.padding = padding;
  layer.params.activation = activation;
  return layer;
}

inline Layer maxpool2d(std::int64_t pool, std::int64_t stride, Padding padding) {
  Layer layer = make_layer(LayerType::kMaxPool2d, "pool");
  layer.params.pool_h = layer.params.pool_w = pool;
  layer.params.stride_h = layer.params.stride_w = stride;
  layer.params.padding = padding;
  return layer;
}

inline Layer dropout(double rate, const std::string& id = "dropout") {
  Layer layer = make_layer(LayerType::kDropout, id);
  layer.params.rate = rate;
  return layer;
}

inline Layer concat(std::int64_t axis) {
  Layer layer = make_layer(LayerType::kConcat, "concat");
  layer.params.axis = axis;
  return layer;
}

inline Layer slice(std::int64_t axis, std::int64_t start, std::int64_t size) {
  Layer layer = make_layer(LayerType::kSlice, "slice");
  layer.params.axis = axis;
  layer.params.slice_start = start;
  layer.params.slice_size = size;
  return layer;
}

inline Layer reshape(Shape target) {
  Layer layer = make_layer(LayerType::kReshape, "reshape");
  layer.params.shape = std::move(target);
  return layer;
}

// Uniform in [-1, 1) from a seeded stream.
// A kernel of `layer` for these per-sample input shapes, with a fixed seed.
inline std::unique_ptr<Kernel> kernel_for(const Layer& layer, const std::vector<Shape>& shapes,
                                          DType dtype = DType::kFp32) {
  return make_kernel(layer, shapes, dtype, 7);
}

inline Tensor random_tensor(Shape shape, std::uint64_t seed) {
  Rng rng(seed);
  Tensor tensor(std::move(shape));
  for (float& value : tensor.values())
    value = static_cast<float>(2.0 * rng.uniform() - 1.0);
  return tensor;
}

// A tensor's values, to compare with a list.
inline std::vector<float> values_of(const Tensor& tensor) {
  return {tensor.values().begin(), tensor.values().end()};
}

inline std::vector<GradientAccumulator> sum_accumulators(const Kernel& kernel) {
  std::vector<GradientAccumulator> accumulators;
  for (const ParameterSpec& spec : kernel.parameters())
    accumulators.emplace_back(spec.shape, kernel.dtype(), GradientReduction::kSum);
  return accumulators;
}

inline std::vector<const Tensor*> pointers(const std::vector<Tensor>& tensors) {
  std::vector<const Tensor*> result;
  for (const Tensor& tensor : tensors)
    result.push_back(&tensor);
  return result;
}

// How finely a gradient is checked against central differences of the fp32 forward.
struct Differences {
  double step;
  double tolerance;  // |analytic - numeric| <= tolerance (1 + |numeric|)
};

// fp32: with h = 1e-2 the rounding noise of the objective (~1e-6) gives ~5e-5 and the
// truncation error h^2 f'''/6 stays below ~2e-5, so an analytic gradient within
// 1e-3 + 1e-3 |numeric| is right; a wrong one is off by O(1). Inputs stay further than h from
// the kinks of relu and max pooling.
inline constexpr Differences kFp32Differences{1e-2, 1e-3};

// fp16: the analytic gradients come from the fp16 kernel, whose saved tensors and gradients
// are rounded to binary16 (relative error 2^-11 each), and the differences from the fp32
// forward at the same binary16 inputs and parameters, so they measure the true gradient. The
// largest error over the fp16 cases is 1.1e-3 (1 + |numeric|); 5e-3 fails a tanh derivative
// off by 5%.
inline constexpr Differences kFp16Differences{1e-2, 5e-3};

inline const Differences& differences_for(DType dtype) {
  return dtype == DType::kFp16 ? kFp16Differences : kFp32Differences;
}

// The objective sum(output * probe), whose gradient with respect to the output is `probe`.
inline double objective(const Kernel& kernel, const std::vector<Tensor>& inputs,
                        const std::vector<Tensor>& params, const Tensor& probe,
                        const ForwardContext& context) {
  const Tensor output = kernel.forward(pointers(inputs), params, context).output;
  double sum = 0.0;
  for (std::int64_t i = 0; i < output.elements(); ++i)
    sum += static_cast<double>(output[i]) * probe[i];
  return sum;
}

// Compares d(objective)/d(values[i]) by central differences with `analytic` for every i.
template <typename Objective>
void check_against_differences(Tensor& values, const Tensor& analytic, Objective evaluate,
                               const std::string& what,
                               const Differences& differences = kFp32Differences) {
  REQUIRE(analytic.shape() == values.shape());
  const double h = differences.step;
  for (std::int64_t i = 0; i < values.elements(); ++i) {
    const float original = values[i];
    values[i] = static_cast<float>(original + h);
    const double plus = evaluate();
    values[i] = static_cast<float>(original - h);
    const double minus = evaluate();
    values[i] = original;
    const double numeric = (plus - minus) / (2 * h);
    INFO(what << " element " << i);
    CHECK(std::abs(analytic[i] - numeric) <=
          differences.tolerance + differences.tolerance * std::abs(numeric));
  }
}

// Checks the gradients of the first `differentiable` inputs (all by default; token ids and
// masks take none) and of every parameter of `layer` (random, bias included) against central
// differences of the fp32 forward; in fp16 the inputs and parameters are first rounded to
// binary16, as a fp16 pipeline holds them.
inline void check_gradients(const Layer& layer, std::vector<Tensor> inputs,
                            const std::vector<int>& labels = {},
                            std::size_t differentiable = SIZE_MAX, DType dtype = DType::kFp32) {
  std::vector<Shape> shapes;
  for (const Tensor& input : inputs)
    shapes.push_back(input.sample_shape());
  const auto kernel = make_kernel(layer, shapes, dtype, 7);
  std::vector<Tensor> params;
  for (const ParameterSpec& spec : kernel->parameters())
    params.push_back(random_tensor(spec.shape, 100 + params.size()));
  for (Tensor& tensor : inputs)
    round_to_dtype(tensor, dtype);
  for (Tensor& tensor : params)
    round_to_dtype(tensor, dtype);
  const ForwardContext context{0, 0, labels};
  const ForwardResult forward = kernel->forward(pointers(inputs), params, context);
  const Tensor probe = random_tensor(forward.output.shape(), 99);
  auto accumulators = sum_accumulators(*kernel);
  const std::vector<Tensor> gradients =
      kernel->backward(probe, forward.saved, params, accumulators);
  REQUIRE(gradients.size() == inputs.size());
  const auto exact = make_kernel(layer, shapes, DType::kFp32, 7);
  const auto evaluate = [&] { return objective(*exact, inputs, params, probe, context); };
  const Differences& differences = differences_for(dtype);
  for (std::size_t k = 0; k < std::min(differentiable, inputs.size()); ++k)
    check_against_differences(inputs[k], gradients[k], evaluate, "input " + std::to_string(k),
                              differences);
  for (std::size_t p = 0; p < params.size(); ++p) {
    check_against_differences(params[p], accumulators[p].sum(), evaluate,
                              "parameter " + std::to_string(p), differences);
  }
}

}  // namespace ipusim::models::testing
