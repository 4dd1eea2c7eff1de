#pragma once
// The checks an .onnx file passes before ipusim reads its graph, and its float initializers as
// ipusim tensors. A file is read as hostile: a node without the inputs its operator takes, an
// initializer whose dimensions are negative or whose element count runs past what a file
// holds, a weight that is not finite, are each a core::ConfigError naming the file and the
// node or initializer, never a read past a buffer.

#include <onnx/onnx_pb.h>

#include <string>

#include "models/kernels/tensor.hpp"

namespace ipusim::models {

// Checks every node's input and output counts against what its operator reads and writes, and
// every initializer's and Constant's shape (dimensions of 0 or more, an element count a file
// of at most 1 GB can hold).
void check_onnx_graph(const onnx::GraphProto& graph, const std::string& path);

// A float32 initializer as a tensor (float_data or raw little-endian bytes); an error names it
// when it is of another type, holds another number of values than its shape, or holds a NaN or
// an infinity.
Tensor onnx_float_tensor(const onnx::TensorProto& t, const std::string& path);

// A [rows, cols] matrix as [cols, rows].
Tensor onnx_transposed_matrix(const Tensor& m);

// A dense kernel whose rows follow a channels-first flatten of [C, H, W], reordered to the
// channels-last flatten ipusim's input has. The kernel has C x H x W rows.
Tensor onnx_rows_channels_last(const Tensor& kernel, const Shape& chw);

// ONNX's [out, in, kh, kw] convolution kernel as ipusim's [kh, kw, in, out].
Tensor onnx_conv_kernel(const Tensor& w);

}  // namespace ipusim::models
