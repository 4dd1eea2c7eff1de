// softmax_cross_entropy: the loss, the mean over rows of logits of -log softmax at the label.
// It may be serialised over the sequence, as Graphcore's GPT-2 computes it in chunks of
// --serialized-seq-len tokens (--enable-sequence-serialized).

#include <array>

#include "models/layers/types/type_support.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {
namespace {

struct LossFields {
  std::int64_t serialized_seq_len = 0;
};

const std::array kLossKeys = {
    int_key<&LossFields::serialized_seq_len>(
        "serialized_seq_len", 0, 0, core::kMaxCount,
        "the rows of logits (tokens) a chunk takes when the loss runs chunk by chunk, dividing "
        "the rows of a sample; 0: all at once"),
};

void read_loss(const core::ConfigNode& layer, LayerParams& params) {
  read_keys(layer, kLossKeys, params);
}

// Rows of logits a sample has: its tokens, or one for a classifier.
std::int64_t logit_rows(const Shape& logits) {
  return logits.empty() ? 1 : element_count(logits) / logits.back();
}

std::int64_t chunk_rows(const Layer& layer, const Shape& logits) {
  const auto rows = own_fields_or_defaults<LossFields>(layer.params).serialized_seq_len;
  return rows == 0 ? logit_rows(logits) : rows;
}

Shape softmax_cross_entropy_shape(const Layer& layer, const std::vector<InputShape>& inputs) {
  IPUSIM_CHECK(inputs.size() == 1);
  const InputShape& logits = inputs.front();
  const std::int64_t rows = logit_rows(logits.shape);
  const std::int64_t chunk = chunk_rows(layer, logits.shape);
  if (rows % chunk != 0) {
    fail_layer(layer, "needs its serialized_seq_len to divide the " + std::to_string(rows) +
                          " rows of logits a sample has, but " + input_text(logits));
  }
  if (rows / chunk > kMaxSerialization) {
    fail_layer(layer, "would run in " + std::to_string(rows / chunk) + " chunks, more than " +
                          std::to_string(kMaxSerialization) + "; take a longer serialized_seq_len");
  }
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

// PopART's loss clones a one-hot of the labels the probabilities' size and type, in both passes
// (popart willow/src/popx/op/nllx.cpp: NllOpx::flattenAndEncodeOneHot, and NllGradOpx, whose
// clamped probabilities are another such tensor): temporaries of a chunk's logits. A chunk
// after another repeats the compute sets.
std::vector<Operation> softmax_cross_entropy_operations(const Layer& layer,
                                                        const std::vector<Shape>& inputs,
                                                        const Shape& /*output*/) {
  const Shape& logits = inputs.front();
  const double in = double(element_count(logits));
  const std::int64_t chunks = logit_rows(logits) / chunk_rows(layer, logits);
  // Per logit: max, subtract, exp, sum and normalise (the log is once per row); backward, the
  // probability less the one-hot label, one.
  Operation loss = vector_op("softmax_cross_entropy", OpClass::kReduction, in, kSoftmaxFlops,
                             3 * int(chunks), int(chunks));
  loss.backward.flops = in;
  loss.temporary_elements = in / double(chunks);
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
          .keys = kLossKeys,
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_loss,
          .shape = softmax_cross_entropy_shape,
          .cost = softmax_cross_entropy_cost,
          .lower = softmax_cross_entropy_operations,
          .kernel = softmax_cross_entropy_kernel};
}

}  // namespace ipusim::models
