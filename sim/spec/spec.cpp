#include "sim/spec/spec.hpp"

#include <algorithm>

#include "models/layers/layer_types.hpp"
#include "schedules/build.hpp"
#include "schedules/schedule_error.hpp"
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/core/suggest.hpp"
#include "sim/spec/config_keys.hpp"
#include "sim/spec/spec_checks.hpp"
#include "sim/spec/stages.hpp"

namespace ipusim::sim {
namespace {

using core::ConfigNode;
using schedules::RecomputationMode;

// Scale bounds: far beyond any real run, low enough that products and sums of them over
// micro-batches, stash depths and repeats stay within 64 bits.
constexpr std::int64_t kMaxSamplesPerUpdate = std::int64_t{1} << 50;
constexpr std::int64_t kMaxMicroBatchBytes = std::int64_t{1} << 50;
constexpr std::size_t kMaxDescriptionBytes = 10'000;

RecomputationMode read_recomputation(const ConfigNode& pipeline) {
  return schedules::recomputation_mode_of(
      read_choice(pipeline, declared_key(pipeline_keys(), "recomputation_mode")));
}

models::DType read_dtype(const ConfigNode& node) {
  return node.as_enum({"fp32", "fp16"}) == "fp16" ? models::DType::kFp16 : models::DType::kFp32;
}

// The stash may also be fp8: a storage type only, cast to and from around the FIFO.
models::DType read_stash_dtype(const ConfigNode& node) {
  const auto name = node.as_enum({"fp32", "fp16", "fp8"});
  return name == "fp8"    ? models::DType::kFp8
         : name == "fp16" ? models::DType::kFp16
                          : models::DType::kFp32;
}

double read_positive_number(const ConfigNode& node) {
  const double value = node.as_number();
  if (!(value > 0) || value > 1e6)
    node.fail("expected a positive number");
  return value;
}

double read_share(const ConfigNode& node) {
  const double value = node.as_number();
  if (!(value >= 0 && value < 1))
    node.fail("expected a number in [0, 1)");
  return value;
}

// The keys each optimizer type takes. Adam and LAMB store their moments in m_dtype and v_dtype,
// the names of Graphcore's TF AdamIpuOptimizer and LAMBIpuOptimizer (ipu_tensorflow_addons).
std::vector<std::string> optimizer_keys(const std::string& type) {
  if (type == "sgd")
    return {"type", "learning_rate"};
  if (type == "momentum")
    return {"type", "learning_rate", "momentum"};
  if (type == "lars")
    return {"type", "learning_rate", "momentum", "weight_decay", "eta", "epsilon"};
  std::vector<std::string> keys = {"type",    "learning_rate",   "beta1",   "beta2",
                                   "epsilon", "bias_correction", "m_dtype", "v_dtype"};
  if (type == "lamb")
    keys.push_back("weight_decay");
  return keys;
}

// Defaults of the rule: Keras' for SGD, momentum and Adam; for LAMB those of Graphcore's
// LAMBIpuOptimizer (learning rate 0.001, epsilon 1e-6, weight decay rate 0, debiasing on); for
// LARS the MLPerf ResNet-50 reference's LARSOptimizer (momentum 0.9, eeta 0.001, epsilon 0).
models::OptimizerConfig optimizer_defaults(const std::string& type) {
  using Kind = models::OptimizerConfig::Kind;
  models::OptimizerConfig optimizer;
  optimizer.kind = type == "lars"       ? Kind::kLars
                   : type == "lamb"     ? Kind::kLamb
                   : type == "adam"     ? Kind::kAdam
                   : type == "momentum" ? Kind::kMomentum
                                        : Kind::kSgd;
  if (type == "adam" || type == "lamb")
    optimizer.learning_rate = 0.001;
  if (type == "lamb")
    optimizer.epsilon = 1e-6;
  if (type == "lars")
    optimizer.epsilon = 0;
  return optimizer;
}

models::OptimizerConfig read_optimizer(const ConfigNode* node) {
  if (!node)
    return optimizer_defaults("sgd");
  const auto type = node->at("type").as_enum({"sgd", "momentum", "adam", "lamb", "lars"});
  node->expect_only_keys(optimizer_keys(type));
  models::OptimizerConfig optimizer = optimizer_defaults(type);
  if (auto v = node->find("learning_rate"))
    optimizer.learning_rate = read_positive_number(*v);
  if (auto v = node->find("momentum"))
    optimizer.momentum = read_share(*v);
  if (auto v = node->find("beta1"))
    optimizer.beta1 = read_share(*v);
  if (auto v = node->find("beta2"))
    optimizer.beta2 = read_share(*v);
  if (auto v = node->find("epsilon"))
    optimizer.epsilon = type == "lars" ? read_share(*v) : read_positive_number(*v);
  if (auto v = node->find("eta"))
    optimizer.eta = read_positive_number(*v);
  if (auto v = node->find("weight_decay"))
    optimizer.weight_decay = read_share(*v);
  if (auto v = node->find("m_dtype"))
    optimizer.m_dtype = read_dtype(*v);
  if (auto v = node->find("v_dtype"))
    optimizer.v_dtype = read_dtype(*v);
  optimizer.bias_correction = node->get_bool("bias_correction", true);
  return optimizer;
}

double read_memory_proportion(const ConfigNode& node) {
  const double value = node.as_number();
  if (!(value > 0 && value <= 1))
    node.fail("expected a share of tile memory in (0, 1], found " + node.json().dump());
  return value;
}

// A number, or a list of one per IPU of a replica (its length checked with the stages).
std::vector<double> read_memory_proportions(const ConfigNode& node) {
  if (!node.json().is_array())
    return {read_memory_proportion(node)};
  std::vector<double> out;
  for (const auto& item : node.items())
    out.push_back(read_memory_proportion(item));
  if (out.empty())
    node.fail("expected a number or a list of one per IPU, found []");
  return out;
}

void read_scalars(const ConfigNode& pipeline, const models::Model& model, PipelineSpec& spec) {
  const auto key = [](std::string_view name) -> const ConfigKey& {
    return declared_key(pipeline_keys(), name);
  };
  spec.schedule = read_choice(pipeline, key("pipeline_schedule"));
  spec.gradient_accumulation_count = read_int(pipeline, key("gradient_accumulation_count"));
  spec.repeat_count = read_int(pipeline, key("repeat_count"));
  spec.micro_batch_size = read_int(pipeline, key("micro_batch_size"));
  spec.replication_factor = int(read_int(pipeline, key("replication_factor")));
  spec.replicas_per_instance = int(read_int(pipeline, key("replicas_per_instance")));
  spec.recomputation = read_recomputation(pipeline);
  spec.recompute_checkpoint_every_layer =
      read_bool(pipeline, key("recompute_checkpoint_every_layer"));
  // Checkpoints act only where each segment is rebuilt just before its backward, as PopART
  // recomputes: auto picks that mode where the schedule has it.
  constexpr auto interleaved = RecomputationMode::kRecomputeAndBackpropagateInterleaved;
  if (spec.recompute_checkpoint_every_layer && spec.recomputation == RecomputationMode::kAuto &&
      schedules::supports_recomputation(spec.schedule, interleaved))
    spec.recomputation = interleaved;
  spec.offload_weight_update_variables =
      read_bool(pipeline, key("offload_weight_update_variables"));
  spec.offload_activations = read_bool(pipeline, key("offload_activations"));
  spec.replicated_optimizer_state_sharding =
      read_bool(pipeline, key("replicated_optimizer_state_sharding"));
  spec.dtype = pipeline.find("dtype") ? read_dtype(pipeline.at("dtype")) : model.dtype;
  spec.gradient_accumulation_dtype = pipeline.find("gradient_accumulation_dtype")
                                         ? read_dtype(pipeline.at("gradient_accumulation_dtype"))
                                         : spec.dtype;
  spec.stash_dtype =
      pipeline.find("stash_dtype") ? read_stash_dtype(pipeline.at("stash_dtype")) : spec.dtype;
  spec.gradient_accumulation_mean =
      read_choice(pipeline, key("gradient_accumulation_reduction")) == "mean";
  const auto optimizer = pipeline.find("optimizer");
  spec.optimizer = read_optimizer(optimizer ? &*optimizer : nullptr);
  spec.relaxed_divisibility = read_bool(pipeline, key("relaxed_divisibility"));
  if (auto v = pipeline.find("available_memory_proportion"))
    spec.available_memory_proportion = read_memory_proportions(*v);
  if (auto v = pipeline.find("partials_dtype"))
    spec.partials_dtype = read_dtype(*v);
  spec.training = pipeline.get_bool("training", model.trainable);
  if (spec.training && !model.trainable) {
    pipeline.at("training").fail("the model has no loss layer, so it can only run inference");
  }
  spec.seed = std::uint64_t(read_int(pipeline, key("seed")));
}

// Free text shown in reports; bounded so that no report grows with a runaway field.
std::string read_description(const ConfigNode& root) {
  const auto node = root.find("description");
  if (!node)
    return "";
  std::string text = node->as_string();
  if (text.size() > kMaxDescriptionBytes) {
    node->fail("expected a description of at most " +
               with_commas(std::int64_t(kMaxDescriptionBytes)) + " bytes, found " +
               std::to_string(text.size()));
  }
  return text;
}

// Samples per weight update are counted in 64 bits, with room for sums over repeats.
void check_samples_per_update(const ConfigNode& pipeline, const PipelineSpec& spec) {
  const long double samples = (long double)spec.micro_batch_size *
                              (long double)spec.gradient_accumulation_count *
                              (long double)spec.replication_factor;
  if (samples <= (long double)kMaxSamplesPerUpdate)
    return;
  const auto node = pipeline.find("gradient_accumulation_count");
  (node ? *node : pipeline)
      .fail(
          "micro_batch_size x gradient_accumulation_count x replication_factor is more than "
          "2^50 samples per weight update; ipusim counts at most " +
          with_commas(kMaxSamplesPerUpdate));
}

// Graphcore's APIs name the weight updates of one device program each their own way; a user
// porting a config reaches for them, so each says what it is here.
void reject_graphcore_repeat_names(const ConfigNode& pipeline) {
  struct Alias {
    const char* key;
    const char* what;
  };
  static constexpr Alias kAliases[] = {
      {"batches_per_step",
       "PopART's batches_per_step counts the weight updates one device program "
       "runs: write it as repeat_count"},
      {"device_iterations",
       "PopTorch's device_iterations counts the weight updates one device "
       "program runs: write it as repeat_count"},
      {"steps_per_execution",
       "Keras's steps_per_execution counts micro-batches: write steps_per_execution / "
       "gradient_accumulation_count as repeat_count"},
      {"iterations",
       "the iterations of TF1's training loop around the pipeline op are the "
       "weight updates one device program runs: write them as repeat_count"},
  };
  for (const auto& alias : kAliases) {
    if (auto v = pipeline.find(alias.key))
      v->fail(alias.what);
  }
}

PipelineSpec read_pipeline(const ConfigNode& pipeline, const models::Model& model) {
  reject_graphcore_repeat_names(pipeline);
  pipeline.expect_only_keys(key_names(pipeline_keys()));
  PipelineSpec spec;
  spec.stages = read_stages(model, pipeline);
  read_scalars(pipeline, model, spec);
  check_samples_per_update(pipeline, spec);
  return spec;
}

// Bytes one micro-batch touches across the model, bounded so that every byte count the cost
// model and the replay derive from it (per micro-batch, times stash depths) fits in 64 bits.
void check_micro_batch_bytes(const RunSpec& spec, const ConfigNode& root) {
  long double per_sample = 0;
  for (const auto& info : spec.model.info) {
    per_sample += (long double)info.activation_bytes + (long double)info.saved_bytes +
                  (long double)info.bytes_moved_forward + (long double)info.bytes_moved_backward;
  }
  if (per_sample * (long double)spec.pipeline.micro_batch_size <= (long double)kMaxMicroBatchBytes)
    return;
  const auto pipeline = root.find("pipeline");
  const auto node = pipeline ? pipeline->find("micro_batch_size") : std::nullopt;
  (node ? *node : root.at("model"))
      .fail("one micro-batch of " + std::to_string(spec.pipeline.micro_batch_size) +
            " samples moves more than 2^50 bytes (1 PiB) through the model; that is not "
            "plausible for one weight update's micro-batch");
}

// FLOPs one micro-batch computes across the model, bounded so that every operation's cycles, at
// any rate the hardware figures allow, fit in the 64-bit simulated time: a window or a product
// far beyond any model would otherwise pass here and overflow only when a command prices it.
// The error names the layer that computes the most, where the size is usually set.
void check_micro_batch_work(const RunSpec& spec) {
  long double per_sample = 0, largest = -1;
  std::size_t heaviest = 0;
  for (std::size_t l = 0; l < spec.model.info.size(); ++l) {
    const auto& info = spec.model.info[l];
    const long double flops = (long double)info.forward_flops + (long double)info.backward_flops;
    per_sample += flops;
    if (flops > largest)
      std::tie(largest, heaviest) = std::pair(flops, l);
  }
  const auto batch = (long double)spec.pipeline.micro_batch_size;
  if (per_sample * batch <= kMaxMicroBatchFlops)
    return;
  const models::Layer& layer = spec.model.layers[heaviest];
  throw core::ConfigError(
      layer.file.empty() ? spec.config_path : layer.file, layer.pointer,
      "layer '" + layer.id + "' (" + models::layer_type_name(layer.type) + ") computes " +
          si(double(largest * batch), "FLOP") + " for one micro-batch of " +
          std::to_string(spec.pipeline.micro_batch_size) + " samples, and the model " +
          si(double(per_sample * batch), "FLOP") +
          ": more than 2^60 (1.15 EFLOP), which no weight update's micro-batch computes");
}

// Masked-token labels: only synthetic_tokens draws them, and a mask probability acts only there.
void read_token_labels(const ConfigNode& node, DataSpec& data) {
  const auto labels = node.find("labels");
  if (labels && data.source != "synthetic_tokens")
    labels->fail("labels are chosen for \"synthetic_tokens\" data only");
  data.labels = read_choice(node, declared_key(data_keys(), "labels"));
  if (const auto probability = node.find("mask_probability")) {
    if (data.labels != "masked_tokens")
      probability->fail("a mask probability needs \"labels\": \"masked_tokens\"");
    data.mask_probability = probability->as_number();
    if (!(data.mask_probability > 0 && data.mask_probability <= 1))
      probability->fail("expected a number in (0, 1]");
  }
}

// Token labels draw ids from the first embedding's vocabulary: a next token needs two ids to
// differ, masked tokens also keep id 0 for padding and the last id for [MASK].
void check_token_vocabulary(const RunSpec& spec, const ConfigNode& root) {
  const std::string& labels = spec.data.labels;
  const std::int64_t needed = labels == "next_token" ? 2 : labels == "masked_tokens" ? 4 : 0;
  const auto embedding = std::find_if(
      spec.model.layers.begin(), spec.model.layers.end(),
      [](const models::Layer& layer) { return layer.type == models::LayerType::kEmbedding; });
  if (needed == 0 || embedding == spec.model.layers.end() || embedding->params.vocab_size >= needed)
    return;
  root.at("data").at("labels").fail(
      (labels == "next_token" ? "next-token labels need a vocabulary of at least 2 ids"
                              : "masked-token labels need a vocabulary of at least 4 ids (0 "
                                "for padding and the last for [MASK])") +
      std::string(", but layer '") + embedding->id + "' (embedding) has vocab_size " +
      std::to_string(embedding->params.vocab_size));
}

// Without a `data` section, or with just its source as a string, every other key takes its
// declared default, read from an empty section so that the defaults are the declarations'.
DataSpec read_data(const std::optional<ConfigNode>& section) {
  static const nlohmann::json kNoKeys = nlohmann::json::object();
  static const core::Origins kNoOrigins;
  const auto key = [](std::string_view name) -> const ConfigKey& {
    return declared_key(data_keys(), name);
  };
  const bool has_keys = section && !section->is_string();
  const ConfigNode node = has_keys ? *section : ConfigNode(kNoKeys, "/data", kNoOrigins);
  if (has_keys)
    node.expect_only_keys(key_names(data_keys()));
  DataSpec data;
  data.source = section && section->is_string() ? section->as_enum(key("source").choices)
                                                : read_choice(node, key("source"));
  data.path = node.get_string("path", kFashionMnistPath);
  data.shuffle = read_bool(node, key("shuffle"));
  data.seed = std::uint64_t(read_int(node, key("seed")));
  read_token_labels(node, data);
  data.eight_bit_io = read_bool(node, key("eight_bit_io"));
  data.host_decode = read_bool(node, key("host_decode"));
  if (const auto packed = node.find("sequences_per_sample")) {
    data.sequences_per_sample = packed->as_number();
    // A pack holds at least one sequence; a thousand per sample is no packing anyone runs.
    if (!(data.sequences_per_sample >= 1 && data.sequences_per_sample <= 1000))
      packed->fail(
          "expected the mean number of sequences in one sample (a pack), from 1 to "
          "1000, found " +
          packed->json().dump());
  }
  return data;
}

// The schedule builder knows Graphcore's rules; its refusal becomes a config error at the
// option that caused it.
std::shared_ptr<const schedules::Schedule> build_schedule(const RunSpec& spec,
                                                          const ConfigNode& root) {
  try {
    return schedules::build_schedule(spec.pipeline.schedule, spec.pipeline_shape());
  } catch (const schedules::ScheduleError& error) {
    const std::string key(schedules::option_key(error.option()));
    const auto pipeline = root.at("pipeline");
    const auto node = pipeline.find(key);
    (node ? *node : pipeline).fail(error.what());
  }
}

}  // namespace

std::vector<int> StageSpec::layers() const {
  std::vector<int> out;
  for (const auto& sub : substage_layers)
    out.insert(out.end(), sub.begin(), sub.end());
  std::sort(out.begin(), out.end());
  return out;
}

std::string StageSpec::name(const models::Model& model) const {
  std::string out;
  for (std::size_t sub = 0; sub < substage_layers.size(); ++sub) {
    if (sub > 0)
      out += " | ";
    for (std::size_t i = 0; i < substage_layers[sub].size(); ++i) {
      if (i > 0)
        out += "-";
      out += model.layers[substage_layers[sub][i]].id;
    }
  }
  return out;
}

std::vector<int> PipelineSpec::device_mapping() const {
  std::vector<int> out;
  for (const auto& stage : stages)
    out.push_back(stage.ipus.front());
  return out;
}

double PipelineSpec::memory_proportion(int ipu) const {
  if (available_memory_proportion.empty())
    return 0.6;  // poplin ConvOptions.hpp: availableMemoryProportion's default
  if (available_memory_proportion.size() == 1)
    return available_memory_proportion.front();
  return available_memory_proportion.at(std::size_t(ipu));
}

int PipelineSpec::ipus_per_replica() const {
  int count = 0;
  for (const auto& stage : stages) {
    for (int ipu : stage.ipus)
      count = std::max(count, ipu + 1);
  }
  return count;
}

const std::vector<std::string>& schedule_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& info : schedules::schedule_catalogue())
      out.push_back(info.name);
    return out;
  }();
  return names;
}

