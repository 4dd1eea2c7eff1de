#include "sim/spec/config_keys.hpp"

#include <algorithm>
#include <charconv>

#include "schedules/build.hpp"
#include "schedules/pipeline_shape.hpp"
#include "sim/core/error.hpp"
#include "sim/core/suggest.hpp"
#include "sim/core/units.hpp"
#include "sim/spec/hardware.hpp"
#include "sim/spec/spec.hpp"

namespace ipusim::sim {
namespace {

using core::bool_key;
using core::choice_key;
using core::Dimension;
using core::int_key;

std::string code(const std::string& text) {
  return "`" + text + "`";
}

// "`a`, `b` or `c`"
std::string choice_list(const std::vector<std::string>& names) {
  return core::quoted_list(names, "`");
}

// The largest seed a config may give (pipeline and data).
constexpr std::int64_t kMaxSeed = std::int64_t{1} << 62;

std::vector<ConfigKey> joined(std::vector<ConfigKey> first, const std::vector<ConfigKey>& second) {
  first.insert(first.end(), second.begin(), second.end());
  return first;
}

}  // namespace

ConfigKey other_key(std::string name, std::string default_text, std::string meaning) {
  return core::own_key(std::move(name), core::KeyKind::kOther, std::move(default_text),
                       std::move(meaning));
}

std::string markdown_default(const ConfigKey& key) {
  if (key.kind == core::KeyKind::kChoice && key.default_text.empty())
    return code(key.choices.at(std::size_t(key.fallback)));
  return core::key_default_text(key);
}

std::string markdown_meaning(const ConfigKey& key) {
  if (key.kind != core::KeyKind::kChoice)
    return key.meaning;
  return choice_list(key.choices) + (key.meaning.empty() ? "" : ": " + key.meaning);
}

namespace {

std::vector<ConfigKey> pipeline_layout_keys() {
  return {
      other_key("splits", "none",
                "layer ids, each starting the next stage (the TF1 tutorial's `--splits`)"),
      other_key("stages", "one stage",
                "explicit stages as lists of layer ids; an entry that is a list of lists is a "
                "concurrent stage (its sub-stages run at once on different IPUs)"),
      other_key("device_mapping", "one IPU per stage in order",
                "an IPU per stage; a list entry gives the IPUs of a concurrent stage's sub-stages"),
      choice_key("pipeline_schedule", schedule_names(), schedules::default_schedule()),
      int_key("gradient_accumulation_count", 1, 1, core::kMaxCount,
              "micro-batches per weight update (M)"),
      int_key("repeat_count", 1, 1, core::kMaxCount,
              "times the whole program (ramp-up to weight update) runs: the weight updates of one "
              "device program, which the host calls once (`hardware.host_call`). PopART's "
              "`batches_per_step`, PopTorch's `device_iterations`, TF1's training-loop "
              "`iterations`; Keras's `steps_per_execution` / `gradient_accumulation_count` (those "
              "names are errors that say so)"),
      int_key("micro_batch_size", 1, 1, 1 << 24, "samples per micro-batch"),
      int_key("replication_factor", 1, 1, 1024, "data-parallel replicas of the whole pipeline"),
      int_key("replicas_per_instance", 0, 0, 1024,
              "the replicas each process drives (poprun's `--num-replicas` / `--num-instances`), "
              "on one host, with its own input pipeline (`hardware.instance_decode_rate`); 0: one "
              "process a host. With fewer replicas one process drives them all. Example: "
              "`\"replicas_per_instance\": 4` for Graphcore's MLPerf v1.0 ResNet-50 on a POD64, 16 "
              "instances of 4 replicas"),
  };
}

std::vector<ConfigKey> pipeline_option_keys() {
  return {
      choice_key("recomputation_mode", schedules::recomputation_mode_names(), "none"),
      bool_key("recompute_checkpoint_every_layer", false,
               "stash every layer's output but each stage's last as a recomputation checkpoint, "
               "and recompute the backward a segment at a time from them (PopART and PopTorch "
               "BERT, GPT-2 and ViT's `recompute_checkpoint_every_layer`; see [Memory](#memory)). "
               "Needs `recompute_and_backpropagate_interleaved`, which `auto` then picks where the "
               "schedule has it; refused under `none` and `recompute_then_backpropagate`"),
      bool_key("offload_weight_update_variables", false,
               "keep optimizer state in streaming memory"),
      bool_key("replicated_optimizer_state_sharding", false,
               "each replica keeps 1/G of the optimizer state (on chip, or in streaming memory "
               "with `offload_weight_update_variables`), G the replicas of one IPU-Link domain; "
               "the weight update becomes reduce-scatter, update of the shard, all-gather (see "
               "[Replicas' collectives](#replicas-collectives)). With `replication_factor` 1 it "
               "has no effect (Graphcore forces it off then). TF's "
               "`replicated_optimizer_state_sharding`, PopART's `ReplicatedTensorSharding.On`. "
               "Example: `\"replicated_optimizer_state_sharding\": true`"),
      bool_key(
          "offload_activations", false,
          "keep the stash FIFOs in streaming memory (grouped, interleaved; see [Stash FIFOs in "
          "streaming memory](#stash-fifos-in-streaming-memory-pipelineoffload_activations))"),
      other_key("stash_dtype", "`dtype`",
                "`fp32`, `fp16` or `fp8`: the type of the stage inputs and checkpoints a "
                "recomputing pipeline stashes, e.g. `\"stash_dtype\": \"fp8\"` (PopART BERT's "
                "`activation_checkpoint_dtype`; see [the fp8 "
                "stash](#lamb-lars-moment-dtypes-and-an-fp8-stash))"),
      other_key("gradient_accumulation_dtype", "`dtype`", "`fp32` or `fp16` accumulators"),
      other_key("available_memory_proportion", "0.6 (poplin's)",
                "under `hardware.operations.pricing` `planned` only (refused otherwise): the share "
                "of each tile's memory a product's plan may take for its temporaries, poplin's "
                "`availableMemoryProportion`; one number, or one per IPU of a replica as "
                "PopTorch's `setAvailableMemoryProportion` takes it, e.g. `[0.15, 0.25, 0.25, "
                "0.25]`"),
      other_key("partials_dtype", "`fp32` (poplin's)",
                "under `hardware.operations.pricing` `planned` only (refused otherwise): `fp16` "
                "or `fp32`, the type a product's plan accumulates its partial sums in, poplin's "
                "`partialsType` (PopART's `enable_half_partials`, PopTorch's "
                "`Precision.setPartialsType`, TF's `partials_type` / `matmul_partials_type`); "
                "`fp16` needs an fp16 `dtype`. It sets the partials' memory, exchange and "
                "reduction and the vertex's code path, e.g. `\"partials_dtype\": \"fp16\"`"),
      choice_key("gradient_accumulation_reduction", {"mean", "sum"}, "mean"),
      other_key("optimizer", "sgd, 0.01",
                "`{\"type\": \"sgd\", \"learning_rate\": 0.01}`, `momentum` (+`momentum`), `adam` "
                "(+`beta1`, `beta2`, `epsilon`, `bias_correction`, `m_dtype`, `v_dtype`), `lamb` "
                "(Adam's keys + `weight_decay`), `lars` (`momentum`, `weight_decay`, `eta`, "
                "`epsilon`), e.g. `{\"type\": \"lamb\", \"learning_rate\": 0.002, "
                "\"weight_decay\": 0.01, \"bias_correction\": false, \"m_dtype\": \"fp16\"}`"),
      other_key("dtype", "the model input's", "`fp32` or `fp16` compute"),
      bool_key("relaxed_divisibility", false,
               "accept a `gradient_accumulation_count` that Graphcore rejects (outputs say so)"),
      other_key("training", "true if the model has a loss", "false for inference"),
      int_key("seed", 0, 0, kMaxSeed, "weight initialisation and dropout"),
  };
}

}  // namespace

const std::vector<ConfigKey>& pipeline_keys() {
  static const std::vector<ConfigKey> keys = joined(pipeline_layout_keys(), pipeline_option_keys());
  return keys;
}

namespace {

// A hardware key whose default is the gc200 preset's figure, as a config writes it.
ConfigKey preset_key(std::string name, std::string (*render)(const HardwareSpec&),
                     std::string meaning) {
  static const HardwareSpec gc200 = preset_hardware("gc200");
  return other_key(std::move(name), code(render(gc200)), std::move(meaning));
}

std::string quoted(const std::string& text) {
  return "\"" + text + "\"";
}

std::string quantity(double value, Dimension dimension) {
  return quoted(core::format_quantity(value, dimension));
}

// A field of the preset as a config writes it.
template <auto Field, Dimension dimension>
std::string quantity_of(const HardwareSpec& hw) {
  return quantity(double(hw.*Field), dimension);
}

template <auto Field>
std::string integer_of(const HardwareSpec& hw) {
  return std::to_string(hw.*Field);
}

std::string selection_order_text(const HardwareSpec& hw) {
  return quoted(selection_order_name(hw.selection_order));
}

std::string number(double value) {
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, value).ptr;
  return std::string(text, end);
}

std::string decode_rate_text(const HardwareSpec& hw) {
  return number(hw.instance_decode_rate);
}

std::string sdk_text(const HardwareSpec& hw) {
  return quoted(hw.sdk);
}

std::string peak_flops_text(const HardwareSpec& hw) {
  return "{\"fp16\": " + quantity(hw.peak_flops_fp16, Dimension::kFlopRate) +
         ", \"fp32\": " + quantity(hw.peak_flops_fp32, Dimension::kFlopRate) + "}";
}

std::string ipu_link_text(const HardwareSpec& hw) {
  return "{\"bandwidth\": " + quantity(hw.link_bandwidth, Dimension::kBandwidth) +
         ", \"latency_cycles\": " + std::to_string(hw.link_latency_cycles) +
         ", \"links_in_pair\": " + std::to_string(hw.links_in_pair) +
         ", \"links_up_down\": " + std::to_string(hw.links_up_down) +
         ", \"links_cross\": " + std::to_string(hw.links_cross) + "}";
}

std::string gw_link_text(const HardwareSpec& hw) {
  return "{\"bandwidth\": " + quantity(hw.gw_link_bandwidth, Dimension::kBandwidth) +
         ", \"latency_cycles\": " + std::to_string(hw.gw_link_latency_cycles) + "}";
}

std::string host_call_text(const HardwareSpec& hw) {
  return "{\"per_program\": " + quantity(hw.host_call_seconds, Dimension::kDuration) +
         ", \"per_tensor\": " + quantity(hw.host_call_seconds_per_tensor, Dimension::kDuration) +
         "}";
}

std::string sync_text(const HardwareSpec& hw) {
  return "{\"base_cycles\": " + std::to_string(hw.sync_base_cycles) +
         ", \"per_ipu_cycles\": " + std::to_string(hw.sync_per_ipu_cycles) +
         ", \"exchange_overhead_cycles\": " + std::to_string(hw.exchange_overhead_cycles) +
         ", \"host_cycles\": " + std::to_string(hw.host_sync_cycles) + "}";
}

std::string code_memory_text(const HardwareSpec& hw) {
  const auto bytes = [](std::int64_t value) { return quantity(double(value), Dimension::kBytes); };
  return "{\"control\": " + bytes(hw.code.control_bytes) +
         ", \"per_compute_set\": " + bytes(hw.code.compute_set_bytes) +
         ", \"per_tile_per_compute_set\": " + bytes(hw.code.tile_compute_set_bytes) + "}";
}

std::vector<ConfigKey> device_keys() {
  return {
      core::choice_key("preset", hardware_preset_names(), "gc200",
                       "the preset whose figures the other keys override; the defaults below are "
                       "gc200's, written from it"),
      other_key("ipus",
                "stages' IPUs x replicas, rounded up to a power of two (noted in the output)",
                "§2 \"IPUs per model always a power of two\""),
      preset_key("clock", quantity_of<&HardwareSpec::clock_hz, Dimension::kFrequency>,
                 "§1 MLPerf v1"),
      preset_key("tiles", integer_of<&HardwareSpec::tiles>, "§1"),
      preset_key("memory_per_ipu",
                 quantity_of<&HardwareSpec::memory_per_ipu_bytes, Dimension::kBytes>,
                 "§1: 624 KB x 1472 tiles"),
      preset_key("peak_flops", peak_flops_text, "§1 POD128 datasheet"),
      preset_key("memory_bandwidth",
                 quantity_of<&HardwareSpec::memory_bandwidth, Dimension::kBandwidth>, "§1"),
      preset_key("ipu_link", ipu_link_text, "§2 ladder model, 128 Gbit/s x 0.85 per link"),
      preset_key(
          "ipus_per_ild", integer_of<&HardwareSpec::ipus_per_ild>,
          "§2: an IPU-Link domain is one POD64 (16 IPU-Machines of 4 IPUs); POD128 and POD256 are "
          "2 and 4 of them joined by GW-Links (MLPerf v1.1/v2.0 BERT `--num-ilds`). Replicas "
          "spanning several domains must fill them alike. Example: `\"ipus_per_ild\": 64`"),
      preset_key("gw_link", gw_link_text,
                 "§2, Bow-2000 datasheet: \"GW-Link 2x 100Gbps\" per IPU-Machine (the IPU-M2000 "
                 "has the same 2 ports), shared by its 4 IPUs: 25 GB/s / 4 per IPU. The latency is "
                 "each step's fixed time in the collectives between IPU-Link domains, 140 µs at "
                 "the clock (259,000 cycles on bow), fitted to the measured runs on 2 and 4 POD64s "
                 "([Validation](#validation)). Example: `\"gw_link\": {\"bandwidth\": "
                 "\"6.25GB/s\", \"latency_cycles\": 2660}`"),
      other_key("topology", "`\"ladder\"`", "§2"),
      preset_key("selection_order", selection_order_text, "§2 (`snake`, `hoof`, `zigzag`)"),
  };
}

std::vector<ConfigKey> host_keys() {
  return {
      preset_key("host_link_bandwidth",
                 quantity_of<&HardwareSpec::host_link_bandwidth, Dimension::kBandwidth>,
                 "§2 100 GbE RoCE"),
      preset_key("host_input_bandwidth",
                 quantity_of<&HardwareSpec::host_input_bandwidth, Dimension::kBandwidth>,
                 "The most one host's input pipelines (read, decode, augment, send) prepare for "
                 "the replicas on its IPUs, beside their compute, shared by the host's instances: "
                 "a guess, one 100 GbE RoCE port's worth (§2), calibratable; unlimited on `ideal`. "
                 "See [Host input](#host-input-and-the-host-call)"),
      preset_key("instance_decode_rate", decode_rate_text,
                 "The samples one instance's input pipeline (`pipeline.replicas_per_instance`, one "
                 "process) decodes and augments a second, when the data says it does "
                 "(`data.host_decode`): fitted to the ResNet-50 runs' ImageNet JPEGs "
                 "([Validation](#validation)); unlimited on `ideal`. Example: "
                 "`\"instance_decode_rate\": 8000`"),
      preset_key(
          "host_call", host_call_text,
          "The host's time per device program (a program runs `repeat_count` weight updates): "
          "`per_program` to start it and wait for its end (a guess, a host sync each way), and "
          "`per_tensor` for each weight tensor of the model, whose optimizer values it writes and "
          "whose streams it serves (fitted to the MLPerf runs, [Validation](#validation)); 0 on "
          "`ideal`. Each instance calls its own program at the same time, so a step pays one call. "
          "See [Host input and the host call](#host-input-and-the-host-call). Example: "
          "`\"host_call\": {\"per_tensor\": \"100us\"}`"),
      preset_key(
          "sdk", sdk_text,
          choice_list(sdk_releases()) +
              ": the Poplar SDK release that compiles the program. Under fitted pricing, before "
              "2.5 the matmul and conv plans reach `operations.amp_efficiency_before_sdk_2_5` of "
              "their efficiency ([The cost of an operation](#the-cost-of-an-operation)); planned "
              "pricing plans every SDK alike. Example: `\"sdk\": \"2.1\"`"),
      other_key("ipus_per_host", "one host per IPU-Link domain (`ipus_per_ild`)",
                "how many IPUs one host feeds, e.g. `16` for Graphcore's MLPerf ResNet-50 (one "
                "host per 16 IPUs on every POD, 4 on a POD64: `poprun --num-hosts`)"),
      preset_key("streaming_memory_bandwidth",
                 quantity_of<&HardwareSpec::streaming_memory_bandwidth, Dimension::kBandwidth>,
                 "§2 PCIe Gen4 x8 upper bound"),
      preset_key("sync", sync_text,
                 "§3 IPUModel formula; host figure uncalibrated. The host's time per device "
                 "program is `host_call`"),
      other_key("operations", "see [The cost of an operation](#the-cost-of-an-operation)",
                "poplibs cycle estimators, §1, §3"),
      preset_key("code_memory", code_memory_text,
                 "a Poplar profile summary (7 MB); the rest guesses"),
  };
}

}  // namespace

