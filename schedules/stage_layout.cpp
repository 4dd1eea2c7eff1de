#include "schedules/stage_layout.hpp"

#include <algorithm>

namespace ipusim::schedules {

StageLayout::StageLayout(const std::vector<std::vector<int>>& device_mapping)
    : stage_ipus_(device_mapping) {
  int ipus = 0;
  for (const auto& stage_ipus : stage_ipus_) {
    for (int ipu : stage_ipus)
      ipus = std::max(ipus, ipu + 1);
  }
  hosted_.resize(ipus);
  for (int stage = 0; stage < stages(); ++stage) {
    for (int sub = 0; sub < static_cast<int>(stage_ipus_[stage].size()); ++sub)
      hosted_[stage_ipus_[stage][sub]].push_back({stage, sub});
  }
}

int StageLayout::substage(int stage, int ipu) const {
  const auto& list = stage_ipus_[stage];
  const auto it = std::find(list.begin(), list.end(), ipu);
  return it == list.end() ? -1 : static_cast<int>(it - list.begin());
}

}  // namespace ipusim::schedules
