#pragma once
// `ipusim plan`: which split, schedule, gradient accumulation, micro-batch and recomputation
// fit in memory and run fastest.
//
// The search has two tiers. For each setting (one schedule, GAC, micro-batch and recomputation
// mode) every split of the config's layer order into its number of stages is priced from the
// cost model alone: the bottleneck IPU's cycles per micro-batch (forward, backward and
// recomputation of its stages) and an estimate of each IPU's peak memory (static memory, the
// schedule's stash depth x each stage's stash entry, the largest running activations). Splits
// over capacity are pruned; the others are ranked, validated in that order like any config,
// and the best few of each setting replayed in full. Only replayed figures are reported.
//
// May include sim/core, sim/report and the room's metrics.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/core/config_file.hpp"
#include "sim/report/report.hpp"

namespace ipusim::sim {

enum class PlanObjective { kThroughput, kMemory };

// What `ipusim plan` asks for. Empty lists keep the config's value; `schedules` empty means
// every step-based (Graphcore) schedule of the registry.
struct PlanRequest {
  std::string config_path;
  std::vector<core::Override> base_overrides;  // the what-if options
  std::vector<std::string> schedules;
  std::vector<std::string> gacs;  // as typed, read like --set values
  std::vector<std::string> micro_batches;
  std::vector<std::string> recomputations;
  bool fixed_splits = false;  // only the config's split (also when base_overrides set it)
  PlanObjective objective = PlanObjective::kThroughput;
  int top = 5;
  int jobs = 1;
};

// One candidate: a split under one setting, its cost-model estimate and, for finalists, the
// replay's report.
struct PlanCandidate {
  std::vector<std::string> splits;  // the layer id starting each stage after the first
  std::string schedule;
  std::int64_t gac = 0;
  std::int64_t micro_batch = 0;
  std::string recomputation;              // as the config names it
  std::vector<core::Override> overrides;  // the setting and the split, over the base
  std::int64_t bottleneck_cycles = 0;     // per micro-batch, on the busiest IPU
  int bottleneck_ipu = 0;
  std::vector<std::int64_t> estimated_peak_bytes;  // per IPU
  std::shared_ptr<const RunSpec> spec;
  std::optional<RunReport> report;  // set once replayed

  std::int64_t estimated_peak_max() const;
  std::string key() const;  // "splits=[...] schedule=... gac=... micro-batch=... recomputation=..."
};

// What a plan found: the replayed candidates ranked (the fitting ones first), and the counts.
struct PlanResult {
  std::string config_path;
  PlanObjective objective = PlanObjective::kThroughput;
  int top = 5;
  std::vector<PlanCandidate> ranked;
  std::size_t evaluated = 0;                  // splits priced on the cost model, over all settings
  std::size_t invalid = 0;                    // refused by the spec's validation (stage rules)
  std::size_t over_capacity = 0;              // pruned: estimated peak over the capacity
  std::vector<std::string> invalid_settings;  // settings whose config is invalid, with why
  std::int64_t capacity_bytes = 0;

  bool any_fits() const;
};

// Runs the search. Throws core::ConfigError for an invalid base config, a config with explicit
// pipeline.stages, or when every setting is invalid.
PlanResult plan(const PlanRequest& request);

// The ranked table, "why #k+1 lost" under it and the counts. Throws core::SimulationOutcome,
// saying why and what would help, when no candidate fits.
std::string render_plan(const PlanResult& result);

// One row per replayed candidate: rank, the setting, the splits, then sweep's metric columns.
std::string plan_csv(const PlanResult& result);

// The merged config of `candidate` as a runnable document, its description noting the plan.
nlohmann::json planned_config(const PlanCandidate& candidate);

}  // namespace ipusim::sim
