// Follows graphcore/poplibs @7eac0f26 lib/popops/popopsCycleEstimators.cpp: BinaryOp1D (26
// worker cycles for half, 29 for float, plus the loop; a natural-width loop costs 2 more cycles
// for its loads and stores), UnaryOp1D (17 worker cycles, 33 for exp, plus 9), the common
// supervisor overhead of 11 (PerformanceEstimation.cpp, basicOpSupervisorOverhead), and
// lib/poplin/PerformanceEstimation.hpp getReduceCycleEstimate for the on-tile reduction. Float
// takes half the elements per vector and, off the natural-width ops, twice the cycles [D].

#include "sim/pricing/vector_vertex.hpp"

namespace ipusim::sim::pricing {
namespace {

struct Rate {
  std::int64_t cycles_per_loop;
  std::int64_t elements_per_loop;  // 0: the natural vector width
  std::int64_t worker_overhead;
};

Rate rate_of(VectorOp op, bool is_float) {
  const std::int64_t slow = is_float ? 2 : 1;
  switch (op) {
    case VectorOp::kAdd:
      return {1 + 2, 0, is_float ? 29 : 26};
    case VectorOp::kExp:
      return {4 * slow, 4, 33 + 9};
    case VectorOp::kTanh:
      return {4 * slow, 4, 17 + 9};
    case VectorOp::kSigmoid:
      return {6 * slow, 4, 17 + 9};
    case VectorOp::kRelu:
      return {3, 4, 17 + 9};
    case VectorOp::kSquare:
      return {2 * slow, 4, 17 + 9};
    case VectorOp::kRsqrt:
      return {19 * slow, 4, 17 + 9};
    case VectorOp::kDivide:
      return {21 * slow, 4, 26};
    case VectorOp::kGelu:
      return {8 * slow, 4, 17 + 9};
    case VectorOp::kReduce:
      return {1, 4, 20};
    case VectorOp::kRandom:
      return {4, 4, 17 + 9};
    case VectorOp::kCopy:
      return {1, 8 / (is_float ? 4 : 2), 10};
  }
  return {1, 0, 0};
}

}  // namespace

std::string_view to_string(VectorOp op) {
  switch (op) {
    case VectorOp::kAdd:
      return "add";
    case VectorOp::kExp:
      return "exp";
    case VectorOp::kTanh:
      return "tanh";
    case VectorOp::kSigmoid:
      return "sigmoid";
    case VectorOp::kRelu:
      return "relu";
    case VectorOp::kSquare:
      return "square";
    case VectorOp::kRsqrt:
      return "rsqrt";
    case VectorOp::kDivide:
      return "divide";
    case VectorOp::kGelu:
      return "gelu";
    case VectorOp::kReduce:
      return "reduce";
    case VectorOp::kRandom:
      return "random";
    case VectorOp::kCopy:
      return "copy";
  }
  return "?";
}

std::int64_t vector_vertex_cycles(const TileTarget& target, VectorOp op, models::DType dtype,
                                  std::int64_t elements) {
  if (elements <= 0)
    return 0;
  const Rate rate = rate_of(op, dtype == models::DType::kFp32);
  const std::int64_t per_loop =
      rate.elements_per_loop > 0 ? rate.elements_per_loop : target.vector_width(dtype);
  const std::int64_t per_worker = ceil_div(elements, target.workers);
  const std::int64_t worker =
      rate.worker_overhead + rate.cycles_per_loop * ceil_div(per_worker, per_loop);
  const std::int64_t supervisor = op == VectorOp::kReduce ? 33 : 11;
  return target.workers * worker + supervisor;
}

}  // namespace ipusim::sim::pricing
