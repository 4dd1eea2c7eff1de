// Follows graphcore/poplibs @7eac0f26 lib/poplin/ConvModel.cpp: addExchangeCycleEstimates (inputs
// and weights brought to each tile less the share already there, partials sent to the tiles that
// reduce them), addReduceCycleEstimate, addConvTempMemoryEstimate; ConvVertexType.cpp for the
// AMP's channel grains; ConvPlan.cpp's transforms (combineConvGroups, expandDims). The search is
// exhaustive over a thinned set of splits rather than popsolver's: every split up to 16 ways,
// every divisor, and steps of about 15% between.

#include "sim/pricing/product_planner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "sim/pricing/amp_vertex.hpp"
#include "sim/pricing/hmac_vertex.hpp"
#include "sim/pricing/reduce_vertex.hpp"

namespace ipusim::sim::pricing {
namespace {

// The ways to split `n` over at most `limit` tiles worth trying: up to 16, every divisor, the
// splits that leave each tile at most 16, steps of about 15% between, and the most; sorted.
std::vector<std::int64_t> split_candidates(std::int64_t n, std::int64_t limit) {
  const std::int64_t top = std::max<std::int64_t>(1, std::min(n, limit));
  std::vector<std::int64_t> ways;
  for (std::int64_t k = 1; k <= std::min<std::int64_t>(top, 16); ++k)
    ways.push_back(k);
  for (std::int64_t d = 1; d * d <= n && d <= top; ++d) {
    if (n % d != 0)
      continue;
    ways.push_back(d);
    if (n / d <= top)
      ways.push_back(n / d);
  }
  for (std::int64_t share = 1; share <= 16; ++share) {
    const std::int64_t k = ceil_div(n, share);
    if (k <= top && ceil_div(n, k) == share)
      ways.push_back(k);
  }
  for (double k = 16; k <= double(top); k *= 1.15)
    ways.push_back(std::int64_t(k));
  ways.push_back(top);
  std::sort(ways.begin(), ways.end());
  ways.erase(std::unique(ways.begin(), ways.end()), ways.end());
  return ways;
}

struct Grains {
  std::int64_t in = 1;   // input channels per vertex group
  std::int64_t out = 1;  // output channels per vertex group
};

Grains grains_of(const TileTarget& target, Vertex vertex, const PlanOptions& options) {
  // The horizontal MAC takes a tile's input channels at once and its output channels one (float
  // partials) or two at a time (ConvVertexType.cpp, getConvVertexHMACCandidates).
  if (vertex == Vertex::kHorizontalMac)
    return {1, is_float(options.partials) ? 1 : 2};
  return {target.amp_input_channels(options.input), target.conv_units};
}

// The input positions a tile reads for `positions` output positions in rows of `width`.
std::int64_t input_positions(const ProductShape& s, std::int64_t positions) {
  if (s.kernel_height == 1 && s.kernel_width == 1)
    return positions * s.stride * s.stride_width;
  const std::int64_t rows = ceil_div(positions, s.out_width);
  const std::int64_t cols = std::min(positions, s.out_width);
  return ((rows - 1) * s.stride + s.kernel_height) * ((cols - 1) * s.stride_width + s.kernel_width);
}

struct Candidate {
  const TileTarget& target;
  const PlanOptions& options;
  const ProductShape& s;
  Vertex vertex;
  Grains grains;
};

// The busiest tile's share as its vertex sees it.
VertexWork tile_work(const Candidate& c, std::int64_t groups, std::int64_t positions,
                     std::int64_t in_chans, std::int64_t out_chans) {
  VertexWork work;
  work.conv_groups = groups;
  work.kernel_height = c.s.kernel_height;
  work.kernel_width = c.s.kernel_width;
  const bool mac = c.vertex == Vertex::kHorizontalMac;
  work.in_groups = mac ? 1 : in_chans / c.grains.in;
  work.out_groups = out_chans / c.grains.out;
  work.in_chans_per_group = mac ? in_chans : c.grains.in;
  work.out_chans_per_group = c.grains.out;
  const std::int64_t row = c.vertex == Vertex::kAmp1x1 ? positions : c.s.out_width;
  work.worklists = split_over_workers(positions, row, c.target.workers);
  return work;
}

// The vertex's cycles on the tile, with the zeroing of its partials where poplin charges it
// apart (the 1x1 AMP vertex zeroes in its loop; the horizontal MAC's 1x1 form needs none for
// one input and one output group).
std::int64_t vertex_cycles(const Candidate& c, const VertexWork& work, std::int64_t positions) {
  const auto& o = c.options;
  const std::int64_t zeroing = zeroing_cycles(work, positions, c.target.workers);
  switch (c.vertex) {
    case Vertex::kAmp1x1:
      return amp_1x1_cycles(c.target, o.input, o.partials, work);
    case Vertex::kAmpNx1:
      return amp_nx1_cycles(c.target, o.input, o.partials, work) + zeroing;
    case Vertex::kHorizontalMac: {
      const bool one_by_one = is_float(o.partials) && !is_float(o.input) &&
                              work.kernel_height == 1 && work.kernel_width == 1;
      const bool unzeroed = one_by_one && work.in_groups == 1 && work.out_chans_per_group == 1;
      return hmac_cycles(c.target, o.input, o.partials, work) + (unzeroed ? 0 : zeroing);
    }
  }
  return 0;
}

// Inputs and weights brought to the tile, less the share already there; the partials sent on
// and reduced; the temporaries all of it needs.
void add_exchange_and_reduction(const Candidate& c, ProductPlan& plan) {
  const auto& target = c.target;
  const auto& split = plan.split;
  const VertexWork& w = plan.work;
  const std::int64_t in_chans = w.in_groups * w.in_chans_per_group;
  const std::int64_t out_chans = w.out_groups * w.out_chans_per_group;
  const std::int64_t bytes = models::dtype_bytes(c.options.input);
  const std::int64_t inputs =
      w.conv_groups * input_positions(c.s, plan.positions_per_tile) * in_chans;
  const std::int64_t weights =
      w.conv_groups * c.s.kernel_height * c.s.kernel_width * in_chans * out_chans;
  const std::int64_t bus = split.out_chans % target.tiles_per_exchange_bus == 0 ? 2 : 1;
  plan.input_exchange =
      ceil_div((inputs - inputs / split.out_chans) * bytes, target.exchange_bytes_per_cycle * bus);
  plan.weight_exchange =
      ceil_div((weights - weights / split.field) * bytes, target.exchange_bytes_per_cycle);
  const std::int64_t depth = split.in_chans;
  const models::DType result = depth > 1 ? c.options.partials : c.options.input;
  const std::int64_t partials = w.conv_groups * plan.positions_per_tile * out_chans;
  plan.partial_exchange =
      ceil_div(partials * models::dtype_bytes(result), target.exchange_bytes_per_cycle) +
      reduce_later_exchange_cycles(target, partials, depth, c.options.partials);
  plan.reduce_cycles = conv_reduce_cycles(target, ceil_div(partials, depth), depth, c.options.input,
                                          c.options.partials);
  plan.compute_sets = 1 + reduce_compute_sets(depth);
  plan.temporary_bytes =
      (inputs + weights) * bytes + partials * models::dtype_bytes(c.options.partials);
  plan.fits = double(plan.temporary_bytes) <=
              c.options.available_memory_proportion * double(target.tile_memory_bytes);
}

ProductPlan evaluate(const Candidate& c, const Partition& split) {
  const auto& s = c.s;
  ProductPlan plan;
  plan.vertex = c.vertex;
  plan.planned = s;
  plan.split = split;
  const std::int64_t positions = s.batch * s.out_height * s.out_width;
  const std::int64_t in_grains = ceil_div(s.in_chans, c.grains.in);
  const std::int64_t out_grains = ceil_div(s.out_chans, c.grains.out);
  plan.positions_per_tile = ceil_div(positions, split.field);
  plan.work = tile_work(c, ceil_div(s.groups, split.groups), plan.positions_per_tile,
                        ceil_div(in_grains, split.in_chans) * c.grains.in,
                        ceil_div(out_grains, split.out_chans) * c.grains.out);
  plan.vertex_cycles = vertex_cycles(c, plan.work, plan.positions_per_tile);
  add_exchange_and_reduction(c, plan);
  return plan;
}

// Fewer cycles first; among plans that do not fit, less memory first.
bool better(const ProductPlan& a, const ProductPlan& b) {
  if (a.fits != b.fits)
    return a.fits;
  if (!a.fits && a.temporary_bytes != b.temporary_bytes)
    return a.temporary_bytes < b.temporary_bytes;
  if (a.cycles() != b.cycles())
    return a.cycles() < b.cycles();
  return a.split.tiles() < b.split.tiles();
}

void search(const Candidate& c, std::int64_t tiles, ProductPlan& best, bool& found) {
  const auto& s = c.s;
  const std::int64_t positions = s.batch * s.out_height * s.out_width;
  const auto group_ways = split_candidates(s.groups, tiles);
  const auto in_ways = split_candidates(ceil_div(s.in_chans, c.grains.in), tiles);
  const auto out_ways = split_candidates(ceil_div(s.out_chans, c.grains.out), tiles);
  const auto field_ways = split_candidates(positions, tiles);
  const auto consider = [&](const Partition& split) {
    const ProductPlan plan = evaluate(c, split);
    if (!found || better(plan, best)) {
      best = plan;
      found = true;
    }
  };
  for (const std::int64_t g : group_ways)
    for (const std::int64_t i : in_ways) {
      if (g * i > tiles)
        break;
      for (const std::int64_t o : out_ways) {
        if (g * i * o > tiles)
          break;
        // Every listed split below the room left, then the most the room allows.
        const std::int64_t most = std::min(positions, tiles / (g * i * o));
        for (const std::int64_t f : field_ways) {
          if (f >= most)
            break;
          consider({g, f, i, o});
        }
        consider({g, most, i, o});
      }
    }
}

// The best plan over serial slices of the output channels: none, then halves, quarters, ... while
// a slice keeps a whole grain, and only while no plan fits.
ProductPlan serial_plan(const TileTarget& target, const PlanOptions& options,
                        const ProductShape& shape, Vertex vertex, Grains grains) {
  ProductPlan best;
  bool found = false;
  const std::int64_t out_grains = ceil_div(shape.out_chans, grains.out);
  for (std::int64_t serial = 1; serial <= out_grains && (!found || !best.fits); serial *= 2) {
    ProductShape slice = shape;
    slice.out_chans = ceil_div(out_grains, serial) * grains.out;
    const Candidate c{target, options, slice, vertex, grains};
    ProductPlan plan;
    bool any = false;
    search(c, target.tiles, plan, any);
    plan.serial = serial;
    plan.planned = shape;
    plan.compute_sets *= int(serial);
    if (!found || better(plan, best)) {
      best = plan;
      found = true;
    }
  }
  return best;
}

struct Transformed {
  ProductShape shape;
  Transform transform = Transform::kNone;
  std::int64_t combined = 1;
  std::int64_t copied_elements = 0;  // what the transform rearranges
};

std::vector<Transformed> transforms_of(const TileTarget& target, const ProductShape& s,
                                       const PlanOptions& options) {
  std::vector<Transformed> out = {{s}};
  const std::int64_t grain = target.amp_input_channels(options.input);
  if (s.in_chans < grain && s.groups > 1) {
    Transformed t{s, Transform::kCombineGroups};
    t.combined = std::min(s.groups, ceil_div(grain, s.in_chans));
    t.shape.groups = ceil_div(s.groups, t.combined);
    t.shape.in_chans *= t.combined;
    t.shape.out_chans *= t.combined;
    out.push_back(t);
  }
  if (s.in_chans < grain && s.kernel_width > 1) {
    Transformed t{s, Transform::kExpandKernelWidth};
    // The copy gathers each output column's window, so the strides across the field go with it.
    t.shape.in_chans *= s.kernel_width;
    t.shape.kernel_width = 1;
    t.shape.stride_width = 1;
    t.copied_elements =
        s.groups * s.batch * s.out_height * s.out_width * s.stride * s.kernel_width * s.in_chans;
    out.push_back(t);
  }
  return out;
}

}  // namespace

std::string_view to_string(Vertex vertex) {
  switch (vertex) {
    case Vertex::kAmp1x1:
      return "AMP 1x1";
    case Vertex::kAmpNx1:
      return "AMP nx1";
    case Vertex::kHorizontalMac:
      return "HMAC";
  }
  return "?";
}

namespace {

ProductPlan plan_within(const TileTarget& target, const ProductShape& shape,
                        const PlanOptions& options) {
  ProductPlan best;
  bool found = false;
  for (const Transformed& t : transforms_of(target, shape, options)) {
    const bool one_by_one = t.shape.kernel_height == 1 && t.shape.kernel_width == 1 &&
                            t.shape.stride == 1 && t.shape.stride_width == 1;
    for (const Vertex vertex :
         {one_by_one ? Vertex::kAmp1x1 : Vertex::kAmpNx1, Vertex::kHorizontalMac}) {
      const Grains grains = grains_of(target, vertex, options);
      ProductPlan plan = serial_plan(target, options, t.shape, vertex, grains);
      plan.transform = t.transform;
      plan.combined_groups = t.combined;
      // A rearranging copy on the tiles, 8 bytes a cycle (a guess: a load and a store of 64
      // bits), spread over the tiles the plan uses.
      plan.transform_cycles =
          ceil_div(t.copied_elements * models::dtype_bytes(options.input), 8 * plan.split.tiles());
      plan.compute_sets += t.copied_elements > 0 ? 1 : 0;
      if (!found || better(plan, best)) {
        best = plan;
        found = true;
      }
    }
  }
  best.macs = double(shape.groups) * double(shape.batch) * double(shape.out_height) *
              double(shape.out_width) * double(shape.kernel_height) * double(shape.kernel_width) *
              double(shape.in_chans) * double(shape.out_chans);
  return best;
}

}  // namespace

// As poplin's runPlanner: when no plan keeps its temporaries within the bound, plan again with the
// bound doubled, while the bound is below twice a tile's memory; the fastest plan within the first
// bound that admits one wins, not the one of least memory. A search that fits nothing returns its
// plan of least temporaries, so no bound below those admits a plan: the doublings up to them are
// skipped. Past twice a tile, as poplin, the fastest plan with no bound (bound_proportion
// infinite).
ProductPlan plan_product(const TileTarget& target, const ProductShape& shape,
                         const PlanOptions& options) {
  ProductPlan plan = plan_within(target, shape, options);
  PlanOptions wider = options;
  double& bound = wider.available_memory_proportion;
  while (!plan.fits && bound > 0 && !std::isinf(bound)) {
    const double least = double(plan.temporary_bytes) / double(target.tile_memory_bytes);
    const bool past_a_tile = bound >= 2;
    do
      bound *= 2;
    while (bound < least && bound < 2);
    if (past_a_tile || bound < least)
      bound = std::numeric_limits<double>::infinity();
    plan = plan_within(target, shape, wider);
  }
  plan.bound_proportion = wider.available_memory_proportion;
  plan.fits = double(plan.temporary_bytes) <=
              options.available_memory_proportion * double(target.tile_memory_bytes);
  return plan;
}

ProductPasses matmul_passes(std::int64_t count, std::int64_t rows, std::int64_t inner,
                            std::int64_t cols) {
  const auto product = [count](std::int64_t field, std::int64_t in, std::int64_t out) {
    ProductShape s;
    s.groups = count;
    s.out_width = field;
    s.in_chans = in;
    s.out_chans = out;
    return s;
  };
  return {product(rows, inner, cols), product(rows, cols, inner), product(inner, rows, cols)};
}

ProductPasses conv_passes(const ProductShape& forward, std::int64_t in_height,
                          std::int64_t in_width) {
  ProductPasses passes{forward, forward, {}};
  auto& input = passes.input_gradient;
  // At unit stride the gradient covers the input's field; a strided one skips the zeros its
  // dilated gradient holds (poplin's worklists), so it does the forward's multiply-adds: priced
  // over the forward's field.
  if (forward.stride == 1 && forward.stride_width == 1) {
    input.out_height = in_height;
    input.out_width = in_width;
  }
  input.stride = 1;
  input.stride_width = 1;
  std::swap(input.in_chans, input.out_chans);
  auto& weight = passes.weight_gradient;
  weight.groups = forward.groups;
  weight.out_width = forward.in_chans * forward.kernel_height * forward.kernel_width;
  weight.in_chans = forward.batch * forward.out_height * forward.out_width;
  weight.out_chans = forward.out_chans;
  return passes;
}

}  // namespace ipusim::sim::pricing
