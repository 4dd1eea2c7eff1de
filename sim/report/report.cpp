#include "sim/report/report.hpp"
#include "schedules/build.hpp"
#include "sim/core/format.hpp"
#include "sim/report/numeric_report.hpp"
#include "sim/report/operations_report.hpp"
#include "sim/report/run_metrics.hpp"
#include "sim/report/weight_update_report.hpp"

namespace ipusim::sim {
namespace {

std::string cycles_and_time(std::int64_t cycles, double clock_hz) {
  return with_commas(cycles) + " cycles (" + fixed(double(cycles) / clock_hz * 1e3, 4) + " ms)";
}

// Tables and messages name IPUs logically; links also give the physical IPUs they join.
std::string ipu_numbering(const RunReport& r) {
  std::string physical;
  for (const auto& ipu : r.replay.ipus)
    physical += (physical.empty() ? "" : ", ") + std::to_string(ipu.physical);
  return "IPU numbers are logical (device_mapping); their physical IPUs (selection_order " +
         selection_order_name(r.spec->hardware.selection_order) + "): " + physical;
}

// What the run recomputes, when it does: the mode auto resolved to is named as such.
std::string recomputation_text(const RunSpec& spec) {
  const auto resolved = spec.schedule->recomputation();
  if (!spec.pipeline.training || resolved == schedules::RecomputationMode::kNone)
    return "";
  const bool automatic = spec.pipeline.recomputation == schedules::RecomputationMode::kAuto;
  return "recomputation: " + schedules::to_string(resolved) +
         (automatic ? " (auto, under the " + spec.schedule->name() + " schedule)" : "") +
         (spec.pipeline.recompute_checkpoint_every_layer ? ", a checkpoint at every layer" : "") +
         "\n";
}

std::string header(const RunReport& r) {
  const auto& spec = *r.spec;
  const auto& p = spec.pipeline;
  std::string out = "ipusim run: " + spec.model.name + " (" + spec.config_path + ")\n";
  out += r.schedule + " schedule, " + std::to_string(p.stages.size()) + " stage(s) on " +
         std::to_string(p.ipus_per_replica()) + " IPU(s) x " +
         std::to_string(p.replication_factor) + " replica(s) of " + spec.hardware.preset + " at " +
         fixed(spec.hardware.clock_hz / 1e9, 2) + " GHz\n";
  out += ipu_numbering(r) + "\n" + ild_text(r) + recomputation_text(spec);
  if (r.relaxed) {
    out += "relaxed divisibility: Graphcore would reject gradient_accumulation_count " +
           std::to_string(p.gradient_accumulation_count) + " for this schedule\n";
  }
  for (const auto& note : spec.notes)
    out += "note: " + note + "\n";
  return out;
}

std::string timing(const RunReport& r) {
  const auto& p = r.spec->pipeline;
  const double clock = r.spec->hardware.clock_hz;
  // Inference has no weight update: a step is one pass of the micro-batches.
  std::string out =
      std::string(p.training ? "\nStep (one weight update): " : "\nStep (one inference pass): ") +
      cycles_and_time(r.replay.step_cycles, clock) + "\n";
  out += "Throughput: " + with_commas(std::llround(r.figures.throughput)) + " samples/s (" +
         (p.training ? "effective batch " : "samples per pass ") +
         with_commas(p.samples_per_weight_update()) + " = micro-batch " +
         std::to_string(p.micro_batch_size) + " x " +
         (p.training ? "gradient accumulation " : "micro-batches ") +
         std::to_string(p.gradient_accumulation_count) + " x " +
         std::to_string(p.replication_factor) + " replica(s))\n";
  if (const auto sequences = r.figures.sequence_throughput) {
    out += "Sequences: " + with_commas(std::llround(*sequences)) + " sequences/s (packed, " +
           fixed(r.spec->data.sequences_per_sample, 3) + " sequences per sample)\n";
  }
  if (p.repeat_count > 1) {
    out += "Repeat count " + std::to_string(p.repeat_count) + ": " +
           cycles_and_time(r.run_cycles, clock) + " per run\n";
  }
  std::vector<std::vector<std::string>> rows = {{"Phase", "Cycles", "Time", "Share of step"}};
  for (const auto phase : schedules::phases_of_run(p.training)) {
    const auto cycles = r.replay.phase_cycles[schedules::index(phase)];
    // A schedule without this phase (sequential has no ramps) shows a dash, not zeros.
    if (cycles == 0)
      rows.push_back({std::string(schedules::to_string(phase)), "-", "-", "-"});
    else
      rows.push_back({std::string(schedules::to_string(phase)), with_commas(cycles),
                      fixed(r.figures.phase_seconds[schedules::index(phase)] * 1e3, 4) + " ms",
                      percent(r.figures.phase_share[schedules::index(phase)])});
  }
  out += "\n" + render_table(rows, {false, true, true, true}) + weight_update_text(r) +
         host_input_text(r);
  out += "Ramp overhead: " + percent(r.figures.ramp_overhead) +
         " of the IPUs' time in the step, idle in ramp-up and ramp-down\n";
  out += "Bubble: " + percent(r.figures.bubble_fraction) +
         " of IPU time idle in the pipeline phases (idle/busy " + fixed(r.figures.bubble_ratio, 4) +
         ")\n";
  return out;
}

std::string utilisation(const RunReport& r) {
  const auto phases = schedules::phases_of_run(r.spec->pipeline.training);
  std::vector<std::string> heading = {"IPU", "Utilisation"};
  for (const auto phase : phases)
    heading.push_back(schedules::phase_heading(phase));
  heading.insert(heading.end(), {"Busy cycles", "Host link"});
  std::vector<std::vector<std::string>> rows = {heading};
  for (std::size_t i = 0; i < r.replay.ipus.size(); ++i) {
    const auto& figures = r.figures.ipus[i];
    std::vector<std::string> row = {std::to_string(i), percent(figures.utilisation)};
    for (const auto phase : phases)
      row.push_back(r.replay.phase_cycles[schedules::index(phase)] == 0
                        ? "-"
                        : percent(figures.utilisation_by_phase[schedules::index(phase)]));
    row.push_back(with_commas(r.replay.ipus[i].busy_cycles));
    row.push_back(percent(figures.host_link_utilisation));
    rows.push_back(row);
  }
  std::string out = "\nUtilisation per IPU (compute busy / phase length)\n" +
                    render_table(rows, std::vector<bool>(heading.size(), true));
  for (std::size_t k = 0; k < r.replay.links.size(); ++k) {
    const auto& link = r.replay.links[k];
    out += "IPU-Link IPU" + std::to_string(link.from_ipu) + " -> IPU" +
           std::to_string(link.to_ipu) + " (physical IPU" + std::to_string(link.from_physical) +
           " -> IPU" + std::to_string(link.to_physical) +
           "): " + percent(r.figures.link_utilisation[k]) + " busy, " +
           si(double(link.bytes), "B") + " per step\n";
  }
  return out;
}

bool uses_streaming_memory(const RunReport& r) {
  for (const auto& ipu : r.replay.ipus) {
    if (!ipu.streaming_memory.empty() || ipu.streaming_bytes > 0)
      return true;
  }
  return false;
}

// Off chip: what each IPU keeps in streaming memory and how busy its link there is.
std::string streaming(const RunReport& r) {
  if (!uses_streaming_memory(r))
    return "";
  const auto& hw = r.spec->hardware;
  std::vector<std::vector<std::string>> rows = {
      {"IPU", "Stash FIFOs", "Optimizer state", "Link busy", "Link bytes per step"}};
  for (std::size_t i = 0; i < r.replay.ipus.size(); ++i) {
    const auto& ipu = r.replay.ipus[i];
    rows.push_back(
        {std::to_string(i), si(double(bytes_of(ipu.streaming_memory, MemoryCategory::kStash)), "B"),
         si(double(bytes_of(ipu.streaming_memory, MemoryCategory::kOptimizerState)), "B"),
         percent(r.figures.ipus[i].streaming_link_utilisation),
         si(double(ipu.streaming_bytes), "B")});
  }
  return "\nStreaming memory per IPU (off chip, " + si(hw.streaming_memory_bandwidth, "B/s") +
         " link per IPU)\n" + render_table(rows, {true, true, true, true, true});
}

std::string memory(const RunReport& r) {
  const auto capacity = r.spec->hardware.memory_per_ipu_bytes;
  std::vector<std::vector<std::string>> rows = {{"IPU", "Peak", "Stash", "Weights", "Optimizer",
                                                 "Accumulators", "Activations", "Copy buffers",
                                                 "Always-live", "Fits"}};
  for (std::size_t i = 0; i < r.replay.ipus.size(); ++i) {
    const auto& ipu = r.replay.ipus[i];
    auto category = [&](MemoryCategory name) {
      return si(double(bytes_of(ipu.memory_at_peak, name)), "B");
    };
    rows.push_back(
        {std::to_string(i), si(double(ipu.peak_memory_bytes), "B"),
         si(double(ipu.peak_stash_bytes), "B"), category(MemoryCategory::kWeights),
         category(MemoryCategory::kOptimizerState), category(MemoryCategory::kGradientAccumulators),
         category(MemoryCategory::kActivations), category(MemoryCategory::kCopyBuffers),
         category(MemoryCategory::kAlwaysLive), ipu.peak_memory_bytes <= capacity ? "yes" : "NO"});
  }
  std::string out =
      "\nMemory per IPU at its peak (capacity " + si(double(capacity), "B") + ")\n" +
      render_table(rows, {true, true, true, true, true, true, true, true, true, false});
  std::string depths;
  for (std::size_t k = 0; k < r.stash_depth.size(); ++k) {
    depths += (k ? ", " : "") + std::to_string(r.stash_depth[k]);
  }
  // Graphcore's schedules keep a FIFO per stage; the GPU ones hold the micro-batches in flight.
  const auto& p = r.spec->pipeline;
  const bool fifo = schedules::graphcore_lanes(p.schedule, r.spec->pipeline_shape()) > 0;
  out += (fifo ? "Stash FIFO depth per stage (micro-batches): "
               : "Micro-batches in flight per stage (their activations kept for the backward): ") +
         depths +
         (r.spec->pipeline.offload_activations
              ? "; the FIFOs are in streaming memory (offload_activations)"
              : "") +
         "\n";
  out += streaming(r);
  if (r.replay.out_of_memory)
    out += "\n" + r.replay.out_of_memory->message() + "\n";
  return out;
}

nlohmann::json ipu_json(const RunReport& r, std::size_t i) {
  const auto& ipu = r.replay.ipus[i];
  const auto& figures = r.figures.ipus[i];
  nlohmann::json phases = nlohmann::json::object();
  for (const auto phase : schedules::kPhases) {
    phases[std::string(schedules::phase_key(phase))] =
        figures.utilisation_by_phase[schedules::index(phase)];
  }
  nlohmann::json breakdown = nlohmann::json::object();
  for (const auto category : kMemoryCategories)
    breakdown[std::string(to_string(category))] = bytes_of(ipu.memory_at_peak, category);
  nlohmann::json streaming = nlohmann::json::object();
  for (const auto category : {MemoryCategory::kStash, MemoryCategory::kOptimizerState})
    streaming[std::string(to_string(category))] = bytes_of(ipu.streaming_memory, category);
  return {{"ipu", i},
          {"physical_ipu", ipu.physical},
          {"utilisation", figures.utilisation},
          {"utilisation_by_phase", phases},
          {"busy_cycles", ipu.busy_cycles},
          {"host_link_utilisation", figures.host_link_utilisation},
          {"peak_memory_bytes", ipu.peak_memory_bytes},
          {"peak_stash_bytes", ipu.peak_stash_bytes},
          {"memory_breakdown", breakdown},
          {"streaming_memory_bytes", figures.streaming_memory_bytes},
          {"streaming_memory_breakdown", streaming},
          {"streaming_link_bytes", ipu.streaming_bytes},
          {"streaming_link_utilisation", figures.streaming_link_utilisation},
          {"fits_in_memory", figures.fits_in_memory}};
}

}  // namespace

std::string render_text(const RunReport& report) {
  return header(report) + timing(report) + utilisation(report) + memory(report) +
         numeric_text(report);
}

nlohmann::json to_json(const RunReport& r) {
  const double clock = r.spec->hardware.clock_hz;
  nlohmann::json phases = nlohmann::json::object();
  for (const auto phase : schedules::kPhases) {
    const auto cycles = r.replay.phase_cycles[schedules::index(phase)];
    phases[std::string(schedules::phase_key(phase))] = {
        {"cycles", cycles}, {"seconds", r.figures.phase_seconds[schedules::index(phase)]}};
  }
  nlohmann::json ipus = nlohmann::json::array();
  for (std::size_t i = 0; i < r.replay.ipus.size(); ++i)
    ipus.push_back(ipu_json(r, i));
  nlohmann::json links = nlohmann::json::array();
  for (std::size_t k = 0; k < r.replay.links.size(); ++k) {
    const auto& link = r.replay.links[k];
    links.push_back({{"from_ipu", link.from_ipu},
                     {"to_ipu", link.to_ipu},
                     {"from_physical_ipu", link.from_physical},
                     {"to_physical_ipu", link.to_physical},
                     {"bytes", link.bytes},
                     {"utilisation", r.figures.link_utilisation[k]}});
  }
  const auto& p = r.spec->pipeline;
  nlohmann::json report = {
      {"config", r.spec->config_path},
      {"model", r.spec->model.name},
      {"schedule", r.schedule},
      {"relaxed_divisibility", r.relaxed},
      {"recomputation_mode", schedules::to_string(r.spec->schedule->recomputation())},
      {"recomputation_mode_requested", schedules::to_string(p.recomputation)},
      {"stages", p.stages.size()},
      {"gradient_accumulation_count", p.gradient_accumulation_count},
      {"micro_batch_size", p.micro_batch_size},
      {"replication_factor", p.replication_factor},
      {"repeat_count", p.repeat_count},
      {"effective_batch", p.samples_per_weight_update()},
      {"clock_hz", clock},
      {"run_cycles", r.run_cycles},
      {"phases", phases},
      {"weight_update_breakdown", weight_update_json(r)},
      {"host_input", host_input_json(r)},
      {"bubble_ratio", r.figures.bubble_ratio},
      {"stash_depth", r.stash_depth},
      {"offload_activations", p.offload_activations},
      {"selection_order", selection_order_name(r.spec->hardware.selection_order)},
      {"ipus", ipus},
      {"links", links},
      {"out_of_memory", r.replay.out_of_memory ? nlohmann::json(r.replay.out_of_memory->message())
                                               : nlohmann::json(nullptr)},
      {"notes", r.spec->notes},
      {"numeric", numeric_json(r)},
      {"operations", operations_json(r)}};
  add_metric_values(run_metrics(r), report);
  if (const auto sequences = r.figures.sequence_throughput)
    report["throughput_sequences_per_second"] = *sequences;
  return report;
}

}  // namespace ipusim::sim
