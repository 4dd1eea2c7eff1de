#pragma once
// One tile's share of a product as a convolution vertex sees it, and how poplin splits a tile's
// output positions among its workers (partitionConvPartialByWorker, ConvUtilInternal.cpp).

#include <cstdint>

#include <boost/container/small_vector.hpp>
#include <boost/container/static_vector.hpp>

namespace ipusim::sim::pricing {

// `count` rows of `width` output positions each, one worklist entry a row.
struct RowRun {
  std::int64_t width = 0;
  std::int64_t count = 1;
  bool operator==(const RowRun&) const = default;
};
// Per worker, the rows it computes: at most a part row, whole rows and a part row, as runs, so
// that a tile of a million rows costs three entries, not a million. Held in place: the planner
// builds one set per candidate partition, and heap allocation was a third of its time.
using Worklist = boost::container::static_vector<RowRun, 3>;
using Worklists = boost::container::small_vector<Worklist, 6>;

struct VertexWork {
  std::int64_t conv_groups = 1;  // conv groups on the tile, each a pass of the vertex
  std::int64_t in_groups = 1;    // input channels in groups of the vertex's width
  std::int64_t out_groups = 1;   // output channels in groups of the conv units
  std::int64_t in_chans_per_group = 1;
  std::int64_t out_chans_per_group = 1;
  std::int64_t kernel_height = 1;  // kernel rows and columns the vertex loops over
  std::int64_t kernel_width = 1;
  Worklists worklists;  // the same for every kernel position
};

// `positions` output positions in rows of `row_width`, split evenly over `workers` workers in
// order: each worker takes a contiguous run, cut where a row ends.
Worklists split_over_workers(std::int64_t positions, std::int64_t row_width, int workers);

// The cycles poplin charges the nx1 and horizontal-MAC vertices for zeroing their float partials
// first: each worker a sixth of the tile's outputs at 2 a cycle plus 5, for each conv group and
// output group (PerformanceEstimation.hpp, estimateZeroSupervisorCycles; ConvModel.cpp adds it).
std::int64_t zeroing_cycles(const VertexWork& work, std::int64_t positions, int workers);

// The first entry of a worklist's rows, 0 for an empty one (the 1x1 vertex's single row).
std::int64_t first_width(const Worklist& list);

}  // namespace ipusim::sim::pricing
