#pragma once
// One tile's share of a product as a convolution vertex sees it, and how poplin splits a tile's
// output positions among its workers (partitionConvPartialByWorker, ConvUtilInternal.cpp).

#include <cstdint>
#include <vector>

namespace ipusim::sim::pricing {

// Per worker, the widths of the output rows it computes.
using Worklists = std::vector<std::vector<std::int64_t>>;

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

}  // namespace ipusim::sim::pricing
