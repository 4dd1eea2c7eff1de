// Follows graphcore/poplibs @7eac0f26: lib/poplin/ConvReducePlan.cpp (getNumReduceStages,
// getMultiStageReducePlanAndCost), lib/poplin/PerformanceEstimation.hpp (estimateConvReduceCycles,
// getReduceCycleEstimate, estimateCastCycles) and lib/poplin/ConvModel.cpp
// (addExchangeCycleEstimates: partialSumExchangeCycleEstimate).

#include "sim/pricing/reduce_vertex.hpp"

#include <algorithm>
#include <cmath>

namespace ipusim::sim::pricing {
namespace {

int stage_count(std::int64_t depth) {
  if (depth >= 125)
    return 3;
  return depth >= 16 ? 2 : 1;
}

std::pair<std::vector<std::int64_t>, double> plan_and_cost(std::int64_t depth, int stages) {
  if (stages == 1)
    return {{}, double(depth)};
  const auto down = std::int64_t(std::pow(double(depth), (stages - 1.0) / stages));
  auto [down_plan, down_cost] = plan_and_cost(down, stages - 1);
  down_cost += float(depth) / float(down);
  auto [up_plan, up_cost] = plan_and_cost(down + 1, stages - 1);
  up_cost += float(depth) / float(down + 1);
  if (down_cost < up_cost) {
    down_plan.insert(down_plan.begin(), down);
    return {down_plan, down_cost};
  }
  up_plan.insert(up_plan.begin(), down + 1);
  return {up_plan, up_cost};
}

// Partials in one chunk only below a sixteenth of the tile's memory, counted in whole memory
// elements (ConvReducePlan.hpp, checkPartialsSizeForSingleInputReduce). The element's size is a
// guess: 16 KiB.
bool fits_single_input(const TileTarget& target, std::int64_t bytes) {
  const std::int64_t element = 16 * 1024;
  return ceil_div(bytes, element) * element < target.tile_memory_bytes / 16;
}

std::int64_t reduce_vertex_cycles(const TileTarget& target, std::int64_t out_size,
                                  std::int64_t partials_size, bool out_float, bool partials_float,
                                  bool single_input) {
  const std::int64_t workers = target.workers;
  const std::int64_t acc_width = partials_float ? 4 : 8;
  const std::int64_t in_datapath = target.data_path_bits / ((partials_float ? 4 : 2) * 8);
  if (single_input) {
    const std::int64_t cycles_per_loop = acc_width / std::min(acc_width, in_datapath);
    const std::int64_t loops = out_size / acc_width;
    const std::int64_t per_worker = ceil_div(loops, workers);
    const std::int64_t outer = partials_float ? (out_float ? 8 : 7) : (out_float ? 10 : 9);
    return (20 + (cycles_per_loop * partials_size + outer) * per_worker) * workers + 33;
  }
  std::int64_t cycles = 32;
  const std::int64_t cycles_per_loop = acc_width / std::min(acc_width, in_datapath) + 1;
  std::int64_t loops = out_size / acc_width;
  for (std::int64_t bit = 1; bit < acc_width; bit <<= 1)
    loops += (out_size & bit) ? 1 : 0;
  std::int64_t per_worker = loops / workers;
  if (loops % workers) {
    if (out_size & (acc_width - 1))
      cycles += 2 * partials_size + (partials_float ? 13 : 11);
    else
      ++per_worker;
  }
  const std::int64_t tail = out_float ? (partials_float ? 7 : 9) : (partials_float ? 6 : 8);
  cycles += (cycles_per_loop * partials_size + tail) * per_worker;
  return cycles * workers;
}

std::int64_t cast_cycles(const TileTarget& target, std::int64_t outputs, bool partials_float,
                         bool out_float) {
  const std::int64_t per_worker = ceil_div(outputs, target.workers);
  const std::int64_t load = ceil_div(per_worker, partials_float ? 2 : 4);
  const std::int64_t write = ceil_div(per_worker, out_float ? 2 : 4);
  return (std::max(load, write) + 26) * target.workers;
}

}  // namespace

std::vector<std::int64_t> reduce_stage_factors(std::int64_t depth) {
  return plan_and_cost(depth, stage_count(depth)).first;
}

int reduce_compute_sets(std::int64_t depth) {
  return depth <= 1 ? 0 : int(reduce_stage_factors(depth).size()) + 1;
}

std::int64_t conv_reduce_cycles(const TileTarget& target, std::int64_t outputs, std::int64_t depth,
                                models::DType output, models::DType partials) {
  const bool out_float = is_float(output);
  const bool partials_float = is_float(partials);
  if (depth <= 1)
    return out_float == partials_float ? 0
                                       : cast_cycles(target, outputs, partials_float, out_float);
  const std::int64_t fast_width = partials_float ? 4 : 8;
  const std::int64_t partial_bytes = models::dtype_bytes(partials);
  std::int64_t remaining = depth;
  std::int64_t size = outputs * depth;
  std::int64_t cycles = 0;
  const auto stage = [&](std::int64_t stage_depth, bool last) {
    const bool single = size % fast_width == 0 &&
                        fits_single_input(target, (stage_depth - 1) * size * partial_bytes);
    cycles += reduce_vertex_cycles(target, size, stage_depth - (single ? 1 : 0),
                                   last ? out_float : partials_float, partials_float, single);
  };
  for (const std::int64_t factor : reduce_stage_factors(depth)) {
    const std::int64_t stage_depth = ceil_div(remaining, factor);
    remaining = ceil_div(remaining, stage_depth);
    size = ceil_div(size, stage_depth);
    stage(stage_depth, remaining == 1);
  }
  if (remaining > 1) {
    size = ceil_div(size, remaining);
    stage(remaining, true);
  }
  return cycles;
}

std::int64_t reduce_later_exchange_cycles(const TileTarget& target, std::int64_t partials,
                                          std::int64_t depth, models::DType partials_type) {
  if (depth <= 1)
    return 0;
  const std::int64_t bytes = models::dtype_bytes(partials_type);
  const auto cycles_of = [&](std::int64_t elements) {
    return ceil_div(elements * bytes, target.exchange_bytes_per_cycle);
  };
  std::int64_t remaining = depth;
  std::int64_t size = partials;
  std::int64_t cycles = 0;
  bool first = true;
  for (const std::int64_t factor : reduce_stage_factors(depth)) {
    if (!first)
      cycles += cycles_of(size);
    const std::int64_t stage_depth = ceil_div(remaining, factor);
    size = ceil_div(size, stage_depth);
    remaining = ceil_div(remaining, stage_depth);
    first = false;
  }
  if (remaining > 1 && !first)
    cycles += cycles_of(size);
  return cycles;
}

}  // namespace ipusim::sim::pricing
