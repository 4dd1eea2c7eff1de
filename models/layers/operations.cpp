#include "models/layers/operations.hpp"

#include "models/layers/layer_types.hpp"

namespace ipusim::models {

std::string_view to_string(OpClass op_class) {
  switch (op_class) {
    case OpClass::kMatmul:
      return "matmul";
    case OpClass::kConv:
      return "conv";
    case OpClass::kElementwise:
      return "elementwise";
    case OpClass::kNonLinear:
      return "non_linear";
    case OpClass::kReduction:
      return "reduction";
    case OpClass::kGather:
      return "gather";
    case OpClass::kCopy:
      return "copy";
  }
  return "?";
}

int index(OpClass op_class) {
  return static_cast<int>(op_class);
}

bool on_amp(OpClass op_class) {
  return op_class == OpClass::kMatmul || op_class == OpClass::kConv;
}

std::vector<Operation> lower_layer(const Layer& layer, const std::vector<Shape>& inputs,
                                   const Shape& output) {
  return layer_type_row(layer.type).lower(layer, inputs, output);
}

}  // namespace ipusim::models
