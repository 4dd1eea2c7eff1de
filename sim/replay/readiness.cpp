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
  streams_ = feed_base_ + 2 * ipus_;
  routes_.resize(std::size_t(layout.stages()));
  completed_.assign(std::size_t(streams_), 0);
  waiters_.resize(completed_.size());
}

int Readiness::route(const Task& task) {
  const bool gradient = task.copy == schedules::CopyKind::kGradient;
  auto& routes = routes_[task.stage];
  for (const auto& r : routes) {
    if (r.ipu == task.ipu && r.peer == task.peer_ipu && r.gradient == gradient)
      return r.id;
  }
  routes.push_back({task.ipu, task.peer_ipu, gradient, streams_++});
  completed_.push_back(0);
  waiters_.emplace_back();
  return routes.back().id;
}

int Readiness::stream(const Task& task) {
  if (schedules::is_compute(task.op))
    return int(task.op) * substages_ + substage_base_[task.stage] + task.substage;
  if (task.op == Op::kInfeed)
    return feed_base_ + task.ipu;
  if (task.op == Op::kOutfeed)
    return feed_base_ + ipus_ + task.ipu;
  IPUSIM_CHECK(task.op == Op::kCopy);
  return route(task);
}

bool Readiness::ready(const Task& task, int waiter) {
  schedule_.dependencies(task, dependencies_, false);
  for (const auto& dependency : dependencies_) {
    const int id = stream(dependency);
    if (completed_[id] > dependency.microbatch)
      continue;
    waiters_[id].push_back(waiter);
    return false;
  }
  return true;
}

const std::vector<int>& Readiness::complete(const Task& task) {
  const int id = stream(task);
  IPUSIM_CHECK(completed_[id] == task.microbatch);
  ++completed_[id];
  woken_.swap(waiters_[id]);
  waiters_[id].clear();
  return woken_;
}

}  // namespace ipusim::sim
