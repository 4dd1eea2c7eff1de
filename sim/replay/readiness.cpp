#include "sim/replay/readiness.hpp"

#include <algorithm>

#include "sim/core/error.hpp"

namespace ipusim::sim {

using schedules::Op;
using schedules::Task;

Readiness::Readiness(const schedules::Schedule& schedule)
    : schedule_(schedule), ipus_(schedule.layout().ipus()) {
  const auto& layout = schedule.layout();
  for (int stage = 0; stage < layout.stages(); ++stage) {
    substage_base_.push_back(substages_);
    substages_ += int(layout.ipus_of(stage).size());
  }
  feed_base_ = 4 * substages_;  // F, B, R and W of every sub-stage
  routes_.resize(std::size_t(layout.stages()));
  for (int id = 0; id < feed_base_ + 2 * ipus_; ++id)
    add_stream();
}

int Readiness::add_stream() {
  completed_.push_back(0);
  waiters_.emplace_back();
  inputs_of_.emplace_back();
  return int(completed_.size()) - 1;
}

int Readiness::add_route(const Task& task) {
  const bool gradient = task.copy == schedules::CopyKind::kGradient;
  routes_[task.stage].push_back({task.ipu, task.peer_ipu, gradient, add_stream()});
  return routes_[task.stage].back().id;
}

// A task's dependencies are the same micro-batch of tasks fixed by its stream (its op, stage,
// sub-stage and IPU, or its route), so the first task of a stream finds them for all.
void Readiness::find_inputs(const Task& task, int stream) {
  schedule_.dependencies(task, dependencies_, false);
  std::vector<int> ids;
  for (const auto& dependency : dependencies_) {
    IPUSIM_CHECK(dependency.microbatch == task.microbatch);
    ids.push_back(this->stream(dependency));
  }
  inputs_of_[stream] = {int(inputs_.size()), int(inputs_.size() + ids.size())};
  inputs_.insert(inputs_.end(), ids.begin(), ids.end());
}

}  // namespace ipusim::sim
