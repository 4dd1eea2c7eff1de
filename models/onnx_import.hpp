#pragma once
// ONNX models as ipusim configs: reads an .onnx file (a protobuf ModelProto, with Debian's
// libonnx) and builds the config's "model" section and the initial weights from the graph's
// initializers, one ipusim layer per operator in the graph's (topological) order.
//
// Supported: Gemm and MatMul (+ an Add of a bias) as dense, Conv as conv2d, MaxPool,
// Relu and Tanh folded into the layer before them, Flatten (and a Reshape to [batch, -1]),
// Dropout, and a Softmax ending the graph, which becomes the softmax_cross_entropy loss. ONNX
// images are channels first and ipusim's channels last: convolution kernels are transposed to
// [kh, kw, in, out], and the rows of a dense layer after a Flatten of channels-first features
// are permuted to the order ipusim flattens in, so the imported model computes the same
// function.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/tensor.hpp"

namespace ipusim::models {

// An imported model: the "model" section, and each layer's parameter tensors in ipusim's
// order (kernel, then bias) and layout.
struct OnnxImport {
  nlohmann::json model;
  std::string producer;  // "pytorch 2.1" or "onnx.helper" as the file names its producer
  std::vector<std::pair<std::string, std::vector<Tensor>>> weights;  // by layer id
  std::int64_t initializer_elements = 0;                             // the source's parameter count
};

// Throws core::ConfigError naming `path`: for bytes that are no ONNX model, and for every node
// ipusim cannot represent, all listed in one message with their names and operator types.
OnnxImport import_onnx(const std::string& bytes, const std::string& path);

}  // namespace ipusim::models
