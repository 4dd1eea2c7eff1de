#pragma once
// ONNX models as ipusim configs: reads an .onnx file (a protobuf ModelProto, with Debian's
// libonnx) and builds the config's "model" section and the initial weights from the graph's
// initializers, one ipusim layer per operator in the graph's (topological) order.
//
// Supported: Gemm and MatMul (+ an Add of a bias) as dense, over features or a sequence's
// features; Conv as conv2d; MaxPool; Relu, Tanh and GELU (the Gelu operator, or Erf written out
// as 0.5 x (1 + erf(x / sqrt 2))) folded into the layer before them when nothing else reads
// it, layers of their own otherwise; Flatten (and a Reshape to [batch, -1]); Dropout; Softmax
// over the last axis, and a Softmax ending the graph as the softmax_cross_entropy loss; Gather
// of the input's token ids as an embedding, with an Add of a [sequence, hidden] constant as its
// position table; Add and Concat of values; LayerNormalization; BatchNormalization; and
// multi-head self-attention written out (Q, K, V projections split into heads, QK^T scaled by
// 1/sqrt(head size), Softmax, optional Dropout, times V, heads merged, output projection) as
// one attention layer. ONNX images are channels first and ipusim's channels last: convolution
// kernels are transposed to [kh, kw, in, out], the rows of a dense layer after a Flatten of
// channels-first features are permuted to the order ipusim flattens in, and Concat axes are
// mapped, so the imported model computes the same function.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/kernels/tensor.hpp"

namespace ipusim::models {

// An imported model: the "model" section, and each layer's parameter tensors in ipusim's
// order (kernel, then bias) and layout.
struct OnnxImport {
  nlohmann::json model;
  std::string producer;  // "pytorch 2.1" or "onnx.helper" as the file names its producer
  std::vector<std::pair<std::string, std::vector<Tensor>>> weights;  // by layer id
  // The source's parameter count: the float initializers' elements, each read through an
  // Identity alias counted once more (PyTorch stores equal parameters once).
  std::int64_t initializer_elements = 0;
  std::int64_t aliased_initializer_elements = 0;  // of which: the aliases' copies
  std::int64_t running_statistics_elements = 0;   // batch-norm means and variances among them
  // Each batch norm's running mean and variance, by layer id.
  std::vector<std::pair<std::string, std::vector<Tensor>>> running_statistics;
  std::vector<std::string> notes;  // what the import added or changed, for the user
};

struct OnnxImportOptions {
  bool verbose = false;  // a refusal lists every node it cannot import, not only each group's first
};

// Takes the file's bytes and frees them once parsed: the parsed model holds the weights, and a
// second copy would double a large model's memory. Normalises the graph first
// (models/import/onnx_normalize.hpp). Throws core::ConfigError naming `path`: for bytes that
// are no ONNX model, a graph normalisation refuses, and the nodes ipusim cannot represent,
// grouped by operator and reason, each group's first node named with its inputs' shapes and
// what would make it importable.
OnnxImport import_onnx(std::string bytes, const std::string& path,
                       const OnnxImportOptions& options = {});

}  // namespace ipusim::models
