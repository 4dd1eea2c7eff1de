#include "models/layers/shape_inference.hpp"

#include "models/layers/layer_types.hpp"
#include "sim/core/checked.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {

std::int64_t element_count(std::span<const std::int64_t> shape) {
  std::int64_t count = 1;
  for (const std::int64_t dim : shape)
    count = core::checked_mul(count, dim, "element count");
  return count;
}

bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size())
    return false;
  const std::size_t skip = to.size() - from.size();
  for (std::size_t k = 0; k < from.size(); ++k) {
    if (from[k] != 1 && from[k] != to[skip + k])
      return false;
  }
  return true;
}

std::string shape_text(const Shape& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i)
    text += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::string input_text(const InputShape& input) {
  if (input.source.empty())
    return "the model input is " + shape_text(input.shape);
  return "'" + input.source + "' gives " + shape_text(input.shape);
}

Shape infer_output_shape(const Layer& layer, const std::vector<InputShape>& inputs) {
  IPUSIM_CHECK(!inputs.empty());
  // Only the loss yields a scalar, and nothing consumes the loss.
  for (const InputShape& input : inputs)
    IPUSIM_CHECK(!input.shape.empty());
  return layer_type_row(layer.type).shape(layer, inputs);
}

}  // namespace ipusim::models
