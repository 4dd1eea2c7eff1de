#pragma once
// The converter behind import_onnx (models/import/onnx_import.hpp): it walks an ONNX graph in its
// (topological) order and emits one ipusim layer per operator or pattern, with the layer's
// weights. Its bookkeeping (values, ids, problems) is in onnx_import.cpp; the operators of
// images and features in onnx_layers.cpp, and those of sequences, norms and joins in
// onnx_sequence_layers.cpp. Internal to the ONNX import library.

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/import/onnx_import.hpp"
#include "models/import/onnx_normalize.hpp"
#include "models/import/onnx_patterns.hpp"
#include "models/kernels/tensor.hpp"

namespace ipusim::models::onnx_detail {

using nlohmann::json;

// The layout of an activation as ONNX holds it: [C, H, W] images or flat features.
struct Activation {
  std::string layer;  // the ipusim layer producing it
  Shape onnx_shape;   // without the batch axis
  bool channels_first = false;
};

// A node's attribute of each kind, or `fallback` when the node has none of that name.
std::int64_t int_attribute(const onnx::NodeProto& node, const std::string& name,
                           std::int64_t fallback);
std::vector<std::int64_t> ints_attribute(const onnx::NodeProto& node, const std::string& name);
std::string string_attribute(const onnx::NodeProto& node, const std::string& name,
                             const std::string& fallback);
float float_attribute(const onnx::NodeProto& node, const std::string& name, float fallback);

// A float as the shortest decimal that reads back as it (1e-12, not 9.99999996e-13), so the
// config shows what the exporter wrote.
double decimal(float value);

// A value's name in an ipusim layer id: letters, digits, '_', '-' and single dots.
std::string sanitized(std::string id);

// Whether `t` is a [rows, width] (or [1, rows, width]) constant.
bool is_constant_of(const Tensor& t, std::int64_t rows, std::int64_t width);

// PyTorch's GroupNorm: the value it reads, the Add's output it writes, the groups and epsilon,
// and the constants of the per-channel scale and bias.
struct GroupNormPattern {
  std::string input;
  std::string output;
  std::int64_t groups = 0;
  double epsilon = 0;
  std::string scale;
  std::string bias;
};

// Converts one graph into `out`: throws core::ConfigError listing every node it cannot import.
class OnnxConverter {
 public:
  // `graph` as normalize_onnx left it, with what it inferred.
  OnnxConverter(const onnx::GraphProto& graph, const OnnxNormalized& normalized,
                const std::string& path, const OnnxImportOptions& options, OnnxImport& out);
  void convert();

 private:
  void add_input();
  bool ends_in_logits();

  // A sample's shape as the graph declares it: dimensions from 1 up, 2^30 elements at most (a
  // larger one is no model ipusim simulates, and its sizes would overflow).
  void check_sample_shape(const std::string& name, const Shape& shape) const;

  // Attention blocks and Erf GELUs become one layer each, emitted at their first node.
  void find_patterns();

  std::optional<AttentionPattern> match_any_attention(const onnx::NodeProto& softmax,
                                                      std::string& why) const;

  void claim(const std::set<int>& nodes);

  // An attention projection's weight [hidden, hidden] and bias in ipusim's x W + b.
  std::vector<Tensor> projection_weights(const AttentionProjection& p, std::int64_t hidden) const;

  using Handler = void (OnnxConverter::*)(const onnx::NodeProto&);
  static const std::map<std::string, Handler>& handlers();

  void convert_node(int n);

  // Records why `node` cannot be imported; the nodes fed by it then go unmentioned.
  void problem(const onnx::NodeProto& node, const std::string& why);

  // The refusal (onnx_refusals.cpp): the problems grouped by operator and reason, each group's
  // first node with its inputs' shapes and what would make it importable; every node with
  // --verbose.
  std::string refusal() const;
  std::string inputs_text(const onnx::NodeProto& node) const;
  std::string remedy(const onnx::NodeProto& node) const;
  // Why an operator without a handler cannot be imported.
  static std::string no_layer_reason(const std::string& op);

  void fail_outputs(const onnx::NodeProto& node);

  const onnx::TensorProto* initializer(const onnx::NodeProto& node, int input) const;

  // The activation `tensor` holds, or null: silently when it comes from a node that already
  // failed, with a problem for `node` when it comes from nothing imported.
  const Activation* value(const std::string& tensor, const onnx::NodeProto& node);

  const Activation* value(const onnx::NodeProto& node);

  // `wanted`, or `wanted_2`, `wanted_3`, ... when a layer has it: in time linear in the layers
  // over all calls, however many nodes share a name.
  std::string unique_id(const std::string& wanted) const;

