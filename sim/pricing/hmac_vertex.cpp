// Follows graphcore/poplibs @7eac0f26 lib/poplin/PerformanceEstimation.hpp:
// getDenseDotProductCycles, getConvPartialHorizontalMacCycleEstimate and the supervisor's inner
// and outer loops; the constants are the estimators'.

#include "sim/pricing/hmac_vertex.hpp"

#include <algorithm>
#include <limits>

namespace ipusim::sim::pricing {
namespace {

std::int64_t dot_product_cycles(int vector_width, bool float_acts, bool float_partials,
                                std::int64_t size) {
  const std::int64_t acts_per_64_bits = float_acts ? 2 : 4;
  const bool half_half = !float_acts && !float_partials;
  const std::int64_t out_chans = half_half ? 2 : 1;
  const std::int64_t inner = 3 * out_chans + (half_half ? 1 : 0) + 3 + 1;
  for (std::int64_t width = vector_width; width >= 1; width /= 2) {
    if (size % width != 0)
      continue;
    const std::int64_t per_width = width >= acts_per_64_bits ? 1 : 2;
    const std::int64_t additional = width < acts_per_64_bits ? out_chans : 0;
    return inner + additional + (size / width) * per_width - (float_acts ? 0 : 1);
  }
  return inner;
}

std::int64_t row_cycles(bool float_acts, bool float_partials, const VertexWork& work,
                        const Worklist& sizes, bool use_1x1) {
  const std::int64_t retention = use_1x1 ? 15 : float_acts ? 0 : 6;
  std::int64_t out_chans = work.out_chans_per_group;
  if (!float_partials)
    out_chans = (out_chans + 1) / 2;
  const int width = float_acts ? 2 : 4;
  const std::int64_t dot =
      dot_product_cycles(width, float_acts, float_partials, work.in_chans_per_group);
  std::int64_t cycles = 16 - retention;
  for (const RowRun& run : sizes) {
    const std::int64_t size = run.width;
    if (size == 0)
      cycles += run.count * 7;
    else if (use_1x1 && out_chans == 1)
      cycles += run.count * (13 + 1 + size * (2 + dot));
    else
      cycles += run.count * ((use_1x1 ? 13 : 19) + size * (7 + out_chans * dot));
  }
  return cycles;
}

}  // namespace

std::int64_t hmac_cycles(const TileTarget& target, models::DType input, models::DType partials,
                         const VertexWork& work) {
  const bool float_acts = input == models::DType::kFp32;
  const bool float_partials = partials == models::DType::kFp32;
  const bool use_1x1 =
      float_partials && !float_acts && work.kernel_height == 1 && work.kernel_width == 1;
  const std::int64_t positions = work.kernel_height * work.kernel_width;
  std::int64_t most = 0;
  std::int64_t least = std::numeric_limits<std::int64_t>::max();
  for (const auto& list : work.worklists) {
    const std::int64_t cycles =
        target.workers *
        (positions * row_cycles(float_acts, float_partials, work, list, use_1x1) + 16);
    most = std::max(most, cycles);
    least = std::min(least, cycles);
  }
  const std::int64_t inner = std::max(most, least);
  const std::int64_t overhead = (float_acts ? 58 : 65) - (use_1x1 ? 10 : 0);
  const std::int64_t zero_retention = float_partials ? 9 : 10;
  // poplibs passes the partials' type where the retention takes the activations' (sic).
  const std::int64_t hzmac_retention = use_1x1 ? 15 : float_partials ? 0 : 6;
  return overhead + target.workers * zero_retention + target.workers * hzmac_retention +
         work.conv_groups * (23 + work.in_groups * (15 + work.out_groups * (10 + inner)));
}

}  // namespace ipusim::sim::pricing
