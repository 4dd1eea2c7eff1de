#pragma once
// A validated run: the model, how it is cut into stages and mapped onto IPUs, the pipeline
// options, the hardware and the data. Every user error is found while building it, before
// the first simulated event; later stages of the data flow can trust it.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/kernels/optimizer.hpp"
#include "models/layers/dtype.hpp"
#include "models/layers/model.hpp"
#include "schedules/pipeline_shape.hpp"
#include "schedules/schedule.hpp"
#include "sim/core/config_file.hpp"
#include "sim/spec/hardware.hpp"

namespace ipusim::sim {

// One computational stage: its layers (indices into Model::layers, in topological order),
// split into sub-stages when the stage is concurrent, and the IPU of each sub-stage.
struct StageSpec {
  std::vector<std::vector<int>> substage_layers;
  std::vector<int> ipus;
  std::vector<int> layers() const;
  std::string name(const models::Model& model) const;  // "flatten-dense256-dense128"
};

// The validated "pipeline" section: stages, schedule, batching, recomputation, offloading and
// precision.
struct PipelineSpec {
  std::vector<StageSpec> stages;
  std::string schedule;  // a name from schedules::schedule_catalogue()
  std::int64_t gradient_accumulation_count = 1;
  std::int64_t repeat_count = 1;
  std::int64_t micro_batch_size = 1;
  int replication_factor = 1;
  // The replicas one process drives (poprun's --num-replicas / --num-instances); 0: one process
  // per host. Fewer replicas than that make one process.
  int replicas_per_instance = 0;
  schedules::RecomputationMode recomputation = schedules::RecomputationMode::kNone;
  // Every layer's output but each sub-stage's last is a recomputation checkpoint.
  bool recompute_checkpoint_every_layer = false;
  bool offload_weight_update_variables = false;
  bool offload_activations = false;
  // Each replica of a sharding group keeps 1/group of the optimizer state (no effect with one
  // replica).
  bool replicated_optimizer_state_sharding = false;
  models::DType dtype = models::DType::kFp32;
  models::DType gradient_accumulation_dtype = models::DType::kFp32;
  // The recomputation stashes' element type (stage inputs and checkpoints); fp8 only here.
  models::DType stash_dtype = models::DType::kFp32;
  bool gradient_accumulation_mean = true;  // "mean" divides the sum by M; "sum" does not
  models::OptimizerConfig optimizer;
  bool relaxed_divisibility = false;
  // poplin's availableMemoryProportion under planned pricing: one value, or one per IPU of a
  // replica; empty: poplin's default.
  std::vector<double> available_memory_proportion;
  // poplin's partialsType under planned pricing; unset: float, poplin's default.
  std::optional<models::DType> partials_dtype;
  bool training = true;
  std::uint64_t seed = 0;

  int ipus_per_replica() const;
  double memory_proportion(int ipu) const;  // of logical IPU `ipu`; 0.6 unless set
  std::vector<int> device_mapping() const;  // the (first) IPU of each stage
  std::int64_t samples_per_weight_update() const {
    return micro_batch_size * gradient_accumulation_count * replication_factor;
  }
};

// Where Debian's dataset-fashion-mnist package puts the files.
inline constexpr const char* kFashionMnistPath = "/usr/share/datasets/fashion-mnist";

// The most FLOPs a micro-batch (and `ipusim price`'s one pass) may compute: every operation's
// cycles then fit the 64-bit simulated time at any rate the hardware figures allow.
inline constexpr long double kMaxMicroBatchFlops = 1152921504606846976.0L;  // 2^60

// Where numeric mode takes its samples from: synthetic (seeded), synthetic_tokens (seeded token
// sequences for a model with an embedding) or Fashion-MNIST on disk.
struct DataSpec {
  std::string source = "synthetic";  // or "synthetic_tokens", "fashion-mnist"
  std::string path;                  // fashion-mnist directory
  bool shuffle = false;
  std::uint64_t seed = 0;
  std::string labels = "class";    // or "masked_tokens" (synthetic_tokens only)
  double mask_probability = 0.15;  // of each token, with "masked_tokens"
  // Packed sequences: a sample is a pack holding this many sequences on average (0: unpacked,
  // a sample is one sequence); reports give sequences/s beside samples/s.
  double sequences_per_sample = 0;
  // Graphcore's eight_bit_io: images travel to the IPU as 8-bit integers (one byte an element)
  // and are normalised there, in the first stage's forward.
  bool eight_bit_io = false;
  // Each sample is decoded and augmented on the host (compressed images), which bounds how fast
  // an instance prepares them (hardware.instance_decode_rate).
  bool host_decode = false;
};

// A validated config: everything a run needs, every user error already reported.
struct RunSpec {
  std::string config_path;
  // The loaded document, so that errors found after validation name the file or override that
  // set the value at fault.
  std::optional<core::ConfigDocument> document;
  std::string description;
  models::Model model;
  PipelineSpec pipeline;
  HardwareSpec hardware;
  DataSpec data;
  std::vector<std::string> notes;  // facts the output should mention (e.g. IPU rounding)
  // Built while validating (its rules are part of validation) and kept: the GPU-world
  // builders simulate their order once, which is costly for large M.
  std::shared_ptr<const schedules::Schedule> schedule;

  schedules::PipelineShape pipeline_shape() const;
  // Who set the value at `pointer`: a file or an override such as "--replicas 2".
  std::string source_of(const std::string& pointer) const;
};

// Loads, merges and validates a config; throws core::ConfigError on any user error.
RunSpec load_run_spec(const std::string& path, const std::vector<core::Override>& overrides);
RunSpec build_run_spec(const core::ConfigDocument& document);

const std::vector<std::string>& schedule_names();

// The replicas one host feeds: `host_ipus` IPUs' worth of whole replicas (one replica wider
// than a host still reads through one host).
int replicas_per_host(const HardwareSpec& hardware, const PipelineSpec& pipeline);
// The replicas one process (poprun instance) drives.
int instance_replicas(const HardwareSpec& hardware, const PipelineSpec& pipeline);

}  // namespace ipusim::sim
