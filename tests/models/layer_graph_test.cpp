#include "models/layers/layer_graph.hpp"

#include <catch2/catch.hpp>

#include "sim/core/error.hpp"

using namespace ipusim::models;

namespace {

// Dense layers named by id, each with the inputs given ({} for the model input).
std::vector<Layer> layers_of(
    const std::vector<std::pair<std::string, std::vector<std::string>>>& spec) {
  std::vector<Layer> layers;
  for (const auto& [id, inputs] : spec) {
    Layer layer;
    layer.id = id;
    layer.type = LayerType::kDense;
    layer.inputs = inputs;
    layer.pointer = "/model/layers/" + std::to_string(layers.size());
    layer.file = "g.json";
    layers.push_back(layer);
  }
  return layers;
}

std::string graph_error(const std::vector<Layer>& layers) {
  try {
    LayerGraph graph(layers);
  } catch (const ipusim::core::ConfigError& error) {
    return error.what();
  }
  FAIL("no error was raised");
  return "";
}

// A residual block: a feeds b and the sum, b feeds the sum, the sum feeds the head.
const auto kResidual =
    layers_of({{"a", {}}, {"b", {"a"}}, {"sum", {"a", "b"}}, {"head", {"sum"}}, {"side", {"a"}}});

}  // namespace

TEST_CASE("a layer graph reports inputs in listed order and consumers in config order") {
  const auto layers = layers_of({{"a", {}}, {"b", {"a"}}, {"sum", {"b", "a"}}, {"out", {"sum"}}});
  const LayerGraph graph(layers);
  CHECK(graph.size() == 4);
  CHECK(graph.inputs_of(0).empty());
  CHECK(graph.inputs_of(2) == std::vector<int>{1, 0});
  CHECK(graph.consumers_of(0) == std::vector<int>{1, 2});
  CHECK(graph.consumers_of(3).empty());
}

TEST_CASE("a layer listed twice as an input is one consumer but two inputs") {
  const LayerGraph graph(layers_of({{"a", {}}, {"double", {"a", "a"}}}));
  CHECK(graph.inputs_of(1) == std::vector<int>{0, 0});
  CHECK(graph.consumers_of(0) == std::vector<int>{1});
}

TEST_CASE("the topological order keeps config order where the data flow allows") {
  const LayerGraph in_order(layers_of({{"a", {}}, {"b", {"a"}}, {"c", {"a"}}, {"d", {"b", "c"}}}));
  CHECK(in_order.topological_order() == std::vector<int>{0, 1, 2, 3});
  // "late" is listed first but reads "early", so it moves after it.
  const LayerGraph forward_reference(
      layers_of({{"late", {"early"}}, {"early", {"in"}}, {"in", {}}, {"out", {"late"}}}));
  CHECK(forward_reference.topological_order() == std::vector<int>{2, 1, 0, 3});
}

TEST_CASE("a duplicate layer id names both layers") {
  CHECK(graph_error(layers_of({{"a", {}}, {"b", {"a"}}, {"a", {"b"}}})) ==
        "g.json: at /model/layers/2/id: duplicate layer id 'a': the layer at /model/layers/0 "
        "has it too");
}

TEST_CASE("an input naming no layer suggests the closest id") {
  CHECK(graph_error(layers_of({{"dense1", {}}, {"dense2", {"dense_1"}}})) ==
        "g.json: at /model/layers/1/inputs/0: layer 'dense2' (dense) takes input 'dense_1', but "
        "no layer has that id; did you mean 'dense1'?");
  CHECK(graph_error(layers_of({{"a", {}}, {"b", {"zzzzzz"}}})) ==
        "g.json: at /model/layers/1/inputs/0: layer 'b' (dense) takes input 'zzzzzz', but no "
        "layer has that id");
}

TEST_CASE("a cycle is reported by its members in data-flow order") {
  CHECK(graph_error(layers_of(
            {{"in", {}}, {"b", {"a"}}, {"c", {"b"}}, {"a", {"in", "c"}}, {"out", {"c"}}})) ==
        "g.json: at /model/layers/1: the layers form a cycle: b -> c -> a -> b");
  CHECK(graph_error(layers_of({{"in", {}}, {"self", {"self"}}, {"out", {"in"}}})) ==
        "g.json: at /model/layers/1: the layers form a cycle: self -> self");
}

TEST_CASE("every layer but the last must feed another layer") {
  CHECK(graph_error(kResidual) ==
        "g.json: at /model/layers/3: the output of layer 'head' (dense) is not used: every layer "
        "but the last ('side') must feed another layer");
}
