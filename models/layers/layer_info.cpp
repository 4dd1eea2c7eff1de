#include "models/layers/layer_info.hpp"

#include "models/layers/layer_types.hpp"
#include "models/layers/shape_inference.hpp"
#include "sim/core/checked.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {
namespace {

CostSizes cost_sizes(const std::vector<Shape>& inputs, const Shape& output, DType dtype) {
  IPUSIM_CHECK(!inputs.empty());
  return {element_count(inputs.front()), element_count(output), dtype_bytes(dtype)};
}

void fill_traffic(const Layer& layer, const std::vector<Shape>& inputs, const LayerCost& cost,
                  LayerInfo& info, std::int64_t d) {
  if (layer_type_row(layer.type).view)
    return;  // it relabels its input's memory
  std::int64_t input_bytes = 0;
  for (const Shape& input : inputs)
    input_bytes += element_count(input) * d;
  info.bytes_moved_forward = input_bytes + info.activation_bytes;
  info.bytes_moved_backward = (cost.reads_output_gradient ? info.activation_bytes : 0) +
                              info.saved_bytes + (cost.input_gradient ? input_bytes : 0);
}

// Sums in operation order, so that a layer's figure is bit for bit its operations' sum.
void fill_flops(const LayerCost& cost, LayerInfo& info) {
  for (const Operation& op : info.operations) {
    if (cost.flops == FlopsRule::kProducts && !on_amp(op.op_class))
      continue;
    info.forward_flops += op.forward.flops;
    info.backward_flops += op.backward.flops;
  }
}

}  // namespace

LayerInfo layer_info(const Layer& layer, const std::vector<Shape>& inputs, const Shape& output,
                     DType dtype) {
  const CostSizes size = cost_sizes(inputs, output, dtype);
  const LayerCost cost = layer_type_row(layer.type).cost(layer, inputs, size);
  LayerInfo info;
  info.output = output;
  info.params = cost.params;
  info.param_tensors = cost.param_tensors;
  info.weight_elements = cost.params;
  info.operations = lower_layer(layer, inputs, output);
  fill_flops(cost, info);
  info.activation_bytes = core::checked_mul(size.out, size.d, core::kByteCount);
  info.live_bytes = cost.live_output ? info.activation_bytes : 0;
  info.saved_bytes = cost.saved_bytes;
  info.seed_bytes = cost.seed_bytes;
  info.weight_bytes = core::checked_mul(cost.params, size.d, core::kByteCount);
  fill_traffic(layer, inputs, cost, info, size.d);
  return info;
}

StashBytes stash_bytes(const Layer& layer, const std::vector<Shape>& inputs, const Shape& output,
                       DType dtype) {
  const CostSizes size = cost_sizes(inputs, output, dtype);
  const LayerCost cost = layer_type_row(layer.type).cost(layer, inputs, size);
  return {cost.saved_bytes, cost.seed_bytes};
}

}  // namespace ipusim::models
