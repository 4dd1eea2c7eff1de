// Follows graphcore/poplibs @7eac0f26 lib/poplin/PerformanceEstimation.hpp: the 1x1 vertex's
// getConvPartial1x1SupervisorInnerLoopCycleEstimateHalfFloat and ...OuterLoopCycleEstimate
// HalfFloat, the nx1 vertex's getConvPartialnx1WorkerCycles, ...KernelLoopCycleEstimate and
// ...OuterLoopCycleEstimateHalfFloat, and the weight loads of
// getConvPartialAmpSupervisorWeightLoadCycleEstimate. The constants are the estimators'.

#include "sim/pricing/amp_vertex.hpp"

#include <algorithm>
#include <limits>

namespace ipusim::sim::pricing {
namespace {

// Half inputs with 16 conv units run the float-partials code path.
bool common_half_float_path(const TileTarget& target, bool float_acts, bool float_partials) {
  return (!float_acts && target.conv_units == 16) || float_partials;
}

// conv1x1WorkerRetentionSavings: (total, per input-channel pass).
std::pair<std::int64_t, std::int64_t> retention_1x1(const TileTarget& target, bool float_acts,
                                                    bool float_partials) {
  if (!float_acts && (float_partials || target.conv_units == 16))
    return {7, 3};
  return {0, 0};
}

std::int64_t worker_1x1_cycles(const TileTarget& target, bool float_acts, bool float_partials,
                               bool zeroing, std::int64_t elems) {
  const std::int64_t core = float_acts ? 8 : 4;
  const std::int64_t zero_per_group = float_acts && target.conv_units == 16 ? 8
                                      : float_partials                      ? 4
                                                                            : 2;
  const bool common = common_half_float_path(target, float_acts, float_partials);
  const std::int64_t z = zeroing ? 1 : 0;
  std::int64_t cycles = 0;
  switch (elems) {
    case 0:
      cycles = float_acts ? 24 : common ? 20 + (zeroing ? 1 : 2) : 24;
      break;
    case 1:
      cycles = float_acts ? 47 + (2 + zero_per_group) * z
               : common   ? 31 + (zeroing ? 1 : 2)
                          : 39 + (2 + zero_per_group) * z;
      break;
    case 2:
      cycles = float_acts ? 46 + (2 + zero_per_group * 2) * z
               : common   ? 40 + (zeroing ? 1 : 2)
                          : 40 + (2 + zero_per_group * 2) * z;
      break;
    default:
      cycles = float_acts ? 46 + (2 + zero_per_group * elems) * z + (elems - 3) * core
               : common   ? (zeroing ? 37 : 38) + (elems - 3) * core
                          : 41 + (2 + zero_per_group * elems) * z + (elems - 3) * core;
  }
  return cycles - retention_1x1(target, float_acts, float_partials).first;
}

// The slowest worker times the workers (a barrel-threaded tile issues for each in turn), at
// least the fastest's plus the 14 cycles of tagging it.
std::int64_t inner_1x1_cycles(const TileTarget& target, bool float_acts, bool float_partials,
                              bool zeroing, const Worklists& lists) {
  std::int64_t most = 0;
  std::int64_t least = std::numeric_limits<std::int64_t>::max();
  for (const auto& list : lists) {
    const std::int64_t cycles = list.empty() ? 0
                                             : worker_1x1_cycles(target, float_acts, float_partials,
                                                                 zeroing, first_width(list));
    most = std::max(most, target.workers * cycles);
    least = std::min(least, target.workers * cycles);
  }
  return std::max(most, least + 14);
}

std::int64_t weight_load_cycles(const TileTarget& target, models::DType input, int filter_height) {
  int bytes_per_cycle = target.coefficient_load_bytes_per_cycle;
  if (!target.use_128bit_conv_unit_load)
    bytes_per_cycle /= 2;
  if (filter_height == 4 && bytes_per_cycle > 8)
    bytes_per_cycle /= 2;
  const std::int64_t weight_bytes = target.amp_input_channels(input) * models::dtype_bytes(input);
  return target.conv_units * weight_bytes / bytes_per_cycle;
}

// One worklist entry of `elems` output positions.
std::int64_t nx1_entry_cycles(bool float_acts, std::int64_t extra_stride, std::int64_t elems) {
  const std::int64_t core = float_acts ? 8 : 4;
  switch (elems) {
    case 0:
      return 17;
    case 1:
      return float_acts ? 33 : 29;
    case 2:
      return float_acts ? 44 : 33 + extra_stride;
    default:
      return (float_acts ? 45 : 34) + (elems - 3) * core;
  }
}

std::int64_t worker_nx1_cycles(const TileTarget& target, bool float_acts, bool float_partials,
                               const Worklist& list) {
  const bool hh16 = !float_acts && !float_partials && target.conv_units == 16;
  const bool hf8 = !float_acts && float_partials && target.conv_units == 8;
  const std::int64_t extra_stride = hh16 || hf8 ? 1 : 0;
  const std::int64_t retention = 9;  // convnx1WorkerRetentionSavings
  std::int64_t cycles = 17 + (float_partials ? 0 : 1);
  // Each entry: 3 cycles for its pointers and stride, the rows, less what the state retains.
  for (const RowRun& run : list)
    cycles += run.count * (3 + nx1_entry_cycles(float_acts, extra_stride, run.width) - retention);
  return cycles;
}

}  // namespace

std::int64_t amp_1x1_cycles(const TileTarget& target, models::DType input, models::DType partials,
                            const VertexWork& work) {
  const bool float_acts = is_float(input);
  const bool float_partials = is_float(partials);
  const std::int64_t with_zeroing =
      inner_1x1_cycles(target, float_acts, float_partials, true, work.worklists);
  const std::int64_t without_zeroing =
      inner_1x1_cycles(target, float_acts, float_partials, false, work.worklists);
  const std::int64_t passes =
      (work.out_chans_per_group + target.conv_units - 1) / target.conv_units;
  const auto retention = retention_1x1(target, float_acts, float_partials);
  const std::int64_t loads = weight_load_cycles(target, input, 1);
  const std::int64_t common = common_half_float_path(target, float_acts, float_partials) ? 1 : 0;
  const std::int64_t groups = work.conv_groups;
  const std::int64_t ins = work.in_groups;
  const std::int64_t outs = work.out_groups;
  const std::int64_t supervisor = 50;
  const std::int64_t out_pass_overhead = 7;
  const std::int64_t excess_in_chan = 1;
  return supervisor + target.workers * (retention.first + retention.second * (ins * groups - 1)) +
         groups * (12 + common +
                   (ins - 1) * (15 - common + excess_in_chan +
                                outs * (19 + passes * (6 + loads + without_zeroing))) +
                   (10 + excess_in_chan +
                    outs * (19 - common + passes * (out_pass_overhead + loads + with_zeroing))));
}

std::int64_t amp_nx1_cycles(const TileTarget& target, models::DType input, models::DType partials,
                            const VertexWork& work) {
  const bool float_acts = is_float(input);
  const bool float_partials = is_float(partials);
  std::int64_t most = 0;
  std::int64_t least = std::numeric_limits<std::int64_t>::max();
  for (const auto& list : work.worklists) {
    const std::int64_t cycles =
        target.workers * worker_nx1_cycles(target, float_acts, float_partials, list);
    most = std::max(most, cycles);
    least = std::min(least, cycles);
  }
  const std::int64_t passes =
      (work.out_chans_per_group + target.conv_units - 1) / target.conv_units;
  // Filter height 1: the weights' loads and 15 more cycles each kernel position and pass.
  const std::int64_t innermost = weight_load_cycles(target, input, 1) + 15 + 3;
  const std::int64_t kernel_loop =
      work.kernel_height * (14 + work.kernel_width * (17 - 5 + passes * innermost)) +
      std::max(most, least + 9) * passes * work.kernel_height * work.kernel_width;
  const std::int64_t groups = work.conv_groups;
  const std::int64_t ins = work.in_groups;
  const std::int64_t outs = work.out_groups;
  const std::int64_t zero_retention = float_partials ? 9 : 10;
  return 109 + target.workers * 9 + target.workers * zero_retention +
         groups * (outs * 17 + (outs - 1) * 6 + 1) + (groups - 1) * 6 + 1 +
         groups * (16 + ins * (14 + outs * (14 + kernel_loop)));
}

}  // namespace ipusim::sim::pricing
