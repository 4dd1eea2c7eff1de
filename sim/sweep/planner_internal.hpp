#pragma once
// What the planner's files share (sim/sweep/planner.cpp searches, plan_settings.cpp turns the
// value lists into settings, plan_merge.cpp joins a sharded plan's files); not for other rooms.

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/sweep/planner.hpp"

namespace ipusim::sim::plan_detail {

// One combination of the value lists: the overrides that set it, how errors name it, and the
// values the global batch and the table need. `error`, when set, rules the setting out before
// validation (a shape the config's device_mapping cannot take, a global batch that does not
// divide).
struct Setting {
  std::vector<core::Override> overrides;
  std::string label;
  int ipus_per_replica = 0;  // 0: the config's
  int replicas = 0;          // 0: the config's
  std::int64_t micro_batch = 0;
  std::string offload;
  std::string error;
  std::vector<int> relaid_mapping;  // the layout --relayout gave it, or empty
};

core::Override override_of(const std::string& pointer, const nlohmann::json& value,
                           const std::string& label);

// Adds the overrides of one --offload value (plan_offload_names()) to `s`.
void set_offload(const std::string& name, Setting& s);
// The --offload value a pipeline's two offload options amount to.
std::string offload_name(const PipelineSpec& p);
// The recomputation mode as the config names it ("none" when it does not).
std::string recomputation_name(const RunSpec& spec);

// Refuses a config plan cannot search: explicit or concurrent pipeline.stages.
void refuse_explicit_stages(const core::ConfigDocument& document, const RunSpec& spec);
// Refuses what the command line got wrong before anything is priced, naming the option.
void check_request(const PlanRequest& request, const RunSpec& base, bool fixed_splits);
// The schedules searched: those asked for, else the config's when the command line set it,
// else Graphcore's step-based ones.
std::vector<std::string> schedules_searched(const PlanRequest& request, const RunSpec& base);

// Fills the candidate's setting fields (schedule .. replicas) from its spec.
void describe_candidate(PlanCandidate& c);
// The same from `spec`, its setting's spec, for a candidate that has none of its own.
void describe_setting(PlanCandidate& c, const RunSpec& spec);

// Whether the command line's what-if options set `pointer`.
bool overridden(const PlanRequest& request, const std::string& pointer);

// Replays every candidate on request.jobs threads (numerics off, overflow reported, not
// thrown). A candidate whose replay is refused (its time overflows) is dropped and counted
// invalid.
void replay_all(std::vector<PlanCandidate>& candidates, const PlanRequest& request,
                PlanResult& result);

// Fitting candidates first; then by the objective, the other figure breaking ties; equal
// candidates keep their order, so the result does not depend on --jobs.
void rank(std::vector<PlanCandidate>& candidates, PlanObjective objective);

// What ranks a replayed candidate, in 24 bytes: the order rank() sorts by, with the candidate's
// place in the search's order breaking the last ties.
struct RankKey {
  double throughput = 0;
  std::int64_t peak_bytes = 0;  // of the fullest IPU
  std::uint32_t order = 0;
  bool fits = false;
};
RankKey rank_key(const PlanCandidate& replayed, std::size_t order);
bool ranks_before(const RankKey& a, const RankKey& b, PlanObjective objective);

// A candidate as the page draws it, its rank still to be found.
struct DrawnPoint {
  RankKey key;
  std::string label;  // the candidate's key()
  int fullest_ipu = 0;
  std::vector<std::string> row;  // the page's table row, the rank cell left empty
};

}  // namespace ipusim::sim::plan_detail

namespace ipusim::sim {

// What plan keeps for --csv and --html besides the best `top` (PlanRequest::keep_rows and
// keep_points): every replayed candidate's rank key; its CSV row without the rank, in a scratch
// file that the system removes with the process; and the points the page draws.
struct PlanLedger {
  std::vector<plan_detail::RankKey> keys;  // in the search's order
  // The CSV rows: where each lies in `scratch`, its cells up to its last utilisation cell,
  // then the peak memory cells, and its IPUs (the per-IPU columns of rows with fewer IPUs
  // are padded to the most).
  struct Row {
    std::uint64_t offset = 0;
    std::uint32_t head_bytes = 0;
    std::uint32_t tail_bytes = 0;
    std::uint32_t ipus = 0;
  };
  std::shared_ptr<std::FILE> scratch;
  std::vector<Row> rows;
  std::size_t ipus = 0;
  // The page's points, best first, each with its rank.
  std::vector<std::pair<std::size_t, plan_detail::DrawnPoint>> drawn;
  bool front_thinned = false;  // the Pareto front outgrew kMaxFront and every other is drawn
  // Every replayed candidate's place in the search's order, best first: by_rank[r] ranks r + 1.
  std::vector<std::uint32_t> by_rank;
};

}  // namespace ipusim::sim

namespace ipusim::sim::plan_detail {

// The page's table row of `c` (sim/sweep/plan_report.cpp), its first cell empty.
std::vector<std::string> html_row(const PlanResult& result, const PlanCandidate& c);

// Keeps what a plan reports of its replayed candidates as they come, in the search's order,
// bounded whatever their number unless the ledger is asked for (sim/sweep/plan_keep.cpp).
class PlanKeeper {
 public:
  PlanKeeper(const PlanRequest& request, const PlanResult& result);
  ~PlanKeeper();
  PlanKeeper(const PlanKeeper&) = delete;
  PlanKeeper& operator=(const PlanKeeper&) = delete;

