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
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/core/config_file.hpp"
#include "sim/report/report.hpp"
#include "sim/sweep/plan.hpp"

namespace ipusim::sim {

enum class PlanObjective { kThroughput, kMemory };

// What `ipusim plan` asks for. Empty lists keep the config's value; `schedules` empty means
// every step-based (Graphcore) schedule of the registry.
struct PlanRequest {
  std::string config_path;
  std::vector<core::Override> base_overrides;  // the what-if options
  std::vector<std::string> schedules;
  // IPUs per replica to try, powers of two. A count other than the config's keeps the shape of
  // its device_mapping: IPUs 0..N-1 in order, then the config's later stages (a head back on
  // IPU0) on the same IPUs.
  std::vector<int> ipus_per_replica;
  int total_ipus = 0;             // when set, replication_factor = total_ipus / IPUs per replica
  std::vector<std::string> gacs;  // as typed, read like --set values
  // When set, the GAC of each setting is global_batch / (micro-batch x replicas).
  std::int64_t global_batch = 0;
  // Set by plan itself: global_batch is the config's, kept because --micro-batch varies while
  // neither --gac nor --global-batch was given.
  bool keeps_global_batch = false;
  std::vector<std::string> micro_batches;
  std::vector<std::string> recomputations;
  std::vector<std::string> offloads;  // plan_offload_names()
  bool fixed_splits = false;          // only the config's split (also when base_overrides set it)
  // A schedule that refuses the layout is searched on the one it needs on the same IPUs
  // (schedules::relayout_mapping): one stage per IPU, or two for interleaved_1f1b.
  bool relayout = false;
  // When no split of a setting fits by the estimate, replay its best by the objective instead
  // of the one needing least memory (compare --relayout shows a layout's figures).
  bool fastest_when_none_fits = false;
  PlanObjective objective = PlanObjective::kThroughput;
  int top = 5;
  int jobs = 1;
  SweepShard shard;  // the settings this process searches: setting s when shard.contains(s)
  // What the search keeps of every replayed candidate besides the best `top`: its CSV row
  // (--csv) and its point on the page (--html). Off, memory does not grow with the settings.
  bool keep_rows = false;
  bool keep_points = false;
  // Called as work completes: (done, total, "settings"), each setting counted once its
  // finalists are replayed.
  std::function<void(std::size_t, std::size_t, const char*)> progress;
};

// The values of --offload: none, weight_update_variables (offload_weight_update_variables: the
// optimizer state), stash_fifos (offload_activations) and both.
const std::vector<std::string>& plan_offload_names();

// One candidate: a split under one setting, its cost-model estimate and, for finalists, the
// replay's report.
struct PlanCandidate {
  std::vector<std::string> splits;  // the layer id starting each stage after the first
  std::string schedule;
  std::int64_t gac = 0;
  std::int64_t micro_batch = 0;
  std::string recomputation;  // as the config names it
  std::string offload;        // plan_offload_names()
  int ipus_per_replica = 0;
  int replicas = 0;
  bool show_shape = false;                // key() names the IPUs per replica and replicas
  bool show_offload = false;              // key() names the offload
  std::vector<int> relaid_mapping;        // set by --relayout, and then named by key()
  std::vector<core::Override> overrides;  // the setting and the split, over the base
  std::int64_t bottleneck_cycles = 0;     // per micro-batch, on the busiest IPU
  // Per micro-batch by the schedule's own steps in the steady state: the sum over the steps of
  // one period of each step's busiest IPU (grouped: the bottleneck; sequential: every stage
  // one after another). The bottleneck for schedules without steps. What the search ranks by.
  std::int64_t microbatch_cycles = 0;
  int bottleneck_ipu = 0;
  std::vector<std::int64_t> estimated_peak_bytes;  // per IPU
  std::shared_ptr<const RunSpec> spec;
  std::optional<RunReport> report;  // set once replayed
  // Set on the candidates of result.nearest_legal_gac: the GAC the schedule ruled out.
  std::int64_t instead_of_gac = 0;

