#pragma once
// A run's figures, derived once from its replay: the shares, rates and extremes that the text
// and JSON reports, the HTML pages and the sweep and compare CSVs show. Writers format these
// and derive none of their own, so that no two outputs can disagree on a figure. Shares are
// 0..1, and 0 when their whole is 0 (an empty phase).

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "sim/replay/replay.hpp"
#include "sim/spec/spec.hpp"

namespace ipusim::sim {

// One IPU's figures; its raw counts (busy cycles, peak bytes) stay in ReplayResult::ipus.
struct IpuFigures {
  double utilisation = 0;                        // compute-busy share of the step
  std::array<double, 4> utilisation_by_phase{};  // busy share of each phase, by PhaseIndex
  double host_link_utilisation = 0;              // host transfers' share of the step
  double streaming_link_utilisation = 0;         // streaming-memory traffic's share of the step
  std::int64_t streaming_memory_bytes = 0;       // kept off chip, every category
  double capacity_share = 0;                     // peak memory over memory_per_ipu_bytes
  bool fits_in_memory = false;                   // its peak is within the capacity
};

// One operation of the cost model, per micro-batch.
struct OperationFigures {
  double flops = 0;                      // forward + backward
  double achieved_flops_per_second = 0;  // 0 for profiled rows, which carry no FLOPs
  double share_of_substage = 0;          // its F+B cycles over its sub-stage's
};

struct RunFigures {
  double step_seconds = 0;
  double throughput = 0;  // samples per second
  // Sequences per second when samples are packs of sequences (data.sequences_per_sample).
  std::optional<double> sequence_throughput;
  double throughput_per_ipu = 0;          // over every IPU of every replica
  std::array<double, 4> phase_seconds{};  // by PhaseIndex
  std::array<double, 4> phase_share{};    // of the step, by PhaseIndex
  std::int64_t pipeline_cycles = 0;       // ramp-up + main + ramp-down
  // IPU time idle in ramp-up and ramp-down, as a share of the IPUs' step (IPUs x step).
  double ramp_overhead = 0;
  double bubble_fraction = 0;              // idle share of IPU time in the pipeline phases
  double bubble_ratio = 0;                 // idle over busy IPU time in the pipeline phases
  double utilisation_mean = 0;             // of the IPUs' utilisations
  double utilisation_min = 0;              // the least busy IPU's
  std::int64_t peak_memory_bytes_max = 0;  // of the fullest IPU
  int fullest_ipu = 0;                     // the first IPU with that peak
  std::int64_t peak_stash_bytes_max = 0;
  double peak_memory_capacity_share = 0;  // the fullest IPU's peak over the capacity
  bool fits_in_memory = false;            // no IPU overflowed
  // The replicas' collectives in the weight update (reduce-scatter, all-reduce, all-gather)
  // and the wait for the hosts' input.
  std::int64_t collective_cycles = 0;
  std::int64_t input_wait_cycles = 0;
  double host_input_share = 0;           // one host's input preparation over the step
  std::vector<IpuFigures> ipus;          // by logical IPU, as ReplayResult::ipus
  std::vector<double> link_utilisation;  // busy share of the step, as ReplayResult::links
  // As CostModel::stages: by stage, sub-stage and operation.
  std::vector<std::vector<std::vector<OperationFigures>>> operations;
};

// The figures of `replay`, a step of `spec` on `cost`.
RunFigures run_figures(const RunSpec& spec, const CostModel& cost, const ReplayResult& replay);

}  // namespace ipusim::sim
