#pragma once
// Multi-operator patterns in an ONNX graph that are one ipusim layer: multi-head self-attention
// as exporters write it (three projections reshaped into heads, QKᵀ scaled, Softmax, the
// weighted sum of V, heads merged, an output projection) and GELU written with Erf
// (0.5 x (1 + erf(x / √2)), PyTorch's export of nn.GELU before opset 20).

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ipusim::models {

// Who produces and who reads each tensor of a graph, its constants (initializers and the
// values of Constant nodes) and, for a normalised graph, the shapes inference found.
class OnnxGraphIndex {
 public:
  using Shapes = std::map<std::string, std::vector<std::int64_t>>;
  // `shapes`: full shapes (batch first) by value name, as OnnxNormalized::shapes holds them.
  explicit OnnxGraphIndex(const onnx::GraphProto& graph, Shapes shapes = {});

  const onnx::GraphProto& graph() const { return graph_; }
  // The node writing `tensor`, or null for graph inputs, initializers and unknown names.
  const onnx::NodeProto* producer(const std::string& tensor) const;
  // The one node reading `tensor`, or null when none or several read it (or it is a graph
  // output, which the outside reads).
  const onnx::NodeProto* sole_consumer(const std::string& tensor) const;
  // False when `tensor` is a graph output or read by several nodes.
  bool read_at_most_once(const std::string& tensor) const;
  // Whether only nodes among `nodes` read `tensor` (and it is no graph output).
  bool read_only_by(const std::string& tensor, const std::set<int>& nodes) const;
  int index_of(const onnx::NodeProto& node) const;
  const onnx::TensorProto* constant(const std::string& tensor) const;
  bool is_initializer(const std::string& tensor) const { return initializers_.contains(tensor); }
  // A constant's values as doubles (float, double or int64); empty when not a constant.
  std::vector<double> constant_values(const std::string& tensor) const;
  // The full shape of `tensor` (batch first, every dimension static), or nullopt when shape
  // inference could not tell it.
  std::optional<std::vector<std::int64_t>> shape(const std::string& tensor) const;

 private:
  const onnx::GraphProto& graph_;
  std::map<const onnx::NodeProto*, int> indices_;  // protobuf keeps nodes apart, not in an array
  std::map<std::string, int> producers_;
  std::map<std::string, std::vector<int>> consumers_;
  std::map<std::string, const onnx::TensorProto*> constants_;
  std::set<std::string> initializers_;
  std::set<std::string> outputs_;
  Shapes shapes_;
};

// Where one of an attention's projections (Q, K, V, output) takes its parameters: a weight
// [in, out] ([out, in] when transposed, as Gemm's transB reads it) and a bias, or the
// part-th third of a packed Q/K/V projection's.
struct AttentionProjection {
  const onnx::TensorProto* weight = nullptr;
  const onnx::TensorProto* bias = nullptr;
  bool transposed = false;
  int part = -1;
};

// A self-attention block: every node in it, the tensor it reads and the one it writes, the
// heads and the attention-probability dropout, and where its projections' parameters are, in
// ipusim's order (query, key, value, output).
struct AttentionPattern {
  std::set<int> nodes;
  std::string input;
  std::string output;
  std::string name;  // the longest common prefix of the block's node names
  std::int64_t heads = 0;
  std::int64_t head_size = 0;  // both from 1 up, as the Reshape into heads names them
  double dropout = 0.0;
  bool causal = false;          // a constant causal mask on the scores
  bool sequence_first = false;  // its input and output are [sequence, batch, hidden]
  std::vector<AttentionProjection> projections;
};

// The full shape (with the batch) of a value of the graph, when known.
using OnnxShapeOf = std::function<std::optional<std::vector<std::int64_t>>(const std::string&)>;

// Self-attention in any layout an exporter writes (onnx_attention.cpp): nn.MultiheadAttention's
// packed projection sliced into Q, K and V, heads folded into the batch, the scale on Q or on
// the scores, a causal mask added or applied with Where. nullopt with `why` set as
// match_attention's.
std::optional<AttentionPattern> match_layout_attention(const OnnxGraphIndex& index,
                                                       const onnx::NodeProto& softmax,
                                                       const OnnxShapeOf& shape_of,
                                                       std::string& why);

// A layer normalization over the last axis written out (onnx_layer_norm.cpp): its nodes, input
// and output, epsilon, and its scale and bias initializers (empty when it is not affine).
struct LayerNormPattern {
  std::set<int> nodes;
  std::string input;
  std::string output;
  std::string name;
  double epsilon = 0.0;
  std::string scale;
  std::string bias;
};

// The layer norm whose mean is the ReduceMean `mean`, or nullopt.
std::optional<LayerNormPattern> match_layer_norm(const OnnxGraphIndex& index,
                                                 const onnx::NodeProto& mean);

// The longest common prefix of the names of `nodes`, without trailing separators.
std::string common_node_prefix(const OnnxGraphIndex& index, const std::set<int>& nodes);

// The MatMul of an attention's probabilities (after an optional Dropout, whose ratio it sets)
// by V, both taken into `block`; null with `why` set when the Softmax is not so read.
const onnx::NodeProto* weighted_sum(const OnnxGraphIndex& index, const onnx::NodeProto& softmax,
                                    AttentionPattern& block, std::string& why);

// A Dropout node's ratio: its attribute (before opset 12) or constant input; 0.5 by default.
double dropout_ratio(const OnnxGraphIndex& index, const onnx::NodeProto& dropout);

// The attention block whose Softmax is `softmax`; nullopt with `why` set when the Softmax
// belongs to something else or to an attention ipusim cannot represent (`why` empty when the
// Softmax is not inside a QKᵀ-softmax-V product at all).
std::optional<AttentionPattern> match_attention(const OnnxGraphIndex& index,
                                                const onnx::NodeProto& softmax, std::string& why);

// A GELU written with Erf: its nodes, input and output.
struct GeluPattern {
  std::set<int> nodes;
  std::string input;
  std::string output;
  std::string name;
  bool tanh = false;  // the tanh approximation (match_gelu_tanh), not the exact erf form  // as an
                      // attention's
};

// The tanh-approximated GELU around `tanh` (onnx_gelu_tanh.cpp), or nullopt.
std::optional<GeluPattern> match_gelu_tanh(const OnnxGraphIndex& index,
                                           const onnx::NodeProto& tanh);

// The GELU around `erf`, or nullopt when the Erf computes something else.
std::optional<GeluPattern> match_gelu(const OnnxGraphIndex& index, const onnx::NodeProto& erf);

}  // namespace ipusim::models