  std::int64_t estimated_peak_max() const;
  // "splits=[...] schedule=... gac=... micro-batch=... recomputation=...", then
  // "ipus-per-replica=... replicas=..." and "offload=..." when the search varied them, and
  // "device_mapping=[...]" when --relayout set it.
  std::string key() const;
};

// What plan keeps for --csv and --html (sim/sweep/planner_internal.hpp).
struct PlanLedger;

// What a plan found: the best of the replayed candidates ranked (the fitting ones first), and
// the counts. Bounded whatever the number of settings: `ranked` holds the best `top`, not every
// replayed candidate.
struct PlanResult {
  std::string config_path;
  PlanObjective objective = PlanObjective::kThroughput;
  int top = 5;
  std::vector<PlanCandidate> ranked;
  std::size_t replayed = 0;  // candidates replayed and ranked, of which `ranked` holds the best
  // The replayed candidate of least peak memory (the best ranked of those), which the answer
  // names when nothing fits.
  std::optional<PlanCandidate> least_peak;
  // Every replayed candidate's CSV row and rank, and the points the page draws, when the
  // request kept them; else the CSV and the page hold `ranked`.
  std::shared_ptr<const PlanLedger> ledger;
  std::size_t evaluated = 0;  // splits priced on the cost model, over all settings
  std::size_t invalid = 0;    // refused by the spec's validation (stage rules)
  // Of those, refused when replayed (a replay too long, a time past 64 bits), with the first
  // one's reason.
  std::size_t refused_replays = 0;
  std::string replay_refusal;
  std::size_t over_capacity = 0;  // pruned: estimated peak over the capacity
  // Settings with more splits than plan prices in full, walked coarsely (cuts on every k-th
  // layer boundary, k at most coarse_step) and the best refined one cut at a time.
  std::size_t coarse_settings = 0;
  int coarse_step = 0;
  // The few pruned ones nearest to fitting (least estimated peak first), never replayed.
  std::vector<PlanCandidate> nearest_over_capacity;
  // Settings whose config is invalid whatever the split, grouped by why, first seen first. Only
  // the first kMaxSkipReasons reasons are kept (a reason often names the setting's values, so
  // they may be as many as the settings); the settings of later ones are only counted.
  struct SkippedSettings {
    std::string why;
    std::string first_label;
    std::size_t count = 0;
  };
  static constexpr std::size_t kMaxSkipReasons = 64;
  std::vector<SkippedSettings> skipped;
  std::size_t skipped_for_other_reasons = 0;
  void add_skipped(const std::string& label, const std::string& why);
  std::size_t skipped_settings() const;
  // Of those ruled out by the schedule's divisibility rule alone, the same setting at the
  // nearest legal GAC below and above: the best split of each, replayed, not in `ranked`.
  std::vector<PlanCandidate> nearest_legal_gac;
  // The config as it stands (its split, schedule, GAC, micro-batch and recomputation),
  // replayed: the first row of the tables. None when the config alone is invalid, or for a
  // merge of shards.
  std::optional<PlanCandidate> baseline;
  std::int64_t capacity_bytes = 0;
  std::size_t settings = 0;  // searched by this process (its shard's)
  SweepShard shard;
  bool varies_shape = false;    // IPUs per replica or replicas were searched
  bool varies_offload = false;  // --offload was given
  // The GAC, micro-batch or replicas were searched: the table shows each row's global batch.
  bool varies_batch = false;
  // What the search tried, so that its advice does not suggest it again.
  struct Searched {
    int most_ipus_per_replica = 0;       // of --ipus-per-replica, 0 without it
    bool recomputation = false;          // --recomputation was given
    std::vector<std::string> offloads;   // --offload's values
    std::int64_t least_micro_batch = 0;  // of --micro-batch, 0 without it
  };
  Searched searched;
  // The config has one stage and no --ipus-per-replica: 1, 2, 4 and 8 were searched.
  bool default_shapes = false;
  std::size_t merged_files = 0;  // set by merge_plan_shards
  std::size_t merged_rows = 0;

  bool any_fits() const;
  // What the user can run fastest (or smallest): the best ranked, unless a setting its GAC ruled
  // out does better at a nearest legal GAC (nearest_legal_gac), which it then is. Requires a
  // ranked candidate.
  const PlanCandidate& best() const;
};

// Runs the search. Throws core::ConfigError for an invalid base config, a config with explicit
// pipeline.stages, or when every setting is invalid.
PlanResult plan(const PlanRequest& request);

// The ranked table, "why #k+1 lost" under it and the counts. Throws core::SimulationOutcome,
// saying why and what would help, when no candidate fits.
std::string render_plan(const PlanResult& result);

// One row per replayed candidate, best first: rank, the split and the setting (enough to rebuild
// it), the cost-model estimates, then sweep's metric columns. With the result's ledger the rows
// come from its scratch file, handed to `put` a piece at a time; else they are `ranked`'s.
const std::vector<std::string>& plan_csv_columns();
void write_plan_csv(const PlanResult& result, const std::function<void(std::string_view)>& put);
std::string plan_csv(const PlanResult& result);

// Joins the CSV files of a sharded plan (`--shard i/n --csv F` runs of one search): ranks every
// row by its replayed figures as plan does, rebuilds the best `request.top` from the config at
// `request.config_path` (with `request.base_overrides`) and replays them again for the table.
// A file whose header is not plan's, or a row that no longer validates, is a core::ConfigError
// naming the file and line.
PlanResult merge_plan_shards(const PlanRequest& request, const std::vector<std::string>& paths);

// The HTML page of a plan: throughput against peak memory of the replayed candidates, the
// region over capacity shaded and the Pareto front drawn, then the ranked table. With more than
// kPlanDrawnSample replayed, the page draws the Pareto front, the best `top`, the extremes and
// every k-th in the search's order, and says how many of how many. Requires a non-empty result.
inline constexpr std::size_t kPlanDrawnSample = 2000;
std::string render_plan_html(const PlanResult& result);

// The merged config of `candidate` as a runnable document to be written at `output_path`, its
// description noting the plan (a relative initial_weights folder is named from there).
nlohmann::json planned_config(const PlanCandidate& candidate, const std::string& output_path);

}  // namespace ipusim::sim
