#include "schedules/task_graph.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/depth_first_search.hpp>
#include <boost/graph/topological_sort.hpp>

#include "sim/core/error.hpp"

namespace ipusim::schedules {
namespace {

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
using Vertex = boost::graph_traits<Graph>::vertex_descriptor;

constexpr std::size_t kMaxTasks = 4'000'000;

// Records the DFS tree and stops at the first back edge, which closes a cycle.
struct CycleFinder : boost::default_dfs_visitor {
  struct Found {
    Vertex from;
    Vertex to;
  };
  std::vector<Vertex>* parent;
  void tree_edge(boost::graph_traits<Graph>::edge_descriptor e, const Graph& g) const {
    (*parent)[boost::target(e, g)] = boost::source(e, g);
  }
  void back_edge(boost::graph_traits<Graph>::edge_descriptor e, const Graph& g) const {
    throw Found{boost::source(e, g), boost::target(e, g)};
  }
};

}  // namespace

struct TaskGraph::Impl {
  explicit Impl(std::size_t vertices) : graph(vertices) {}
  Graph graph;
  std::vector<Task> tasks;
  std::vector<std::string> problems;  // found while building, reported by validate()
  bool split_weight_grad = false;
};

TaskGraph::TaskGraph(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TaskGraph::TaskGraph(TaskGraph&&) noexcept = default;
TaskGraph& TaskGraph::operator=(TaskGraph&&) noexcept = default;
TaskGraph::~TaskGraph() = default;

std::size_t TaskGraph::task_count() const {
  return impl_->tasks.size();
}

void TaskGraph::validate() const {
  if (!impl_->problems.empty())
    throw core::InternalError("schedule is inconsistent: " + impl_->problems.front());
  std::vector<Vertex> parent(impl_->tasks.size());
  try {
    boost::depth_first_search(impl_->graph, boost::visitor(CycleFinder{{}, &parent}));
  } catch (const CycleFinder::Found& found) {
    std::vector<std::string> members;
    for (Vertex v = found.from; v != found.to; v = parent[v])
      members.push_back(to_string(impl_->tasks[v]));
    members.push_back(to_string(impl_->tasks[found.to]));
    std::reverse(members.begin(), members.end());
    std::string cycle;
    for (const std::string& member : members)
      cycle += member + " -> ";
    throw core::InternalError("schedule deadlocks: " + cycle + members.front());
  }
}

TaskGraph::Path TaskGraph::critical_path(const std::function<double(const Task&)>& cost) const {
  const auto& tasks = impl_->tasks;
  std::vector<Vertex> order;
  boost::topological_sort(impl_->graph, std::back_inserter(order));  // reverse topological
  std::vector<double> finish(tasks.size(), 0);
  std::vector<Vertex> next(tasks.size(), tasks.size());
  // Walking in reverse topological order gives the longest path starting at each task.
  for (Vertex v : order) {
    double tail = 0;
    for (auto [e, end] = boost::out_edges(v, impl_->graph); e != end; ++e) {
      const Vertex w = boost::target(*e, impl_->graph);
      if (next[v] == tasks.size() || finish[w] > tail) {
        tail = finish[w];
        next[v] = w;
      }
    }
    finish[v] = cost(tasks[v]) + tail;
  }
  Path path;
  if (tasks.empty())
    return path;
  Vertex v = static_cast<Vertex>(std::max_element(finish.begin(), finish.end()) - finish.begin());
  path.length = finish[v];
  for (; v != tasks.size(); v = next[v])
    path.tasks.push_back(tasks[v]);
  return path;
}

TaskGraph::Path TaskGraph::critical_path() const {
  const bool split = impl_->split_weight_grad;
  return critical_path([split](const Task& task) -> double {
    switch (task.op) {
      case Op::kForward:
      case Op::kRecompute:
      case Op::kWeightGrad:
        return 1;
      case Op::kBackward:
        return split ? 1 : 2;
      default:
        return 0;
    }
  });
}

TaskGraph materialise(const Schedule& schedule) {
  const int ipus = schedule.layout().ipus();
  std::size_t total = 0;
  for (int ipu = 0; ipu < ipus; ++ipu)
    total += static_cast<std::size_t>(schedule.program_length(ipu)) + 2;
  if (total > kMaxTasks)
    throw std::length_error("materialise: " + std::to_string(total) +
                            " tasks are too many for an explicit graph");
  std::vector<Task> tasks;
  std::vector<std::string> problems;
  std::unordered_map<Task, Vertex, TaskWorkHash, TaskWorkEqual> vertex_of;
  std::vector<std::vector<Vertex>> programs(ipus);
  const auto add = [&](const Task& task, int ipu) {
    const auto [it, fresh] = vertex_of.emplace(task, tasks.size());
    if (!fresh) {
      problems.push_back(to_string(task) + " runs twice");
      return;
    }
    tasks.push_back(task);
    programs[ipu].push_back(it->second);
  };
  for (int ipu = 0; ipu < ipus; ++ipu) {
    for (std::int64_t index = 0; index < schedule.program_length(ipu); ++index)
      add(schedule.program_task(ipu, index), ipu);
    for (const Task& task : schedule.weight_update_tasks(ipu))
      add(task, ipu);
  }

  auto impl = std::make_unique<TaskGraph::Impl>(tasks.size());
  impl->split_weight_grad = schedule.splits_weight_grad();
  const auto connect = [&impl](Vertex from, Vertex to) { boost::add_edge(from, to, impl->graph); };
  for (const auto& program : programs) {
    for (std::size_t i = 1; i < program.size(); ++i)
      connect(program[i - 1], program[i]);
  }
  std::vector<Task> dependencies;
  for (Vertex v = 0; v < tasks.size(); ++v) {
    schedule.dependencies(tasks[v], dependencies);
    for (const Task& dependency : dependencies) {
      const auto it = vertex_of.find(dependency);
      if (it == vertex_of.end())
        problems.push_back(to_string(tasks[v]) + " depends on " + to_string(dependency) +
                           ", which no IPU runs");
      else
        connect(it->second, v);
    }
  }
  impl->tasks = std::move(tasks);
  impl->problems = std::move(problems);
  return TaskGraph(std::move(impl));
}

}  // namespace ipusim::schedules
