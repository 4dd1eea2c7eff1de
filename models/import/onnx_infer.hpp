#pragma once
// ONNX's shape inference (libonnx) run in a child process. libonnx 1.12 reads past the tensors
// of some malformed graphs (convolutions, Range: the import fuzzer found both); such a file must
// be refused, not take ipusim down with it. Internal to the ONNX import library.

#include <onnx/onnx_pb.h>

#include <string>

namespace ipusim::models {

// Runs onnx::shape_inference::InferShapes on `model` in a child process and writes back what
// it inferred (the graph's value_info and its outputs' types). Returns "" on success, else why
// inference failed: its own error, or that it crashed or ran past a minute.
std::string infer_shapes_isolated(onnx::ModelProto& model);

}  // namespace ipusim::models
