#pragma once
// Shared pieces of the kernel implementations (models/kernels_*.cpp); not for other folders.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include <Eigen/Core>

#include "models/kernels.hpp"

namespace ipusim::models::detail {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixMap = Eigen::Map<RowMatrix>;
using ConstMatrixMap = Eigen::Map<const RowMatrix>;

inline MatrixMap as_matrix(float* data, std::int64_t rows, std::int64_t cols) {
  return MatrixMap(data, rows, cols);
}
inline ConstMatrixMap as_matrix(const float* data, std::int64_t rows, std::int64_t cols) {
  return ConstMatrixMap(data, rows, cols);
}

Shape with_batch(std::int64_t batch, const Shape& sample_shape);

// Applies the activation in place, turning pre-activations into outputs.
void activate(Activation activation, std::span<float> values);
// Multiplies `gradient` by the activation's derivative, given what dense/conv2d saved for it:
// the output for relu and tanh, the pre-activation for gelu.
void activation_backward(Activation activation, std::span<float> gradient,
                         std::span<const float> saved);
// Whether dense/conv2d keep a second tensor (output or pre-activation) for the activation.
bool activation_saves_tensor(Activation activation);

float gelu(float x);
float gelu_derivative(float x);

// The placement of a conv2d or maxpool2d window over one image axis, TensorFlow's rules:
// valid: out = floor((in - k) / s) + 1; same: out = ceil(in / s), padding split with the extra
// row or column at the end.
struct WindowAxis {
  std::int64_t in = 0;
  std::int64_t kernel = 0;
  std::int64_t stride = 1;
  std::int64_t out = 0;
  std::int64_t pad_before = 0;
};
WindowAxis window_axis(std::int64_t in, std::int64_t kernel, std::int64_t stride, Padding padding);

std::unique_ptr<Kernel> make_dense(const Layer& layer, const std::vector<Shape>& inputs,
                                   DType dtype);
std::unique_ptr<Kernel> make_conv2d(const Layer& layer, const std::vector<Shape>& inputs,
                                    DType dtype);
std::unique_ptr<Kernel> make_maxpool2d(const Layer& layer, const std::vector<Shape>& inputs,
                                       DType dtype);
std::unique_ptr<Kernel> make_relu(const std::vector<Shape>& inputs, DType dtype);
std::unique_ptr<Kernel> make_gelu(const std::vector<Shape>& inputs, DType dtype);
std::unique_ptr<Kernel> make_dropout(const Layer& layer, const std::vector<Shape>& inputs,
                                     DType dtype, std::uint64_t seed);
std::unique_ptr<Kernel> make_add(const std::vector<Shape>& inputs, DType dtype);
std::unique_ptr<Kernel> make_slice(const Layer& layer, const std::vector<Shape>& inputs,
                                   DType dtype);
std::unique_ptr<Kernel> make_concat(const Layer& layer, const std::vector<Shape>& inputs,
                                    DType dtype);
std::unique_ptr<Kernel> make_flatten(const std::vector<Shape>& inputs, DType dtype);
std::unique_ptr<Kernel> make_reshape(const Layer& layer, const std::vector<Shape>& inputs,
                                     DType dtype);
std::unique_ptr<Kernel> make_softmax_cross_entropy(const std::vector<Shape>& inputs, DType dtype);

}  // namespace ipusim::models::detail
