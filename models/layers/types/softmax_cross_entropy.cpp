// softmax_cross_entropy: the loss, the mean over rows of logits of -log softmax at the label.

#include "models/layers/types/type_support.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {
namespace {

Shape softmax_cross_entropy_shape(const Layer& /*layer*/, const std::vector<InputShape>& inputs) {
  IPUSIM_CHECK(inputs.size() == 1);
  return {};  // the loss is a scalar
}

// It keeps the probabilities and one int32 label per row of logits. It starts backward, so it
// reads no output gradient.
LayerCost softmax_cross_entropy_cost(const Layer& /*layer*/, const std::vector<Shape>& inputs,
                                     const CostSizes& size) {
  const std::int64_t labels = size.in / inputs.front().back();
  LayerCost cost = operations_cost(size.in * size.d + labels * 4);
  cost.reads_output_gradient = false;
  return cost;
}

std::vector<Operation> softmax_cross_entropy_operations(const Layer& /*layer*/,
                                                        const std::vector<Shape>& inputs,
                                                        const Shape& /*output*/) {
  const double in = double(element_count(inputs.front()));
  // Per logit: max, subtract, exp, sum and normalise (the log is once per row); backward, the
  // probability less the one-hot label, one.
  Operation loss = vector_op("softmax_cross_entropy", OpClass::kReduction, in, kSoftmaxFlops, 3, 1);
  loss.backward.flops = in;
  return {loss};
}

std::unique_ptr<Kernel> softmax_cross_entropy_kernel(const Layer& /*layer*/,
                                                     const std::vector<Shape>& inputs, DType dtype,
                                                     std::uint64_t /*seed*/) {
  return detail::make_softmax_cross_entropy(inputs, dtype);
}

}  // namespace

LayerTypeDef softmax_cross_entropy_type() {
  return {.name = "softmax_cross_entropy",
          .keys = {},
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_no_keys,
          .shape = softmax_cross_entropy_shape,
          .cost = softmax_cross_entropy_cost,
          .lower = softmax_cross_entropy_operations,
          .kernel = softmax_cross_entropy_kernel};
}

}  // namespace ipusim::models
