#include "models/kernels/tensor.hpp"

#include <cmath>
#include <limits>

#include <catch2/catch.hpp>

using namespace ipusim::models;

TEST_CASE("fp16 rounding keeps representable values and rounds to the nearest binary16") {
  CHECK(round_to_fp16(65504.0f) == 65504.0f);  // the largest finite half
  CHECK(round_to_fp16(1.0f) == 1.0f);
  CHECK(round_to_fp16(0.1f) == 0.0999755859375f);
  CHECK(round_to_fp16(-3.14159265f) == -3.140625f);
  CHECK(round_to_fp16(0x1.0p-14f) == 0x1.0p-14f);  // the smallest normal half
  CHECK(round_to_fp16(0x1.0p-24f) == 0x1.0p-24f);  // the smallest subnormal half
  CHECK(round_to_fp16(0x1.8p-20f) == 0x1.8p-20f);  // subnormal, exactly representable
}

TEST_CASE("fp16 rounding breaks ties to even") {
  CHECK(round_to_fp16(1.0f + 0x1.0p-11f) == 1.0f);                  // 1 is even
  CHECK(round_to_fp16(1.0f + 3 * 0x1.0p-11f) == 1.0f + 0x1.0p-9f);  // 1 + 2^-10 is odd
  CHECK(round_to_fp16(-(1.0f + 0x1.0p-11f)) == -1.0f);
  CHECK(round_to_fp16(0x1.0p-25f) == 0.0f);            // half the smallest subnormal
  CHECK(round_to_fp16(3 * 0x1.0p-25f) == 0x1.0p-23f);  // 1.5 subnormals go to 2
  CHECK(round_to_fp16(2047.5f) == 2048.0f);            // spacing 1 above 1024; carries
  CHECK(round_to_fp16(2046.5f) == 2046.0f);
}

TEST_CASE("fp16 rounding overflows to infinity from 65520 on") {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  CHECK(round_to_fp16(65519.99f) == 65504.0f);
  CHECK(round_to_fp16(65520.0f) == kInf);
  CHECK(round_to_fp16(-65520.0f) == -kInf);
  CHECK(round_to_fp16(1e10f) == kInf);
  CHECK(round_to_fp16(kInf) == kInf);
  CHECK(std::isnan(round_to_fp16(std::numeric_limits<float>::quiet_NaN())));
  CHECK(std::signbit(round_to_fp16(-0x1.0p-30f)));  // underflows to -0
}

TEST_CASE("rounding a tensor to fp32 leaves it alone and to fp16 rounds every element") {
  Tensor tensor({2}, std::vector<float>{0.1f, 70000.0f});
  round_to_dtype(tensor, DType::kFp32);
  CHECK(tensor[0] == 0.1f);
  round_to_dtype(tensor, DType::kFp16);
  CHECK(tensor[0] == 0.0999755859375f);
  CHECK(std::isinf(tensor[1]));
}

TEST_CASE("a tensor is a value with the batch as its first dimension") {
  Tensor a({2, 3, 4}, 1.5f);
  CHECK(a.elements() == 24);
  CHECK(a.batch() == 2);
  CHECK(a.sample_shape() == Shape{3, 4});
  CHECK(a.sample_elements() == 12);
  Tensor b = a;
  b[0] = 2.0f;
  CHECK(a[0] == 1.5f);
  const Tensor c = b.reshaped({2, 12});
  CHECK(c.shape() == Shape{2, 12});
  CHECK(c[0] == 2.0f);
  CHECK_FALSE(bit_identical(a, b));
  CHECK_FALSE(bit_identical(b, c));
  CHECK(bit_identical(b, c.reshaped({2, 3, 4})));
  CHECK_FALSE(bit_identical(Tensor({1}, 0.0f), Tensor({1}, -0.0f)));
}

TEST_CASE("tensor storage is aligned for Eigen's widest packets") {
  for (const std::int64_t size : {1, 3, 17, 1000}) {
    const Tensor tensor({size});
    CHECK(reinterpret_cast<std::uintptr_t>(tensor.data()) % EIGEN_MAX_ALIGN_BYTES == 0);
  }
}
