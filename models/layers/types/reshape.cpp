// reshape: its input's elements in a new shape, one dimension of which may be inferred; a view.

#include <array>

#include "models/layers/types/type_support.hpp"
#include "sim/core/checked.hpp"

namespace ipusim::models {
namespace {

const std::array kReshapeKeys = {
    own_key("shape", KeyKind::kShape, nullptr, "the output shape; one dimension may be -1"),
};

void read_reshape(const core::ConfigNode& layer, LayerParams& params) {
  const core::ConfigNode shape = layer.at("shape");
  params.shape = read_shape(shape, -1);
  int inferred = 0;
  for (std::size_t i = 0; i < params.shape.size(); ++i) {
    if (params.shape[i] == 0)
      shape.at(i).fail("a reshape dimension must be positive, or -1 to infer it; found 0");
    inferred += params.shape[i] == -1 ? 1 : 0;
  }
  if (inferred > 1)
    shape.fail("at most one dimension of a reshape may be -1");
}

Shape reshape_shape(const Layer& layer, const std::vector<InputShape>& inputs) {
  const InputShape& input = only_input(inputs);
  const std::int64_t elements = element_count(input.shape);
  Shape out = layer.params.shape;
  std::int64_t known = 1;
  for (const std::int64_t dim : out)
    known = core::checked_mul(known, dim == -1 ? 1 : dim, "element count");
  const std::string from = "cannot reshape " + shape_text(input.shape) + " (" +
                           std::to_string(elements) + " elements) to " + shape_text(out);
  for (std::int64_t& dim : out) {
    if (dim != -1)
      continue;
    if (elements % known != 0) {
      fail_layer(layer, from + ": " + std::to_string(elements) + " is not a multiple of " +
                            std::to_string(known));
    }
    dim = elements / known;
  }
  if (element_count(out) != elements)
    fail_layer(layer, from + " (" + std::to_string(element_count(out)) + " elements)");
  return out;
}

std::unique_ptr<Kernel> reshape_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                       DType dtype, std::uint64_t /*seed*/) {
  return detail::make_reshape(layer, inputs, dtype);
}

}  // namespace

LayerTypeDef reshape_type() {
  return {.name = "reshape",
          .keys = kReshapeKeys,
          .inputs = LayerInputs::kOne,
          .view = true,
          .read = read_reshape,
          .shape = reshape_shape,
          .cost = no_cost,
          .lower = no_operations,
          .kernel = reshape_kernel};
}

}  // namespace ipusim::models
