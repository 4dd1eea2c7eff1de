#include "models/layers/layer_graph.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/depth_first_search.hpp>

#include "models/layers/layer_types.hpp"
#include "sim/core/error.hpp"
#include "sim/core/suggest.hpp"

namespace ipusim::models {
namespace {

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS>;
using Edge = boost::graph_traits<Graph>::edge_descriptor;

[[noreturn]] void fail_at(const Layer& layer, const std::string& suffix,
                          const std::string& message) {
  throw core::ConfigError(layer.file, layer.pointer + suffix, message);
}

std::map<std::string, int> index_ids(const std::vector<Layer>& layers) {
  std::map<std::string, int> index;
  for (int i = 0; i < int(layers.size()); ++i) {
    const auto [found, fresh] = index.emplace(layers[i].id, i);
    if (!fresh) {
      fail_at(layers[i], "/id",
              "duplicate layer id '" + layers[i].id + "': the layer at " +
                  layers[found->second].pointer + " has it too");
    }
  }
  return index;
}

std::vector<std::vector<int>> resolve_inputs(const std::vector<Layer>& layers) {
  const auto index = index_ids(layers);
  std::vector<std::string> ids;
  for (const auto& layer : layers)
    ids.push_back(layer.id);
  std::vector<std::vector<int>> inputs(layers.size());
  for (std::size_t i = 0; i < layers.size(); ++i) {
    for (std::size_t k = 0; k < layers[i].inputs.size(); ++k) {
      const std::string& name = layers[i].inputs[k];
      const auto found = index.find(name);
      if (found == index.end()) {
        fail_at(layers[i], "/inputs/" + std::to_string(k),
                layer_label(layers[i]) + " takes input '" + name + "', but no layer has that id" +
                    core::did_you_mean(name, ids));
      }
      inputs[i].push_back(found->second);
    }
  }
  return inputs;
}

// Records the first cycle a depth-first search meets. A back edge u -> v closes a cycle whose
// other members are v's descendants on the DFS tree path down to u.
class CycleFinder : public boost::default_dfs_visitor {
 public:
  CycleFinder(std::vector<int>& parent, std::vector<int>& cycle)
      : parent_(&parent), cycle_(&cycle) {}

  void tree_edge(Edge edge, const Graph& graph) {
    (*parent_)[boost::target(edge, graph)] = int(boost::source(edge, graph));
  }
  void back_edge(Edge edge, const Graph& graph) {
    if (!cycle_->empty())
      return;
    const int top = int(boost::target(edge, graph));
    for (int at = int(boost::source(edge, graph)); at != top; at = (*parent_)[at])
      cycle_->push_back(at);
    cycle_->push_back(top);
    std::reverse(cycle_->begin(), cycle_->end());
  }

 private:
  std::vector<int>* parent_;  // DFS visitors are copied, so they point at shared results.
  std::vector<int>* cycle_;
};

void reject_cycles(const Graph& graph, const std::vector<Layer>& layers) {
  std::vector<int> parent(layers.size(), -1);
  std::vector<int> cycle;
  boost::depth_first_search(graph, boost::visitor(CycleFinder(parent, cycle)));
  if (cycle.empty())
    return;
  // Start at the earliest layer in the config so the message does not depend on DFS order.
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
  std::string members;
  for (const int member : cycle)
    members += layers[member].id + " -> ";
  fail_at(layers[cycle.front()], "",
          "the layers form a cycle: " + members + layers[cycle.front()].id);
}

// Kahn's algorithm with the lowest ready index first.
std::vector<int> order_layers(const Graph& graph) {
  const int count = int(boost::num_vertices(graph));
  std::vector<int> waiting(count);
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (int i = 0; i < count; ++i) {
    waiting[i] = int(boost::in_degree(i, graph));
    if (waiting[i] == 0)
      ready.push(i);
  }
  std::vector<int> order;
  while (!ready.empty()) {
    const int next = ready.top();
    ready.pop();
    order.push_back(next);
    for (const Edge edge : boost::make_iterator_range(boost::out_edges(next, graph))) {
      const int consumer = int(boost::target(edge, graph));
      if (--waiting[consumer] == 0)
        ready.push(consumer);
    }
  }
  IPUSIM_CHECK(int(order.size()) == count);
  return order;
}

std::vector<std::vector<int>> consumers_by_layer(const std::vector<std::vector<int>>& inputs) {
  std::vector<std::vector<int>> consumers(inputs.size());
  for (int i = 0; i < int(inputs.size()); ++i) {
    for (const int producer : inputs[i]) {
      if (consumers[producer].empty() || consumers[producer].back() != i)
        consumers[producer].push_back(i);
    }
  }
  return consumers;
}

void reject_unused(const std::vector<Layer>& layers,
                   const std::vector<std::vector<int>>& consumers) {
  for (std::size_t i = 0; i + 1 < layers.size(); ++i) {
    if (consumers[i].empty()) {
      fail_at(layers[i], "",
              "the output of " + layer_label(layers[i]) +
                  " is not used: every layer but the last ('" + layers.back().id +
                  "') must feed another layer");
    }
  }
}

}  // namespace

struct LayerGraph::Impl {
  Graph graph;
  std::vector<std::vector<int>> inputs;
  std::vector<std::vector<int>> consumers;
  std::vector<int> order;
};

LayerGraph::LayerGraph() : impl_(std::make_shared<const Impl>()) {}

LayerGraph::LayerGraph(const std::vector<Layer>& layers) {
  auto impl = std::make_shared<Impl>();
  impl->inputs = resolve_inputs(layers);
  impl->graph = Graph(layers.size());
  for (int i = 0; i < int(layers.size()); ++i) {
    for (const int producer : impl->inputs[i])
      boost::add_edge(producer, i, impl->graph);
  }
  reject_cycles(impl->graph, layers);
  impl->consumers = consumers_by_layer(impl->inputs);
  reject_unused(layers, impl->consumers);
  impl->order = order_layers(impl->graph);
  impl_ = std::move(impl);
}

int LayerGraph::size() const {
  return int(impl_->inputs.size());
}

const std::vector<int>& LayerGraph::topological_order() const {
  return impl_->order;
}

const std::vector<int>& LayerGraph::inputs_of(int layer) const {
  IPUSIM_CHECK(layer >= 0 && layer < size());
  return impl_->inputs[layer];
}

const std::vector<int>& LayerGraph::consumers_of(int layer) const {
  IPUSIM_CHECK(layer >= 0 && layer < size());
  return impl_->consumers[layer];
}

}  // namespace ipusim::models