  // Appends `layer` to the model, indexing it by id.
  void push_layer(json layer);

  std::string id_of(const onnx::NodeProto& node) const;

  // Adds `layer` reading `inputs` (ipusim ids), its output held in `output`.
  void add_layer(json layer, const std::string& output, Activation produced,
                 const std::vector<std::string>& inputs, std::vector<Tensor> weights = {});

  // A dense layer on `in` with kernel [in, units] in ONNX's row order, written to `output`.
  void dense(const onnx::NodeProto& node, const Activation& in, Tensor kernel,
             const onnx::TensorProto* bias, const std::string& output);

  void gemm(const onnx::NodeProto& node);

  // MatMul by an initializer, with the Add of a constant that alone reads it as the bias.
  void matmul(const onnx::NodeProto& node);

  // A Conv's or pool's window over an image (onnx_layers.cpp).
  struct Window {
    std::vector<std::int64_t> kernel, strides;
    std::vector<std::int64_t> dilations;  // rows, columns: the step between the kernel's taps
    std::vector<std::int64_t> pads;       // top, left, bottom, right
    bool ceil_mode = false;
    bool same = false;    // auto_pad SAME_UPPER: TensorFlow's "same"
    std::string problem;  // an auto_pad ipusim does not read
    json padding() const;
    std::int64_t out(std::int64_t in, int axis) const;
    // The inputs the kernel spans along `axis`, (kernel - 1) x dilation + 1, once the window
    // has no problem_over an image.
    std::int64_t span(int axis) const;
    std::string problem_over(const Shape& image) const;
  };
  static Window window_of(const onnx::NodeProto& node, const std::vector<std::int64_t>& kernel);

  void conv(const onnx::NodeProto& node);
  // Why a Conv's (in_axis 1) or ConvTranspose's (0) kernel, group and dilations do not fit
  // `channels`, or "". `kernel` is the kernel's shape in ONNX's layout.
  std::string kernel_problem(const onnx::NodeProto& node, const Shape& kernel,
                             std::int64_t channels, int in_axis) const;
  // onnx_conv_transpose.cpp: ConvTranspose as conv2d_transpose; Clip(x, 0, 6) as relu6;
  // PyTorch's HardSigmoid as hard_sigmoid (and x times it as hard_swish), HardSwish as
  // hard_swish.
  void conv_transpose(const onnx::NodeProto& node);
  void clip(const onnx::NodeProto& node);
  void hard_sigmoid(const onnx::NodeProto& node);
  void hard_swish(const onnx::NodeProto& node);

  void pool(const onnx::NodeProto& node);
  void global_average_pool(const onnx::NodeProto& node);
  // A Pad of zeros around an image, read by one AveragePool: PyTorch's AvgPool2d with
  // count_include_pad, which the pool takes in (padded_ holds the pads).
  void pad(const onnx::NodeProto& node);

  void named_activation(const onnx::NodeProto& node);

  // An activation (its nodes, input and output as a GELU pattern's): folded into the dense or
  // convolution before it when nothing else reads that layer's output, a layer of its own
  // otherwise.
  void activation(const GeluPattern& nodes, const std::string& name, const onnx::NodeProto& node);

  void flatten(const onnx::NodeProto& node);
  bool reshapes_to_features(const onnx::NodeProto& node) const;

  // Sequences and learned tensors (onnx_token_layers.cpp).
  void layer_norm_pattern(const LayerNormPattern& norm);
  std::vector<std::int64_t> reduced_axes(const onnx::NodeProto& node) const;
  void reduce_mean(const onnx::NodeProto& node);
  void select_token(const onnx::NodeProto& node, const Activation& in);
  bool position_table(const onnx::NodeProto& node, const Activation& in,
                      const onnx::TensorProto& constant);
  void expand(const onnx::NodeProto& node);
  bool class_token(const onnx::NodeProto& node);
  bool patches(const onnx::NodeProto& node, const Activation& in);

  // A layer id from a node name PyTorch writes as its module path and operator,
  // "/layer1/layer1.0/conv1/Conv" -> "layer1.0.conv1" ("layer1.0.add" for an operator of a
  // module with submodules); a pattern's name (no `op_type`) is a module path; other names
  // sanitized; `fallback` for an empty name.
  std::string module_id(const std::string& name, const std::string& op_type,
                        const std::string& fallback) const;
  void find_scopes();

  // Values PyTorch holds [sequence, batch, ...] (a batch_first=False model): onnx_import.cpp.
  static bool per_position(const std::string& op);
  void carry_layout(const std::string& input, const std::string& output);
  void transpose(const onnx::NodeProto& node);

