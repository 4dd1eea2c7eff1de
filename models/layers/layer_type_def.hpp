#pragma once
// A layer type's row in the registry (layer_types.cpp): every fact of the type, stated once in
// the type's own file under models/layers/types/ (its fields in LayerParams, or in a struct of
// that file held in LayerParams::own). The name and keys
// as configs spell them, how many inputs it takes, whether it is a view, and the functions that
// read its fields, infer its output shape, cost it, lower it to operations and build its kernel.
// A row must name every function (core::RowFn has no default), so a type cannot be half added.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "models/layers/dtype.hpp"
#include "models/layers/layer.hpp"
#include "models/layers/layer_keys.hpp"
#include "models/layers/operations.hpp"
#include "models/layers/shape_inference.hpp"
#include "sim/core/config_node.hpp"
#include "sim/core/row_fn.hpp"

namespace ipusim::models {

class Kernel;

// How many layers a type takes as inputs ("inputs" in the config; without it, the layer before).
enum class LayerInputs {
  kOne,
  kOneOrTwo,   // an optional second: an embedding's token types, an attention's padding mask
  kTwo,        // multiply: a value and what scales it
  kTwoOrMore,  // add and concat merge their inputs
};

// Which of a layer's operations its FLOPs sum (layer_info.hpp says which type takes which).
enum class FlopsRule {
  kOperations,  // all of them
  kProducts,    // those on the AMP units: the model FLOPs of attention and the transformer layers
};

// The sizes a cost is written in.
struct CostSizes {
  std::int64_t in = 0;   // elements of the first input, per sample
  std::int64_t out = 0;  // elements of the output, per sample
  std::int64_t d = 0;    // bytes per element
};

// The figures of layer_info that differ by type; the rest follows from the shapes.
struct LayerCost {
  std::int64_t params = 0;
  int param_tensors = 0;         // the tensors those parameters are held in (a weight, a bias, ...)
  std::int64_t saved_bytes = 0;  // per sample
  std::int64_t seed_bytes = 0;   // per micro-batch
  FlopsRule flops = FlopsRule::kOperations;
  // An encoder's attention half: its output is a tensor inside the encoder, which the live
  // activations count no more than the encoder's others.
  bool live_output = true;
  bool reads_output_gradient = true;  // false for the loss, which starts backward
  bool input_gradient = true;         // false for token ids, which get no gradient
};

using ReadParams = void(const core::ConfigNode& layer, LayerParams& params);
// Throws core::ConfigError at the layer when its inputs do not fit it.
using InferShape = Shape(const Layer& layer, const std::vector<InputShape>& inputs);
using CostOf = LayerCost(const Layer& layer, const std::vector<Shape>& inputs,
                         const CostSizes& size);
using LowerLayer = std::vector<Operation>(const Layer& layer, const std::vector<Shape>& inputs,
                                          const Shape& output);
// `seed` is the run seed, from which dropout draws its masks.
using MakeKernel = std::unique_ptr<Kernel>(const Layer& layer, const std::vector<Shape>& inputs,
                                           DType dtype, std::uint64_t seed);

struct LayerTypeDef {
  const char* name;                // as configs spell it
  std::span<const LayerKey> keys;  // its own, beyond those every layer takes
  LayerInputs inputs;
  bool view;                     // relabels its input's memory: it moves and computes nothing
  core::RowFn<ReadParams> read;  // its keys into LayerParams, with the rules between them
  core::RowFn<InferShape> shape;
  core::RowFn<CostOf> cost;
  core::RowFn<LowerLayer> lower;
  core::RowFn<MakeKernel> kernel;  // input has none (has_kernel)
};

}  // namespace ipusim::models
