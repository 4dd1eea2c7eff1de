#include "sim/report/weight_update_report.hpp"

#include <string_view>
#include <utility>
#include <vector>

#include "sim/core/format.hpp"
#include "sim/machine/collectives.hpp"

namespace ipusim::sim {
namespace {

using Parts = std::vector<std::pair<std::string_view, std::int64_t>>;

// The parts in the order they run, named as the trace names them.
Parts parts_of(const WeightUpdateBreakdown& w) {
  return {{kReduceScatter, w.reduce_scatter},
          {schedules::to_string(schedules::Op::kAllReduce), w.all_reduce},
          {"optimizer state stream", w.state_stream},
          {schedules::to_string(schedules::Op::kWeightUpdate), w.update},
          {kAllGather, w.all_gather},
          {"sync", w.sync},
          {kHostCall, w.host_call},
          {kInputWait, w.input_wait}};
}

std::string key_of(std::string_view name) {
  std::string key(name);
  for (auto& c : key) {
    if (c == ' ' || c == '-')
      c = '_';
  }
  return key;
}

std::string counted_noun(int n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

}  // namespace

std::string weight_update_text(const RunReport& r) {
  if (!r.spec->pipeline.training)
    return "";
  const auto& w = r.replay.weight_update;
  std::string sum;
  std::int64_t total = 0;
  for (const auto& [name, cycles] : parts_of(w)) {
    if (cycles == 0)
      continue;
    sum += (sum.empty() ? "" : " + ") + std::string(name) + " " + with_commas(cycles);
    total += cycles;
  }
  if (sum.empty())
    sum = "nothing";
  return "Weight update on IPU" + std::to_string(w.ipu) + " (the longest): " + sum + " = " +
         with_commas(total) + " cycles\n";
}

nlohmann::json weight_update_json(const RunReport& r) {
  if (!r.spec->pipeline.training)
    return nullptr;
  const auto& w = r.replay.weight_update;
  nlohmann::json out = {{"ipu", w.ipu}};
  for (const auto& [name, cycles] : parts_of(w))
    out[key_of(name) + "_cycles"] = cycles;
  return out;
}

// "1 host feeds 16 replicas", "4 hosts, each feeding 8 replicas", "4 hosts, each running 4
// instances of 4 replicas".
std::string feeders_text(const HostInput& input) {
  const std::string hosts = input.hosts == 1 ? "1 host" : counted_noun(input.hosts, "host");
  if (input.instances_per_host() > 1) {
    return hosts + (input.hosts == 1 ? " runs " : ", each running ") +
           counted_noun(input.instances_per_host(), "instance") + " of " +
           counted_noun(input.replicas_per_instance, "replica") + ": ";
  }
  const std::string replicas = counted_noun(input.replicas_per_instance, "replica");
  return input.hosts == 1 ? hosts + " feeds " + replicas + ": "
                          : hosts + ", each feeding " + replicas + ": ";
}

// "at 12.5 GB/s", or "decoding at 5,213 samples a second" when decoding binds.
std::string rate_text(const RunSpec& spec, const HostInput& input) {
  if (input.decoding)
    return "decoding at " + with_commas(std::int64_t(spec.hardware.instance_decode_rate)) +
           " samples a second";
  return "at " + si(input.bandwidth, "B/s");
}

std::string host_input_text(const RunReport& r) {
  const HostInput& input = r.cost->host_input;
  if (!r.spec->pipeline.training || input.cycles <= 0)
    return "";
  const bool one = input.instances == 1;
  std::string out =
      "Host input: " + feeders_text(input) + memory_figure(double(input.bytes)) + " a step" +
      (one                              ? ""
       : input.instances_per_host() > 1 ? " an instance"
                                        : " each") +
      ", prepared in " + fixed(double(input.cycles) / r.spec->hardware.clock_hz * 1e3, 4) + " ms " +
      rate_text(*r.spec, input) + " (" + percent(r.figures.host_input_share) + " of the step)";
  const std::int64_t wait = r.replay.weight_update.input_wait;
  if (wait == 0)
    return out + ", beside the IPUs\n";
  return out + ": the IPUs wait " + with_commas(wait) + " cycles for it (" +
         std::string(kInputWait) + ")\n";
}

nlohmann::json host_input_json(const RunReport& r) {
  const HostInput& input = r.cost->host_input;
  return {{"hosts", input.hosts},
          {"replicas_per_host", input.replicas_per_host},
          {"instances", input.instances},
          {"replicas_per_instance", input.replicas_per_instance},
          {"bytes_per_second", input.bandwidth},
          {"decoding", input.decoding},
          {"bytes_per_step", input.bytes},
          {"cycles", input.cycles},
          {"wait_cycles", r.replay.weight_update.input_wait}};
}

std::string ild_text(const RunReport& r) {
  const auto layout = replica_layout(*r.spec);
  if (layout.ilds() == 1)
    return "";
  return std::to_string(layout.ilds()) + " IPU-Link domains of " +
         std::to_string(r.spec->hardware.ipus_per_ild) + " IPUs (" +
         std::to_string(layout.per_ild) +
         " replicas each) joined by GW-Links; the replicas' collectives are hierarchical\n";
}

}  // namespace ipusim::sim
