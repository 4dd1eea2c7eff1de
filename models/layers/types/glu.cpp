// glu: the gated linear unit, PyTorch's nn.GLU: one per-sample axis split into halves a and b,
// giving a·sigmoid(b) (the axis halved).

#include <array>
#include <cmath>

#include "models/kernels/kernels_internal.hpp"
#include "models/layers/types/type_support.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {
namespace {

struct GluFields {
  std::int64_t axis = -1;
};

const std::array kGluKeys = {
    int_key<&GluFields::axis>("axis", -1, kInt32Min, kInt32Max,
                              "the per-sample axis split into a and b; negative counts from the "
                              "last"),
};

// sigmoid's four and the multiply, per output element, each way (backward da = dy·s and
// db = dy·a·s·(1 − s)).
constexpr double kGluFlops = 5;

void read_glu(const core::ConfigNode& layer, LayerParams& params) {
  own_fields_to_set<GluFields>(params);  // the defaults, when no key is given
  read_keys(layer, kGluKeys, params);
}

// The axis as an index into `rank` axes; the shape check has refused the others.
std::size_t glu_axis(const Layer& layer, std::size_t rank) {
  const std::int64_t axis = own_fields<GluFields>(layer.params).axis;
  return std::size_t(axis < 0 ? axis + std::int64_t(rank) : axis);
}

Shape glu_shape(const Layer& layer, const std::vector<InputShape>& inputs) {
  const InputShape& input = only_input(inputs);
  const std::int64_t axis = own_fields<GluFields>(layer.params).axis;
  const auto rank = std::int64_t(input.shape.size());
  if (axis < -rank || axis >= rank) {
    fail_layer(layer, "has axis " + std::to_string(axis) + ", but " + input_text(input) +
                          ", whose axes are " + std::to_string(-rank) + " to " +
                          std::to_string(rank - 1));
  }
  Shape out = input.shape;
  std::int64_t& split = out[glu_axis(layer, input.shape.size())];
  if (split % 2 != 0) {
    fail_layer(layer, "splits axis " + std::to_string(axis) + " into two halves, but its size " +
                          std::to_string(split) + " is odd: " + input_text(input));
  }
  split /= 2;
  return out;
}

// Backward needs the input, both halves.
LayerCost glu_cost(const Layer& /*layer*/, const std::vector<Shape>& /*inputs*/,
                   const CostSizes& size) {
  return operations_cost(size.in * size.d);
}

std::vector<Operation> glu_operations(const Layer& /*layer*/, const std::vector<Shape>& /*inputs*/,
                                      const Shape& output) {
  return {vector_op("glu", OpClass::kNonLinear, double(element_count(output)), kGluFlops)};
}

// The input seen as [outer, 2, half, inner] per batch: a at [o, 0, j, i], b at [o, 1, j, i].
struct GluBlocks {
  std::int64_t outer = 1;  // the batch and the axes before the split one
  std::int64_t half = 0;   // the output's size along it
  std::int64_t inner = 1;  // the axes after it

  std::int64_t a(std::int64_t o, std::int64_t k) const { return o * 2 * half * inner + k; }
  std::int64_t b(std::int64_t o, std::int64_t k) const { return a(o, k) + half * inner; }
  std::int64_t y(std::int64_t o, std::int64_t k) const { return o * half * inner + k; }
};

// Keeps its input, from which backward recomputes sigmoid(b).
class GluKernel final : public Kernel {
 public:
  GluKernel(const Layer& layer, const std::vector<Shape>& inputs, const Shape& output, DType dtype)
      : Kernel(layer.type, dtype, inputs, output), axis_(glu_axis(layer, inputs.at(0).size())) {
    IPUSIM_CHECK(inputs.size() == 1);
  }

  ForwardResult forward(const std::vector<const Tensor*>& inputs,
                        std::span<const Tensor> /*params*/,
                        const ForwardContext& /*context*/) const override {
    IPUSIM_CHECK(inputs.size() == 1 && inputs[0]->sample_shape() == input_shapes()[0]);
    const Tensor& x = *inputs[0];
    const GluBlocks g = blocks(x.batch());
    Tensor y(with_batch(x.batch()));
    for (std::int64_t o = 0; o < g.outer; ++o) {
      for (std::int64_t k = 0; k < g.half * g.inner; ++k)
        y[g.y(o, k)] = static_cast<float>(x[g.a(o, k)] * detail::logistic(x[g.b(o, k)]));
    }
    round_to_dtype(y, dtype());
    SavedState saved;
    saved.dtype = dtype();
    saved.tensors.push_back(x);
    return {std::move(y), std::move(saved), {}};
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& saved,
                               std::span<const Tensor> /*params*/,
                               std::span<GradientAccumulator> /*gradients*/) const override {
    const Tensor& x = saved.tensors.at(0);
    const GluBlocks g = blocks(x.batch());
    Tensor dx(x.shape());
    for (std::int64_t o = 0; o < g.outer; ++o) {
      for (std::int64_t k = 0; k < g.half * g.inner; ++k) {
        const double dy = output_gradient[g.y(o, k)];
        const double s = detail::logistic(x[g.b(o, k)]);
        dx[g.a(o, k)] = static_cast<float>(dy * s);
        dx[g.b(o, k)] = static_cast<float>(dy * x[g.a(o, k)] * s * (1.0 - s));
      }
    }
    round_to_dtype(dx, dtype());
    return {std::move(dx)};
  }

 private:
  GluBlocks blocks(std::int64_t batch) const {
    const Shape& shape = input_shapes()[0];
    GluBlocks g;
    g.outer = batch;
    for (std::size_t k = 0; k < shape.size(); ++k) {
      if (k < axis_)
        g.outer *= shape[k];
      else if (k > axis_)
        g.inner *= shape[k];
    }
    g.half = shape[axis_] / 2;
    return g;
  }

  Shape with_batch(std::int64_t batch) const {
    Shape shape{batch};
    shape.insert(shape.end(), output_shape().begin(), output_shape().end());
    return shape;
  }

  std::size_t axis_;
};

std::unique_ptr<Kernel> glu_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                   DType dtype, std::uint64_t /*seed*/) {
  Shape output = inputs.at(0);
  output[glu_axis(layer, output.size())] /= 2;
  return std::make_unique<GluKernel>(layer, inputs, output, dtype);
}

}  // namespace

LayerTypeDef glu_type() {
  return {.name = "glu",
          .keys = kGluKeys,
          .inputs = LayerInputs::kOne,
          .view = false,
          .read = read_glu,
          .shape = glu_shape,
          .cost = glu_cost,
          .lower = glu_operations,
          .kernel = glu_kernel};
}

}  // namespace ipusim::models
