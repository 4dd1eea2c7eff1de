#include "sim/pricing/vertex_work.hpp"

#include <algorithm>

namespace ipusim::sim::pricing {
namespace {

// A worker's positions [begin, end) in rows of `width`: the part row it starts in, the whole rows,
// the part row it ends in.
Worklist rows_of(std::int64_t begin, std::int64_t end, std::int64_t width) {
  Worklist list;
  if (begin >= end)
    return list;
  const std::int64_t head_end = std::min(end, (begin / width + 1) * width);
  const bool head_is_part = begin % width != 0 || head_end - begin < width;
  if (head_is_part) {
    list.push_back({head_end - begin, 1});
    begin = head_end;
  }
  const std::int64_t whole = (end - begin) / width;
  if (whole > 0)
    list.push_back({width, whole});
  begin += whole * width;
  if (begin < end)
    list.push_back({end - begin, 1});
  return list;
}

}  // namespace

Worklists split_over_workers(std::int64_t positions, std::int64_t row_width, int workers) {
  Worklists lists;
  const std::int64_t width = std::max<std::int64_t>(row_width, 1);
  for (int w = 0; w < workers; ++w)
    lists.push_back(rows_of(positions / workers * w + positions % workers * w / workers,
                            positions / workers * (w + 1) + positions % workers * (w + 1) / workers,
                            width));
  return lists;
}

std::int64_t zeroing_cycles(const VertexWork& work, std::int64_t positions, int workers) {
  const std::int64_t per_worker = (positions * work.out_chans_per_group + workers - 1) / workers;
  const std::int64_t vectors = (per_worker + 1) / 2;  // 64 bits of float partials
  return (vectors + 14 - 9) * workers * work.out_groups * work.conv_groups;
}

std::int64_t first_width(const Worklist& list) {
  return list.empty() ? 0 : list.front().width;
}

}  // namespace ipusim::sim::pricing
