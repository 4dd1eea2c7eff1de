#pragma once
// Tensor: a dense fp32 array with a shape whose first dimension is the batch (channels-last,
// N,H,W,C). It is a plain value: copying copies the numbers.
//
// Storage is aligned to 64 bytes, Eigen's widest packet (AVX-512), so that every kernel sees
// its operands with the same alignment whatever the allocation: Eigen picks vectorised or scalar
// code paths by alignment, and the pipeline must reproduce the reference bit for bit. The
// allocator is this header's own, so that the many files that hold tensors do not compile
// Eigen's headers.
//
// fp16 emulation: ipusim computes in fp32 and rounds every tensor a kernel produces (outputs,
// saved pre-activations, gradients) to the nearest binary16 value, ties to even, with overflow to
// infinity. This models the rounding of fp16 storage, not the fp16 arithmetic inside a dot product.

#include <cstddef>
#include <cstdint>
#include <new>
#include <span>
#include <vector>

#include "models/layers/dtype.hpp"
#include "models/layers/layer.hpp"
#include "models/layers/shape_inference.hpp"

namespace ipusim::models {

// Allocates on 64-byte boundaries (see the top of this file).
template <typename T>
struct PacketAlignedAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlignment{64};

  PacketAlignedAllocator() = default;
  template <typename U>
  PacketAlignedAllocator(const PacketAlignedAllocator<U>&) noexcept {}

  T* allocate(std::size_t count) {
    return static_cast<T*>(::operator new(count * sizeof(T), kAlignment));
  }
  // Unsized: clang 14 leaves sized deallocation off by default.
  void deallocate(T* values, std::size_t) noexcept { ::operator delete(values, kAlignment); }
  friend bool operator==(const PacketAlignedAllocator&, const PacketAlignedAllocator&) {
    return true;
  }
};

using TensorStorage = std::vector<float, PacketAlignedAllocator<float>>;

// A value-semantic fp32 array with its shape (see the top of this file).
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Shape shape, float fill = 0.0f);
  Tensor(Shape shape, std::span<const float> values);

  const Shape& shape() const { return shape_; }
  std::int64_t rank() const { return static_cast<std::int64_t>(shape_.size()); }
  std::int64_t dim(std::int64_t axis) const;
  std::int64_t elements() const { return static_cast<std::int64_t>(values_.size()); }
  std::int64_t batch() const { return dim(0); }
  Shape sample_shape() const { return Shape(shape_.begin() + 1, shape_.end()); }
  std::int64_t sample_elements() const { return element_count(sample_shape()); }

  float* data() { return values_.data(); }
  const float* data() const { return values_.data(); }
  std::span<float> values() { return values_; }
  std::span<const float> values() const { return values_; }
  float& operator[](std::int64_t index) { return values_[static_cast<std::size_t>(index)]; }
  float operator[](std::int64_t index) const { return values_[static_cast<std::size_t>(index)]; }

  // The same numbers under another shape with the same element count.
  Tensor reshaped(Shape shape) const&;
  Tensor reshaped(Shape shape) &&;

 private:
  Shape shape_;
  TensorStorage values_;
};

// True when both tensors have the same shape and the same bits in every element (so NaNs with
// equal payloads compare equal and -0 differs from +0).
bool bit_identical(const Tensor& a, const Tensor& b);

float round_to_fp16(float value);

// Rounds every element to `dtype` (nothing to do for fp32).
void round_to_dtype(std::span<float> values, DType dtype);
inline void round_to_dtype(Tensor& tensor, DType dtype) {
  round_to_dtype(tensor.values(), dtype);
}

}  // namespace ipusim::models
