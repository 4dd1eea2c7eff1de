#include "models/kernels/eigen_blocking.hpp"

#include <mutex>

#include <Eigen/Core>

namespace ipusim::models {

void pin_eigen_blocking() {
  // Any fixed sizes would do; these (48 KiB L1d, 2 MiB L2, 32 MiB L3, a current Xeon core's)
  // keep the numbers ipusim has always printed, goldens and test figures included.
  constexpr std::ptrdiff_t kL1Bytes = 48 * 1024;
  constexpr std::ptrdiff_t kL2Bytes = 2 * 1024 * 1024;
  constexpr std::ptrdiff_t kL3Bytes = 32 * 1024 * 1024;
  static std::once_flag pinned;
  std::call_once(pinned, [] { Eigen::setCpuCacheSizes(kL1Bytes, kL2Bytes, kL3Bytes); });
}

}  // namespace ipusim::models
