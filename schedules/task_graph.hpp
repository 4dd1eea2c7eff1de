#pragma once
// One repeat of a schedule as an explicit DAG: every task of every IPU program and of the
// weight update, with an edge for each dependency and each pair of consecutive tasks on an
// IPU. For checking schedules and finding critical paths in small cases: unlike a Schedule,
// its memory grows with M.

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "schedules/schedule.hpp"

namespace ipusim::schedules {

class TaskGraph {
 public:
  // A longest path: its length under the cost used and its tasks from first to last.
  struct Path {
    double length = 0;
    std::vector<Task> tasks;
  };

  TaskGraph(TaskGraph&&) noexcept;
  TaskGraph& operator=(TaskGraph&&) noexcept;
  ~TaskGraph();

  std::size_t task_count() const;
  // Throws core::InternalError when a task runs twice, a dependency names a task that no IPU
  // runs, or program orders and dependencies form a cycle (the message names its tasks).
  void validate() const;
  // Call validate() first. `cost` gives each task's duration.
  Path critical_path(const std::function<double(const Task&)>& cost) const;
  // Unit costs: F, R and W 1, B 2 (1 when W is split off), copies, feeds and updates 0.
  Path critical_path() const;

 private:
  struct Impl;
  explicit TaskGraph(std::unique_ptr<Impl> impl);
  friend TaskGraph materialise(const Schedule& schedule);

  std::unique_ptr<Impl> impl_;
};

// Builds the graph of one repeat. Throws std::length_error beyond 4,000,000 tasks.
TaskGraph materialise(const Schedule& schedule);

}  // namespace ipusim::schedules
