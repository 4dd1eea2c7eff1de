#pragma once
// Constant folding for the ONNX import's normalisation (models/import/onnx_normalize.hpp): the
// values of a node whose inputs are all constants, for the operators exporters use to compute
// shapes and masks (Shape chains of a dynamic batch, PyTorch's causal masks). A file is hostile:
// what folding may create is bounded (kMaxFoldedElements per tensor, kMaxFoldedTotal in all),
// and a size that is negative or past the bound is a core::ConfigError naming the node, checked
// before anything is allocated. A node folding does not understand (another type, an attribute
// it does not read, an integer overflow) is left in the graph, where the importer names it.

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ipusim::models::onnx_fold {

// 2^24 elements: a causal mask of 4,096 positions; shape computations hold a handful. Folding
// computes in doubles, a copy or two at a time, so this bounds a tensor to 128 MB.
constexpr int kMaxFoldedElementsLog2 = 24;
constexpr std::int64_t kMaxFoldedElements = std::int64_t{1} << kMaxFoldedElementsLog2;
// 2^26 elements over the whole graph: four such masks, 512 MB of doubles at most.
constexpr int kMaxFoldedTotalLog2 = 26;
constexpr std::int64_t kMaxFoldedTotal = std::int64_t{1} << kMaxFoldedTotalLog2;

// "2^24 (16777216)": a bound as refusals state it.
std::string bound_text(int log2);

// A constant's values as folding computes with them: integers (INT64, INT32, BOOL) exactly in
// `ints`, reals (FLOAT, DOUBLE) as doubles in `reals`; one of the two holds every element, in
// row-major order.
struct Constant {
  std::int32_t type = onnx::TensorProto::INT64;  // an onnx::TensorProto::DataType
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> ints;
  std::vector<double> reals;

  bool real() const;
  std::int64_t size() const;
};

// Whether folding computes with values of `type` (FLOAT, DOUBLE, INT64, INT32, BOOL).
bool foldable_type(std::int32_t type);

// A tensor's values, or nullopt when its type is not foldable, it holds another number of
// values than its dimensions say, or more than kMaxFoldedElements.
std::optional<Constant> read_constant(const onnx::TensorProto& t);

// `c` as a tensor named `name` (raw little-endian data, as exporters write).
onnx::TensorProto tensor_of(const Constant& c, const std::string& name);

// What folding has created so far, checked against kMaxFoldedTotal.
class FoldBudget {
 public:
  explicit FoldBudget(const std::string& path) : path_(path) {}
  // The element count of `dims`, refused (naming `node`) when a dimension is negative or the
  // count passes kMaxFoldedElements or the total kMaxFoldedTotal; counted as spent.
  std::int64_t spend(const std::vector<std::int64_t>& dims, const onnx::NodeProto& node);
  const std::string& path() const { return path_; }

 private:
  const std::string& path_;
  std::int64_t total_ = 0;
};

// The value of `node`'s only output from its inputs' values (null for an absent optional
// input), or nullopt when folding leaves the node. Shape is folded by the caller, which knows
// shapes; Identity and Constant are not folded here.
std::optional<Constant> fold_node(const onnx::NodeProto& node,
                                  const std::vector<const Constant*>& inputs, FoldBudget& budget);

// The value of a Shape node (with its start and end attributes) of a tensor of shape `dims`.
Constant fold_shape(const onnx::NodeProto& node, const std::vector<std::int64_t>& dims);

// The operators fold_node evaluates.
bool is_foldable_op(const std::string& op);

}  // namespace ipusim::models::onnx_fold
