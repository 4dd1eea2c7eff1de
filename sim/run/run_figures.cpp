#include "sim/run/run_figures.hpp"

#include <algorithm>

namespace ipusim::sim {
namespace {

double fraction(double part, double whole) {
  return whole > 0 ? part / whole : 0.0;
}

constexpr std::size_t kRampUp = schedules::index(schedules::Phase::kRampUp);
constexpr std::size_t kMain = schedules::index(schedules::Phase::kMain);
constexpr std::size_t kRampDown = schedules::index(schedules::Phase::kRampDown);

IpuFigures ipu_figures(const IpuStats& ipu, const ReplayResult& replay, std::int64_t capacity) {
  const double step = double(replay.step_cycles);
  IpuFigures out;
  out.utilisation = fraction(double(ipu.busy_cycles), step);
  for (const auto phase : schedules::kPhases) {
    const auto i = schedules::index(phase);
    out.utilisation_by_phase[i] =
        fraction(double(ipu.busy_in_phase[i]), double(replay.phase_cycles[i]));
  }
  out.host_link_utilisation = fraction(double(ipu.host_busy_cycles), step);
  out.streaming_link_utilisation = fraction(double(ipu.streaming_busy_cycles), step);
  for (const auto& [category, bytes] : ipu.streaming_memory)
    out.streaming_memory_bytes += bytes;
  out.capacity_share = fraction(double(ipu.peak_memory_bytes), double(capacity));
  out.fits_in_memory = ipu.peak_memory_bytes <= capacity;
  return out;
}

// Utilisation, extremes and bubble over the IPUs; the bubble counts the pipeline phases only,
// where idle time is the schedule's doing rather than the weight update's.
void per_ipu(const RunSpec& spec, const ReplayResult& replay, RunFigures& f) {
  double utilisation_sum = 0;
  double busy = 0;
  f.utilisation_min = replay.ipus.empty() ? 0.0 : 1.0;
  for (const auto& ipu : replay.ipus) {
    f.ipus.push_back(ipu_figures(ipu, replay, spec.hardware.memory_per_ipu_bytes));
    utilisation_sum += f.ipus.back().utilisation;
    f.utilisation_min = std::min(f.utilisation_min, f.ipus.back().utilisation);
    if (ipu.peak_memory_bytes > f.peak_memory_bytes_max) {
      f.peak_memory_bytes_max = ipu.peak_memory_bytes;
      f.fullest_ipu = int(f.ipus.size() - 1);
    }
    f.peak_stash_bytes_max = std::max(f.peak_stash_bytes_max, ipu.peak_stash_bytes);
    busy += double(ipu.busy_in_phase[kRampUp] + ipu.busy_in_phase[kMain] +
                   ipu.busy_in_phase[kRampDown]);
  }
  f.utilisation_mean = replay.ipus.empty() ? 0.0 : utilisation_sum / double(replay.ipus.size());
  f.peak_memory_capacity_share =
      fraction(double(f.peak_memory_bytes_max), double(spec.hardware.memory_per_ipu_bytes));
  const double capacity = double(f.pipeline_cycles) * double(replay.ipus.size());
  f.bubble_fraction = fraction(capacity - busy, capacity);
  f.bubble_ratio = fraction(capacity - busy, busy);
}

// The IPU time the ramps leave idle, as a share of all the IPUs' step: one definition for every
// schedule, with each family's phase boundaries. Grouped's ramps are long and partly busy,
// 1F1B's short and mostly idle; with equal stages Graphcore's schedules come to the bubble.
double ramp_idle_share(const ReplayResult& replay) {
  double idle = 0;
  for (const auto& ipu : replay.ipus) {
    for (const std::size_t phase : {kRampUp, kRampDown})
      idle += double(replay.phase_cycles[phase] - ipu.busy_in_phase[phase]);
  }
  return fraction(idle, double(replay.step_cycles) * double(replay.ipus.size()));
}

std::vector<std::vector<std::vector<OperationFigures>>> operation_figures(const CostModel& cost,
                                                                          double clock_hz) {
  std::vector<std::vector<std::vector<OperationFigures>>> out;
  for (const auto& stage : cost.stages) {
    auto& substages = out.emplace_back();
    for (const auto& sub : stage) {
      auto& operations = substages.emplace_back();
      const auto sub_cycles = sub.forward_cycles + sub.backward_cycles;
      for (const auto& op : sub.operations) {
        const auto cycles = op.forward.cycles + op.backward.cycles;
        OperationFigures figures;
        figures.flops = op.forward_flops + op.backward_flops;
        figures.achieved_flops_per_second =
            cycles > 0 ? figures.flops / (double(cycles) / clock_hz) : 0;
        figures.share_of_substage = fraction(double(cycles), double(sub_cycles));
        operations.push_back(figures);
      }
    }
  }
  return out;
}

}  // namespace

RunFigures run_figures(const RunSpec& spec, const CostModel& cost, const ReplayResult& replay) {
  const auto& p = spec.pipeline;
  const double clock = spec.hardware.clock_hz;
  const double step = double(replay.step_cycles);
  RunFigures f;
  f.step_seconds = step / clock;
  f.throughput = fraction(double(p.samples_per_weight_update()), f.step_seconds);
  if (spec.data.sequences_per_sample != 0)
    f.sequence_throughput = f.throughput * spec.data.sequences_per_sample;
  f.throughput_per_ipu = f.throughput / double(p.ipus_per_replica() * p.replication_factor);
  for (const auto phase : schedules::kPhases) {
    const auto i = schedules::index(phase);
    f.phase_seconds[i] = double(replay.phase_cycles[i]) / clock;
    f.phase_share[i] = fraction(double(replay.phase_cycles[i]), step);
  }
  f.pipeline_cycles =
      replay.phase_cycles[kRampUp] + replay.phase_cycles[kMain] + replay.phase_cycles[kRampDown];
  per_ipu(spec, replay, f);
  f.ramp_overhead = ramp_idle_share(replay);
  f.fits_in_memory = !replay.out_of_memory.has_value();
  const auto& w = replay.weight_update;
  f.collective_cycles = w.reduce_scatter + w.all_reduce + w.all_gather;
  f.input_wait_cycles = w.input_wait;
  f.host_input_share = fraction(double(cost.host_input.cycles), step);
  for (const auto& link : replay.links)
    f.link_utilisation.push_back(fraction(double(link.busy_cycles), step));
  f.operations = operation_figures(cost, clock);
  return f;
}

}  // namespace ipusim::sim
