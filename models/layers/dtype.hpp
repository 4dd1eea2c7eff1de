#pragma once
// Element types of tensors, weights, accumulators, optimizer state and stashes.

#include <cstdint>
#include <string>

namespace ipusim::models {

// fp8 is a storage type only: the stash of inter-stage activations (pipeline.stash_dtype), cast
// from the compute dtype before stashing and back after, as Graphcore's MLPerf v2.0 BERT did
// (PopART's CastToFp8 and CastFromFp8). Nothing computes in it.
enum class DType { kFp32, kFp16, kFp8 };

constexpr std::int64_t dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::kFp32:
      return 4;
    case DType::kFp16:
      return 2;
    case DType::kFp8:
      return 1;
  }
  return 4;
}
inline std::string dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFp32:
      return "fp32";
    case DType::kFp16:
      return "fp16";
    case DType::kFp8:
      return "fp8";
  }
  return "fp32";
}

}  // namespace ipusim::models
