#pragma once
// The ONNX import's first pass: rewrites a model's graph as exported (PyTorch's, with its
// Identity aliases, Shape chains of a dynamic batch and masks computed from constants) into a
// canonical one the importer's node-by-node conversion can match:
//  - the graph is read at ONNX opsets 13 to 18 only (core::ConfigError otherwise, saying how to
//    re-export);
//  - every graph input's first (batch) dimension is static: 1 where it was symbolic or missing;
//  - no Identity is left: its readers read its input (a graph output keeps its name);
//  - every value computed from constants alone by an operator folding knows
//    (onnx_fold::is_foldable_op) is a Constant node, so a Reshape's target or a mask is a
//    constant, except what reads a float initializer (a layer's weights stay initializers);
//  - every node reads only values written before it (graph inputs, initializers, earlier
//    nodes), so there is no cycle;
//  - ONNX shape inference has run on the result: `shapes` holds every value's full shape
//    (batch first) that it could infer with static dimensions.
// Hostile files are refused with a core::ConfigError naming the file; what folding creates is
// bounded (models/import/onnx_fold.hpp).

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ipusim::models {

// The opsets of the default ONNX domain the importer reads.
constexpr std::int64_t kFirstOnnxOpset = 13;
constexpr std::int64_t kLastOnnxOpset = 18;

// What normalisation learnt beside the rewritten graph.
struct OnnxNormalized {
  std::int64_t opset = 0;
  // Every value's full shape with static dimensions, by name: graph inputs (batch fixed),
  // initializers, constants and what shape inference derived.
  std::map<std::string, std::vector<std::int64_t>> shapes;
  // Elements of initializers read under a second name through an Identity: PyTorch stores two
  // parameters of equal values (zero biases, ones of a norm) once, and the second reads it
  // through an Identity. Each such alias counts once more, so the source's parameter count is
  // the initializers' elements plus these.
  std::int64_t aliased_initializer_elements = 0;
  int folded_nodes = 0;  // nodes replaced by the constants they compute
};

// Rewrites `model`'s graph as described above; throws core::ConfigError naming `path`.
OnnxNormalized normalize_onnx(onnx::ModelProto& model, const std::string& path);

}  // namespace ipusim::models