schedules::PipelineShape RunSpec::pipeline_shape() const {
  schedules::PipelineShape shape;
  for (const auto& stage : pipeline.stages)
    shape.device_mapping.push_back(stage.ipus);
  shape.microbatches = pipeline.gradient_accumulation_count;
  shape.repeat_count = pipeline.repeat_count;
  shape.recomputation = pipeline.recomputation;
  shape.training = pipeline.training;
  shape.relaxed_divisibility = pipeline.relaxed_divisibility;
  shape.replicas = pipeline.replication_factor;
  return shape;
}

std::string RunSpec::source_of(const std::string& pointer) const {
  return document ? document->source_of(pointer) : config_path;
}

RunSpec build_run_spec(const core::ConfigDocument& document) {
  const ConfigNode root = document.root();
  root.expect_only_keys({"description", "model", "pipeline", "hardware", "data"});
  RunSpec spec;
  spec.config_path = document.path();
  spec.document = document;
  spec.description = read_description(root);
  spec.model = models::parse_model(root.at("model"));
  const auto pipeline = root.find("pipeline");
  // An absent optional section reads as an empty object, so defaults come from one place.
  const auto empty = core::ConfigDocument::from_json(nlohmann::json::object(), document.path());
  spec.pipeline = read_pipeline(pipeline ? *pipeline : empty.root(), spec.model);
  spec.model = models::with_compute_dtype(std::move(spec.model), spec.pipeline.dtype);
  check_micro_batch_bytes(spec, root);
  check_micro_batch_work(spec);
  std::string note;
  const auto hardware = root.find("hardware");
  const int needed = spec.pipeline.ipus_per_replica() * spec.pipeline.replication_factor;
  spec.hardware = parse_hardware(hardware ? *hardware : empty.root(), needed, &note);
  if (!note.empty())
    spec.notes.push_back(note);
  spec.data = read_data(root.find("data"));
  check_token_vocabulary(spec, root);
  spec.schedule = build_schedule(spec, root);
  check_across_sections(spec, root);
  return spec;
}

int replicas_per_host(const HardwareSpec& hardware, const PipelineSpec& pipeline) {
  return std::clamp(hardware.host_ipus() / pipeline.ipus_per_replica(), 1,
                    pipeline.replication_factor);
}

int instance_replicas(const HardwareSpec& hardware, const PipelineSpec& pipeline) {
  if (pipeline.replicas_per_instance == 0)
    return replicas_per_host(hardware, pipeline);
  return std::min(pipeline.replicas_per_instance, pipeline.replication_factor);
}

RunSpec load_run_spec(const std::string& path, const std::vector<core::Override>& overrides) {
  return build_run_spec(core::ConfigDocument::load(path, overrides));
}

}  // namespace ipusim::sim
