#pragma once
// Builders shared by the kernel tests: layers by type, seeded random tensors, one-call
// forward and backward.

#include <cstdint>
#include <string>
#include <vector>

#include "models/init.hpp"
#include "models/kernels.hpp"

namespace ipusim::models::testing {

inline Layer make_layer(LayerType type, const std::string& id = "layer") {
  Layer layer;
  layer.id = id;
  layer.type = type;
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
inline Tensor random_tensor(Shape shape, std::uint64_t seed) {
  Rng rng(seed);
  Tensor tensor(std::move(shape));
  for (float& value : tensor.values())
    value = static_cast<float>(2.0 * rng.uniform() - 1.0);
  return tensor;
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

}  // namespace ipusim::models::testing
