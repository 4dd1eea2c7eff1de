// input: where the model input enters the graph, optionally stating its shape.

#include <array>

#include "models/layers/types/type_support.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {
namespace {

const std::array kInputKeys = {
    own_key("shape", KeyKind::kShape, "the model input", "the model input's shape, checked"),
};

void read_input(const core::ConfigNode& layer, LayerParams& params) {
  if (const auto shape = layer.find("shape"))
    params.shape = read_shape(*shape, 1);
}

Shape input_shape(const Layer& layer, const std::vector<InputShape>& inputs) {
  const InputShape& input = only_input(inputs);
  if (!layer.params.shape.empty() && layer.params.shape != input.shape) {
    fail_layer(layer, "declares shape " + shape_text(layer.params.shape) +
                          ", but the model input is " + shape_text(input.shape));
  }
  return input.shape;
}

// The model input is data, not a computation: has_kernel is false for it.
std::unique_ptr<Kernel> input_kernel(const Layer& /*layer*/, const std::vector<Shape>& /*inputs*/,
                                     DType /*dtype*/, std::uint64_t /*seed*/) {
  core::fail_invariant("an input layer has no kernel (has_kernel)", __FILE__, __LINE__);
}

}  // namespace

LayerTypeDef input_type() {
  return {.name = "input",
          .keys = kInputKeys,
          .inputs = LayerInputs::kOne,
          .view = true,
          .read = read_input,
          .shape = input_shape,
          .cost = no_cost,
          .lower = no_operations,
          .kernel = input_kernel};
}

}  // namespace ipusim::models
