// The compute sets follow poplibs' lowering (graphcore/poplibs @7eac0f26): popnn/Norms.cpp and
// NormsInternal.cpp with poplin/Norms.cpp for the norms (sums of x and x^2 as two reductions,
// the statistics, the inverse standard deviation, whitening, scale and shift; backward the
// gradients of scale and shift as reductions over rows, the whitened input recomputed, and two
// more reductions for the input's gradient); popnn/NonLinearity.cpp for softmax (a max, a
// subtract, an exp, a sum, a reciprocal and a multiply, with the statistics broadcast back) and
// GELU; poprand/RandomGen.cpp for dropout. Tensors are spread over the tiles linearly, at least
// 64 elements a tile (a guess of poputil's mapTensorLinearly grain).

#include "sim/pricing/vector_lowering.hpp"

#include <algorithm>
#include <array>

namespace ipusim::sim::pricing {
namespace {

constexpr std::int64_t kMinElementsPerTile = 64;

// What a step works over: the whole tensor, one value a row, or one a column; and whether it
// reduces along the rows' width (to a value a row) or across the rows (to a value a column).
enum class Extent { kFull, kPerRow, kPerColumn };
enum class Reduce { kNone, kAlongWidth, kAcrossRows };

struct Step {
  const char* name;
  VectorOp op;
  Extent extent = Extent::kFull;
  Reduce reduce = Reduce::kNone;
};

using Steps = std::vector<Step>;

std::int64_t tiles_for(const TileTarget& target, std::int64_t elements) {
  return std::clamp<std::int64_t>(ceil_div(elements, kMinElementsPerTile), 1, target.tiles);
}

PricedComputeSet priced(const TileTarget& target, const char* name, VectorOp op,
                        models::DType dtype, std::int64_t elements, std::int64_t exchange_bytes) {
  PricedComputeSet set{name, op, elements, tiles_for(target, elements)};
  set.vertex_cycles = vector_vertex_cycles(target, op, dtype, ceil_div(elements, set.tiles));
  if (exchange_bytes > 0)
    set.exchange_cycles =
        target.exchange_fixed_cycles + ceil_div(exchange_bytes, target.exchange_bytes_per_cycle);
  set.cycles = target.sync_cycles + set.exchange_cycles + set.vertex_cycles;
  return set;
}

// A reduction to `results` values from `elements`: on the tiles that hold them, then, when a
// result's inputs span tiles, the float partials of each tile brought to the result's tile.
void add_reduction(std::vector<PricedComputeSet>& out, const TileTarget& target, const Step& step,
                   models::DType dtype, std::int64_t elements, std::int64_t results) {
  out.push_back(priced(target, step.name, step.op, dtype, elements, 0));
  const std::int64_t tiles = out.back().tiles;
  if (results >= tiles)
    return;
  const std::int64_t spread = ceil_div(tiles, results);  // tiles a result's inputs span
  const std::int64_t partials = spread * ceil_div(results, std::min(results, tiles));
  auto second = priced(target, step.name, VectorOp::kReduce, models::DType::kFp32,
                       partials * std::min(results, tiles), partials * 4);
  second.name += " (second stage)";
  out.push_back(second);
}

std::vector<PricedComputeSet> price_steps(const TileTarget& target, const Steps& steps,
                                          const VectorShape& shape, models::DType dtype) {
  std::vector<PricedComputeSet> out;
  const std::int64_t full = shape.rows * shape.width;
  for (const Step& step : steps) {
    const std::int64_t elements = step.extent == Extent::kFull     ? full
                                  : step.extent == Extent::kPerRow ? shape.rows
                                                                   : shape.width;
    if (step.reduce == Reduce::kAlongWidth)
      add_reduction(out, target, step, dtype, elements, shape.rows);
    else if (step.reduce == Reduce::kAcrossRows)
      add_reduction(out, target, step, dtype, elements, shape.width);
    else
      out.push_back(priced(target, step.name, step.op, dtype, elements, 0));
  }
  return out;
}

const Steps kNormForward = {
    {"sum of x", VectorOp::kReduce, Extent::kFull, Reduce::kAlongWidth},
    {"sum of x^2", VectorOp::kSquare, Extent::kFull, Reduce::kAlongWidth},
    {"mean and variance", VectorOp::kAdd, Extent::kPerRow},
    {"inverse std dev", VectorOp::kRsqrt, Extent::kPerRow},
    {"subtract mean", VectorOp::kAdd},
    {"multiply inverse std dev", VectorOp::kAdd},
    {"scale and shift", VectorOp::kAdd},
};
const Steps kNormBackward = {
    {"recompute x - mean", VectorOp::kAdd},
    {"recompute whitened", VectorOp::kAdd},
    {"gradient x scale", VectorOp::kAdd},
    {"gradient x whitened", VectorOp::kAdd},
    {"scale gradient", VectorOp::kReduce, Extent::kFull, Reduce::kAcrossRows},
    {"shift gradient", VectorOp::kReduce, Extent::kFull, Reduce::kAcrossRows},
    {"sum of gradient", VectorOp::kReduce, Extent::kFull, Reduce::kAlongWidth},
    {"gradient x whitened again", VectorOp::kAdd},
    {"sum of gradient x whitened", VectorOp::kReduce, Extent::kFull, Reduce::kAlongWidth},
    {"scale the sums", VectorOp::kAdd, Extent::kPerRow},
    {"whitened x sum", VectorOp::kAdd},
    {"subtract both", VectorOp::kAdd},
    {"multiply inverse std dev", VectorOp::kAdd},
};
const Steps kSoftmaxForward = {
    {"max", VectorOp::kReduce, Extent::kFull, Reduce::kAlongWidth},
    {"broadcast max", VectorOp::kCopy, Extent::kPerRow},
    {"subtract max", VectorOp::kAdd},
    {"exp", VectorOp::kExp},
    {"sum", VectorOp::kReduce, Extent::kFull, Reduce::kAlongWidth},
    {"reciprocal", VectorOp::kDivide, Extent::kPerRow},
    {"broadcast reciprocal", VectorOp::kCopy, Extent::kPerRow},
    {"normalise", VectorOp::kAdd},
};
const Steps kSoftmaxBackward = {
    {"gradient x output", VectorOp::kAdd},
    {"sum", VectorOp::kReduce, Extent::kFull, Reduce::kAlongWidth},
    {"subtract sum", VectorOp::kAdd},
    {"multiply output", VectorOp::kAdd},
};

struct Lowering {
  VectorKind kind;
  const char* name;
  Steps forward;
  Steps backward;
};

const std::array<Lowering, 12>& lowerings() {
  static const std::array<Lowering, 12> table = {{
      {VectorKind::kLayerNorm, "layer_norm", kNormForward, kNormBackward},
      {VectorKind::kGroupNorm, "group_norm", kNormForward, kNormBackward},
      {VectorKind::kSoftmax, "softmax", kSoftmaxForward, kSoftmaxBackward},
      {VectorKind::kSwish,
       "swish",
       {{"sigmoid", VectorOp::kSigmoid}, {"multiply", VectorOp::kAdd}},
       {{"sigmoid", VectorOp::kSigmoid},
        {"1 - sigmoid", VectorOp::kAdd},
        {"x sigmoid (1 - sigmoid) + sigmoid", VectorOp::kAdd},
        {"multiply gradient", VectorOp::kAdd}}},
      {VectorKind::kGelu,
       "gelu",
       {{"gelu", VectorOp::kGelu}},
       {{"gelu gradient", VectorOp::kGelu}}},
      {VectorKind::kRelu,
       "relu",
       {{"relu", VectorOp::kRelu}},
       {{"relu gradient", VectorOp::kRelu}}},
      {VectorKind::kTanh,
       "tanh",
       {{"tanh", VectorOp::kTanh}},
       {{"1 - y^2, multiply", VectorOp::kAdd}}},
      {VectorKind::kDropout,
       "dropout",
       {{"mask from seed", VectorOp::kRandom}, {"apply mask", VectorOp::kAdd}},
       {{"apply mask", VectorOp::kAdd}}},
      {VectorKind::kScale, "scale", {{"scale", VectorOp::kAdd}}, {{"scale", VectorOp::kAdd}}},
      {VectorKind::kMaskAdd, "mask_add", {{"add mask", VectorOp::kAdd}}, {}},
      {VectorKind::kAdd, "add", {{"add", VectorOp::kAdd}}, {}},
      {VectorKind::kBiasAdd,
       "bias_add",
       {{"add bias", VectorOp::kAdd}},
       {{"bias gradient", VectorOp::kReduce, Extent::kFull, Reduce::kAcrossRows}}},
  }};
  return table;
}

const Lowering& lowering_of(VectorKind kind) {
  for (const auto& l : lowerings())
    if (l.kind == kind)
      return l;
  return lowerings().front();
}

}  // namespace

std::string_view to_string(VectorKind kind) {
  return lowering_of(kind).name;
}

bool vector_kind_named(std::string_view name, VectorKind& kind) {
  for (const auto& l : lowerings())
    if (name == l.name) {
      kind = l.kind;
      return true;
    }
  return false;
}

const std::vector<std::string>& vector_kind_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& l : lowerings())
      out.emplace_back(l.name);
    return out;
  }();
  return names;
}

std::int64_t total_cycles(const std::vector<PricedComputeSet>& sets) {
  std::int64_t total = 0;
  for (const auto& set : sets)
    total += set.cycles;
  return total;
}

VectorPlan plan_vector(const TileTarget& target, VectorKind kind, const VectorShape& shape,
                       models::DType dtype) {
  const Lowering& l = lowering_of(kind);
  return {price_steps(target, l.forward, shape, dtype),
          price_steps(target, l.backward, shape, dtype)};
}

}  // namespace ipusim::sim::pricing
