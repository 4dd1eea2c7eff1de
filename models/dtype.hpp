#pragma once
// Element types of tensors, weights and accumulators.

#include <cstdint>
#include <string>

namespace ipusim::models {

enum class DType { kFp32, kFp16 };

constexpr std::int64_t dtype_bytes(DType dtype) {
  return dtype == DType::kFp16 ? 2 : 4;
}
inline std::string dtype_name(DType dtype) {
  return dtype == DType::kFp16 ? "fp16" : "fp32";
}

}  // namespace ipusim::models
