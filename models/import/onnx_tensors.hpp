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

// The most nodes of a graph ipusim imports. Its config takes a layer a node, 60 bytes or more
// each, so a larger graph's could not be read back (core::kMaxConfigBytes, 64 MiB); a smaller
// graph whose config would still pass that is refused when the config is written.
constexpr int kMaxOnnxNodes = 1'000'000;

// Refuses a graph of more than kMaxOnnxNodes nodes; checks every node's input and output counts
// against what its operator reads and writes, its attributes against its schema at `opset`
// (names and types, as onnx.checker does), every initializer's and Constant's shape
// (dimensions of 0 or more, an element count a file of at most 1 GB can hold), and that each
// initializer and value is named once.
void check_onnx_graph(const onnx::GraphProto& graph, std::int64_t opset, const std::string& path);

// A float32 initializer as a tensor (float_data or raw little-endian bytes), decoded once and
// checked in the same pass; an error names it when it is of another type, holds another number
// of values than its shape, or holds a NaN or an infinity.
Tensor onnx_float_tensor(const onnx::TensorProto& t, const std::string& path);

// A 2-D float32 initializer [rows, cols] as its transpose [cols, rows], decoded straight into
// place (a Gemm's transB weight, PyTorch's nn.Linear), with onnx_float_tensor's checks.
Tensor onnx_transposed_float_matrix(const onnx::TensorProto& t, const std::string& path);

// A 4-D float32 initializer, ONNX's [out, in, kh, kw] convolution kernel, as ipusim's
// [kh, kw, in, out], decoded straight into place with onnx_float_tensor's checks.
Tensor onnx_conv_kernel_tensor(const onnx::TensorProto& t, const std::string& path);

}  // namespace ipusim::models
