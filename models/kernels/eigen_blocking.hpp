#pragma once
// Eigen's matrix products split the inner dimension into blocks sized from the CPU's cache
// sizes, which it reads at run time; a different block size sums in a different order and
// changes the last bits of the result. Pinning the sizes makes every kernel, and so every
// report, byte-identical on any x86-64 machine.

namespace ipusim::models {

// Fixes Eigen's cache sizes (once, thread-safe); call before the first matrix product.
void pin_eigen_blocking();

}  // namespace ipusim::models
