#include "sim/pricing/vertex_work.hpp"

#include <algorithm>

namespace ipusim::sim::pricing {

Worklists split_over_workers(std::int64_t positions, std::int64_t row_width, int workers) {
  Worklists lists(static_cast<std::size_t>(workers));
  const std::int64_t width = std::max<std::int64_t>(row_width, 1);
  for (int w = 0; w < workers; ++w) {
    std::int64_t begin = positions * w / workers;
    const std::int64_t end = positions * (w + 1) / workers;
    while (begin < end) {
      const std::int64_t row_end = (begin / width + 1) * width;
      const std::int64_t stop = std::min(end, row_end);
      lists[std::size_t(w)].push_back(stop - begin);
      begin = stop;
    }
  }
  return lists;
}

}  // namespace ipusim::sim::pricing