const std::vector<ConfigKey>& hardware_keys() {
  static const std::vector<ConfigKey> keys = joined(device_keys(), host_keys());
  return keys;
}

const std::vector<ConfigKey>& data_keys() {
  static const std::vector<ConfigKey> keys = {
      choice_key(
          "source", {"synthetic", "synthetic_tokens", "fashion-mnist"}, "synthetic",
          "`fashion-mnist` reads the Debian package's files (see [Config keys used by numeric "
          "mode](#config-keys-used-by-numeric-mode)); the whole `data` may be just this string"),
      other_key("path", code("\"" + std::string(kFashionMnistPath) + "\""),
                "the Fashion-MNIST folder"),
      bool_key("shuffle", false, "reshuffle each epoch"),
      int_key("seed", 0, 0, kMaxSeed, "the shuffle's seed, and the synthetic sets'"),
      choice_key("labels", {"class", "masked_tokens", "next_token"}, "class",
                 "with `synthetic_tokens` only; `masked_tokens` labels masked positions (BERT), "
                 "`next_token` every position with the token after it (a causal language model)"),
      other_key("mask_probability", "0.15",
                "with `\"masked_tokens\"` only: the chance each token is masked"),
      other_key(
          "sequences_per_sample", "absent (one sequence a sample)",
          "packed sequences: the mean number of sequences in a sample (a pack), from 1 to 1,000"),
      bool_key("eight_bit_io", false,
               "images travel to the IPU as 8-bit integers and are normalised there (Graphcore's "
               "`eight_bit_io`)"),
      bool_key("host_decode", false,
               "each sample is decoded and augmented by its instance's host process (compressed "
               "images, as ImageNet's JPEGs), at most `hardware.instance_decode_rate` samples a "
               "second; otherwise samples come ready from memory"),
  };
  return keys;
}

const std::vector<ConfigSection>& config_sections() {
  static const std::vector<ConfigSection> sections = {
      {"pipeline", &pipeline_keys()}, {"hardware", &hardware_keys()}, {"data", &data_keys()}};
  return sections;
}

std::string markdown_table(const std::vector<ConfigKey>& keys, const std::string& header) {
  std::string table = header + "\n|---|---|---|\n";
  for (const auto& key : keys)
    table += "| " + code(key.name) + " | " + markdown_default(key) + " | " + markdown_meaning(key) +
             " |\n";
  return table;
}

}  // namespace ipusim::sim