  void dropout(const onnx::NodeProto& node);

  // The per-sample axis an ONNX axis (counting the batch, possibly negative) names; -1 for the
  // batch axis or one out of range.
  static std::int64_t sample_axis(std::int64_t axis, const Activation& in);

  // Whether an ONNX axis is ipusim's last (the one its layer norm, softmax and batch norm use).
  static bool is_last_axis(std::int64_t axis, const Activation& in);

  void softmax(const onnx::NodeProto& node);

  // Gather of the model input's token ids from a [vocabulary, hidden] initializer: a plain
  // embedding lookup (positions and a layer norm may be folded in by what follows).
  void gather(const onnx::NodeProto& node);

  void add(const onnx::NodeProto& node);

  // onnx_gates.cpp: a Sigmoid, or with the Mul by its input that reads it alone a swish; a Mul
  // of two layers' outputs, the one that broadcasts to the other second.
  void sigmoid(const onnx::NodeProto& node);
  // The Mul that multiplies the node's one input by its output (x * sigmoid(x)), or null.
  const onnx::NodeProto* times_own_input(const onnx::NodeProto& node) const;
  // The node as an `alone` layer, or with that Mul as one `gated` layer (swish, hard_swish).
  void gate_or_activation(const onnx::NodeProto& node, const std::string& alone,
                          const std::string& gated);
  void mul(const onnx::NodeProto& node);
  void split(const onnx::NodeProto& node);
  // A Conv of a global average pool's [C, 1, 1] (onnx_gates.cpp): true when it took the node.
  bool pooled_conv(const onnx::NodeProto& node, const Activation& in);

  // A [sequence, hidden] table added to a plain lookup's output: the lookup's position table.
  void add_positions(const onnx::NodeProto& node, const Activation& in,
                     const onnx::TensorProto& constant);

  std::vector<Tensor>& weights_of(const std::string& layer);

  void concat(const onnx::NodeProto& node);

  // A feature vector initializer, or ones / zeros when the node leaves it out.
  Tensor feature_vector(const onnx::NodeProto& node, int input, std::int64_t width, float fallback);

  void layer_norm(const onnx::NodeProto& node);

  // Batch normalization of image channels or features, with its running mean and variance.
  void batch_norm(const onnx::NodeProto& node);

  // onnx_group_norm.cpp: PyTorch's GroupNorm around an InstanceNormalization, recorded by
  // find_patterns (its other nodes skipped), then converted at the InstanceNormalization.
  void find_group_norm(const onnx::NodeProto& norm);
  void instance_norm(const onnx::NodeProto& node);

  // Why an attention block cannot be one ipusim attention layer, or "".
  static std::string attention_problem(const AttentionPattern& block, const Activation& in,
                                       const std::vector<Tensor>& weights);

  void attention(const AttentionPattern& block);

  const onnx::GraphProto& graph_;
  const std::string& path_;
  OnnxImport& out_;
  OnnxGraphIndex index_;
  std::map<int, AttentionPattern> attention_at_;  // by the block's first node
  std::map<int, GeluPattern> gelu_at_;
  std::map<int, LayerNormPattern> layer_norm_at_;
  std::map<int, GroupNormPattern> group_norm_at_;  // by InstanceNormalization
  std::map<std::string, std::string> expanded_;    // Expand outputs: the initializer expanded
  std::set<std::string> inner_scopes_;             // module paths that hold submodules' nodes
  std::set<std::string> sequence_first_;           // ONNX values laid out [sequence, batch, ...]
  std::vector<std::string> written_;               // values the node being converted wrote
  std::map<int, std::string> attention_why_;       // by Softmax: why its attention is refused
  std::map<std::string, Activation> values_;
  // Pad outputs an AveragePool reads: top, left, bottom, right, added to its window.
  std::map<std::string, std::vector<std::int64_t>> padded_;
  std::set<int> skipped_;
  std::set<std::string> failed_;  // outputs of nodes that could not be imported
  json layers_ = json::array();
  std::unordered_map<std::string, std::size_t> layer_at_;  // layers_ by id
  // By wanted name, the first suffix unique_id still has to try: every lower one is taken.
  mutable std::unordered_map<std::string, int> next_suffix_;
  struct Problem {
    const onnx::NodeProto* node;
    std::string why;
  };
  std::vector<Problem> problems_;  // in graph order
  std::int64_t opset_;
  bool verbose_;
  bool softmax_end_ = false;
};

}  // namespace ipusim::models::onnx_detail