  void add(PlanCandidate replayed);
  // Moves the best `top`, the least peak, the count and the ledger into `result`.
  void finish(PlanResult& result);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The value lists' cartesian product: IPUs per replica slowest, then schedules, GAC,
// micro-batch, recomputation and offload. Each setting is made when asked for: a plan of
// 100,000 settings never holds them all.
class SettingList {
 public:
  SettingList(const std::vector<std::string>& schedules, const PlanRequest& request,
              const RunSpec& base);
  std::size_t size() const { return size_; }
  Setting at(std::size_t index) const;

 private:
  struct Axis {
    std::vector<std::string> values;
    std::function<void(const std::string&, Setting&)> apply;
  };
  std::vector<Axis> axes_;
  std::size_t size_ = 1;
  const PlanRequest& request_;
  const RunSpec& base_;
};

// The finalists of one setting whose config `spec` is (validated with an even split): every
// split priced, the best validated (sim/sweep/planner.cpp). Counts go to `result`.
std::vector<PlanCandidate> search_splits(const core::ConfigDocument& base, const Setting& setting,
                                         const PlanRequest& request, PlanResult& result,
                                         const RunSpec& spec);

// A setting the schedule's divisibility rule rules out (its GAC is not a multiple of the
// schedule's overlap length, or less than one), with the GAC values nearest it, below (when
// there is one) and above, that the schedule accepts.
struct GacRuledOut {
  Setting setting;
  std::int64_t gac = 0;
  std::vector<std::int64_t> legal;
};

// What rules `setting` out when it is the divisibility rule alone; nullopt when something else
// does (sim/sweep/plan_legal_gac.cpp).
std::optional<GacRuledOut> ruled_out_by_gac(const core::ConfigDocument& base,
                                            const Setting& setting);

// The heading of the table's per-IPU column: "transformer_encoder layers per IPU", or
// "attention/FFN halves per IPU" for a model of encoder halves.
std::string counted_header(const RunSpec& spec);
// "3,7,7,7+head" (or "3/3,7/7,7/7,7/7+head" for halves): per IPU its stages' counts of the
// counted types, a later stage on an IPU joined with '+'; a last stage without any is the
// model's head.
std::string layers_per_ipu(const PlanCandidate& c);

// Ranked candidates the table shows as one row: the same layers per IPU and setting, and the
// same samples/s to the unit.
struct RowGroup {
  std::size_t first = 0;
  std::size_t last = 0;
  std::size_t size() const { return last - first + 1; }
  // "#4", or "#4-#5" for two.
  std::string rank_text() const {
    return "#" + std::to_string(first + 1) +
           (size() > 1 ? "-#" + std::to_string(last + 1) : std::string());
  }
};
// The rows of the first `shown` ranked candidates.
std::vector<RowGroup> row_groups(const PlanResult& result, std::size_t shown);
// "#4-#5: 2 splits of the same row, the first's memory shown: [...] (peak 932 MB), [...]", or
// empty for a row of one candidate.
std::string group_splits_line(const PlanResult& result, const RowGroup& g);

// A --micro-batch list without --gac or --global-batch keeps the config's global batch:
// `search` with global_batch set to it and keeps_global_batch true; else `search` as it is.
PlanRequest keeping_global_batch(PlanRequest search, const RunSpec& base);

// Calls `visit` with every increasing choice of `count` cuts from 1 .. layers-1.
void for_each_split(int layers, int count,
                    const std::function<void(const std::vector<int>&)>& visit);
// The cuts of the spec's own split: the first layer of each stage after the first.
std::vector<int> own_cuts(const RunSpec& spec);

// Splits one setting prices in full: BERT-Large has 20,475; far more would take minutes.
inline constexpr std::int64_t kMaxSplits = 5'000'000;
// The splits of `layers` layers into `stages` stages, or kMaxSplits + 1 when more.
std::int64_t splits_count(int layers, int stages);
// The best splits of a coarse walk that are refined one cut at a time.
inline constexpr std::size_t kRefinedSeeds = 4;
// 1 when every split is priced; else the k of a coarse walk that cuts only on every k-th layer
// boundary, the least that keeps it within half of kMaxSplits.
int coarse_step(int layers, int stages);
// Visits the splits whose cuts are at positions 1, 1 + step, 1 + 2 step, ...
void for_each_coarse_split(int layers, int stages, int step,
                           const std::function<void(const std::vector<int>&)>& visit);
// From `cuts`, moves one cut at a time over every position between its neighbours, keeping a
// move when `improves` says so, until a round moves none (at most 16 rounds).
void refine_split(std::vector<int> cuts, int layers,
                  const std::function<bool(const std::vector<int>&)>& improves);

// The config as it stands, its own split and setting, replayed: the tables' baseline. None
// when the config alone is invalid (a --gac list may be what makes it valid).
std::optional<PlanCandidate> baseline_of(const core::ConfigDocument& base,
                                         const PlanRequest& request, const PlanResult& result);

// Searches each ruled-out setting again at each of its nearest legal GAC values (once per
// distinct setting, none of `settings` that request.shard searched) and keeps the best candidate of
// each, replayed, in result.nearest_legal_gac.
void search_nearest_legal(const core::ConfigDocument& base,
                          const std::vector<GacRuledOut>& ruled_out, const SettingList& settings,
                          const PlanRequest& request, PlanResult& result);

}  // namespace ipusim::sim::plan_detail
