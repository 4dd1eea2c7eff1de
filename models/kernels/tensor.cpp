#include "models/kernels/tensor.hpp"

#include <bit>
#include <cstring>
#include <utility>

#include "sim/core/error.hpp"

namespace ipusim::models {

Tensor::Tensor(Shape shape, float fill)
    : shape_(std::move(shape)), values_(static_cast<std::size_t>(element_count(shape_)), fill) {}

Tensor::Tensor(Shape shape, std::span<const float> values)
    : shape_(std::move(shape)), values_(values.begin(), values.end()) {
  IPUSIM_CHECK(element_count(shape_) == elements());
}

std::int64_t Tensor::dim(std::int64_t axis) const {
  IPUSIM_CHECK(axis >= 0 && axis < rank());
  return shape_[static_cast<std::size_t>(axis)];
}

Tensor Tensor::reshaped(Shape shape) const& {
  Tensor copy = *this;
  return std::move(copy).reshaped(std::move(shape));
}

Tensor Tensor::reshaped(Shape shape) && {
  IPUSIM_CHECK(element_count(shape) == elements());
  shape_ = std::move(shape);
  return std::move(*this);
}

bool bit_identical(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.elements()) * sizeof(float)) ==
             0;
}

float round_to_fp16(float value) {
  constexpr std::uint32_t kSignBit = 0x80000000u;
  constexpr std::uint32_t kInfinityBits = 0x7f800000u;
  constexpr std::uint32_t kHalfwayPastMaxBits = 0x477ff000u;  // 65520: ties to even go to inf
  constexpr std::uint32_t kSmallestNormalBits = 0x38800000u;  // 2^-14
  const auto bits = std::bit_cast<std::uint32_t>(value);
  const std::uint32_t sign = bits & kSignBit;
  const std::uint32_t magnitude = bits ^ sign;
  if (magnitude >= kInfinityBits)
    return value;
  if (magnitude >= kHalfwayPastMaxBits)
    return std::bit_cast<float>(sign | kInfinityBits);
  if (magnitude < kSmallestNormalBits) {
    // Floats in [0.5, 1) are spaced 2^-24 apart, the spacing of fp16 subnormals, so adding 0.5
    // makes the FPU round to the subnormal grid with ties to even.
    const float rounded = (std::bit_cast<float>(magnitude) + 0.5f) - 0.5f;
    return std::bit_cast<float>(sign | std::bit_cast<std::uint32_t>(rounded));
  }
  // Keep 10 of the 23 mantissa bits, ties to even; a carry correctly bumps the exponent.
  const std::uint32_t odd = (magnitude >> 13) & 1u;
  const std::uint32_t rounded = (magnitude + 0x0fffu + odd) & ~0x1fffu;
  return std::bit_cast<float>(sign | rounded);
}

void round_to_dtype(std::span<float> values, DType dtype) {
  if (dtype == DType::kFp32)
    return;
  // Numeric mode never stores fp8: it refuses an fp8 stash (numeric_support) before a kernel
  // runs.
  IPUSIM_CHECK(dtype == DType::kFp16);
  for (float& value : values)
    value = round_to_fp16(value);
}

}  // namespace ipusim::models
