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
          {kHostRoundTrip, w.host_round_trip},
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

std::string host_input_text(const RunReport& r) {
  const auto& hw = r.spec->hardware;
  if (!r.spec->pipeline.training || hw.host_input_bandwidth <= 0)
    return "";
  const HostInput& input = r.cost->host_input;
  const std::string replicas = counted_noun(input.replicas_per_host, "replica");
  std::string out = "Host input: " + (input.hosts == 1 ? "1 host feeds " + replicas + ": "
                                                       : counted_noun(input.hosts, "host") +
                                                             ", each feeding " + replicas + ": ");
  out += memory_figure(double(input.bytes)) + " a step" + (input.hosts == 1 ? "" : " each") +
         ", prepared in " + fixed(double(input.cycles) / hw.clock_hz * 1e3, 4) + " ms at " +
         si(hw.host_input_bandwidth, "B/s") + " (" + percent(r.figures.host_input_share) +
         " of the step)";
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
