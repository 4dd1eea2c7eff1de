// crop2d: Keras' Cropping2D, [H, W, C] -> [H - top - bottom, W - left - right, C]. A view, as
// slice is (Poplar slices a tensor without copying): it costs no operations, and its kernel
// copies the kept window (backward: the gradient into it, zeros around).

#include <algorithm>
#include <array>

#include "models/layers/types/type_support.hpp"

namespace ipusim::models {
namespace {

struct Crop2dFields {
  std::int64_t top = 0;
  std::int64_t bottom = 0;
  std::int64_t left = 0;
  std::int64_t right = 0;
};

const std::array kCrop2dKeys = {
    own_key("cropping", KeyKind::kInt, "0",
            "N (every side), [h, w] (top and bottom, left and right) or [[top, bottom], "
            "[left, right]], integers from 0"),
};

// One side pair: N, or [before, after].
std::pair<std::int64_t, std::int64_t> crop2d_sides(const core::ConfigNode& value) {
  if (!value.is_array()) {
    const std::int64_t both = value.as_int(0, core::kMaxCount);
    return {both, both};
  }
  if (value.size() != 2)
    value.fail("expected [before, after], found a list of " + std::to_string(value.size()));
  return {value.at(std::size_t{0}).as_int(0, core::kMaxCount),
          value.at(std::size_t{1}).as_int(0, core::kMaxCount)};
}

// Keras' forms: N, [h, w] or [[top, bottom], [left, right]].
void read_crop2d(const core::ConfigNode& layer, LayerParams& params) {
  Crop2dFields& own = own_fields_to_set<Crop2dFields>(params);
  const auto value = layer.find("cropping");
  if (!value)
    return;
  if (!value->is_array()) {
    own.top = own.bottom = own.left = own.right = value->as_int(0, core::kMaxCount);
    return;
  }
  if (value->size() != 2) {
    value->fail("expected N, [h, w] or [[top, bottom], [left, right]], found a list of " +
                std::to_string(value->size()));
  }
  std::tie(own.top, own.bottom) = crop2d_sides(value->at(std::size_t{0}));
  std::tie(own.left, own.right) = crop2d_sides(value->at(std::size_t{1}));
}

Shape crop2d_shape(const Layer& layer, const std::vector<InputShape>& inputs) {
  const InputShape& input = only_input(inputs);
  expect_image(layer, input);
  const Crop2dFields& c = own_fields<Crop2dFields>(layer.params);
  const std::int64_t rows = input.shape[0] - c.top - c.bottom;
  const std::int64_t cols = input.shape[1] - c.left - c.right;
  if (rows < 1 || cols < 1) {
    fail_layer(layer, "crops [[" + std::to_string(c.top) + ", " + std::to_string(c.bottom) +
                          "], [" + std::to_string(c.left) + ", " + std::to_string(c.right) +
                          "]], which leaves nothing of its input: " + input_text(input));
  }
  return {rows, cols, input.shape[2]};
}

// Copies rows [top, top + out rows) and columns [left, left + out columns) of each sample.
class Crop2dKernel final : public Kernel {
 public:
  Crop2dKernel(const Layer& layer, const std::vector<Shape>& inputs, DType dtype)
      : Kernel(layer.type, dtype, inputs, cropped(layer, inputs.at(0))),
        top_(own_fields<Crop2dFields>(layer.params).top),
        left_(own_fields<Crop2dFields>(layer.params).left) {}

  ForwardResult forward(const std::vector<const Tensor*>& inputs,
                        std::span<const Tensor> /*params*/,
                        const ForwardContext& /*context*/) const override {
    IPUSIM_CHECK(inputs.size() == 1 && inputs[0]->sample_shape() == input_shapes()[0]);
    const Tensor& x = *inputs[0];
    Tensor y(with_batch(x.batch()));
    for_each_row(x.batch(), [&](std::int64_t in, std::int64_t out, std::int64_t width) {
      std::copy(x.data() + in, x.data() + in + width, y.data() + out);
    });
    return {std::move(y), SavedState{}, {}};
  }

  std::vector<Tensor> backward(const Tensor& output_gradient, const SavedState& /*saved*/,
                               std::span<const Tensor> /*params*/,
                               std::span<GradientAccumulator> /*gradients*/) const override {
    const std::int64_t batch = output_gradient.batch();
    Shape shape = input_shapes()[0];
    shape.insert(shape.begin(), batch);
    Tensor dx(shape);
    for_each_row(batch, [&](std::int64_t in, std::int64_t out, std::int64_t width) {
      std::copy(output_gradient.data() + out, output_gradient.data() + out + width, dx.data() + in);
    });
    return {std::move(dx)};
  }

 private:
  static Shape cropped(const Layer& layer, const Shape& input) {
    const Crop2dFields& c = own_fields<Crop2dFields>(layer.params);
    IPUSIM_CHECK(input.size() == 3);
    return {input[0] - c.top - c.bottom, input[1] - c.left - c.right, input[2]};
  }

  Shape with_batch(std::int64_t batch) const {
    Shape shape = output_shape();
    shape.insert(shape.begin(), batch);
    return shape;
  }

  // Calls visit(input offset, output offset, elements) for each kept row of each sample.
  template <typename Visit>
  void for_each_row(std::int64_t batch, Visit visit) const {
    const Shape& in = input_shapes()[0];
    const Shape& out = output_shape();
    const std::int64_t channels = in[2];
    for (std::int64_t n = 0; n < batch; ++n) {
      for (std::int64_t r = 0; r < out[0]; ++r) {
        visit(((n * in[0] + top_ + r) * in[1] + left_) * channels,
              (n * out[0] + r) * out[1] * channels, out[1] * channels);
      }
    }
  }

  std::int64_t top_;
  std::int64_t left_;
};

std::unique_ptr<Kernel> crop2d_kernel(const Layer& layer, const std::vector<Shape>& inputs,
                                      DType dtype, std::uint64_t /*seed*/) {
  return std::make_unique<Crop2dKernel>(layer, inputs, dtype);
}

}  // namespace

LayerTypeDef crop2d_type() {
  return {.name = "crop2d",
          .keys = kCrop2dKeys,
          .inputs = LayerInputs::kOne,
          .view = true,
          .read = read_crop2d,
          .shape = crop2d_shape,
          .cost = no_cost,
          .lower = no_operations,
          .kernel = crop2d_kernel};
}

}  // namespace ipusim::models
