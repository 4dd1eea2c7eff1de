#pragma once
// What the planner's files share (sim/sweep/planner.cpp searches, plan_settings.cpp turns the
// value lists into settings, plan_merge.cpp joins a sharded plan's files); not for other rooms.

#include <cstdint>
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

// The value lists' cartesian product: IPUs per replica slowest, then schedules, GAC,
// micro-batch, recomputation and offload.
std::vector<Setting> settings_of(const std::vector<std::string>& schedules,
                                 const PlanRequest& request, const RunSpec& base);

// Replays every candidate on request.jobs threads (numerics off, overflow reported, not
// thrown). A candidate whose replay is refused (its time overflows) is dropped and counted
// invalid.
void replay_all(std::vector<PlanCandidate>& candidates, const PlanRequest& request,
                PlanResult& result);

// Fitting candidates first; then by the objective, the other figure breaking ties; equal
// candidates keep their order, so the result does not depend on --jobs.
void rank(std::vector<PlanCandidate>& candidates, PlanObjective objective);

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

// Searches each ruled-out setting again at each of its nearest legal GAC values (once per
// distinct setting, none that `searched` already holds) and keeps the best candidate of each,
// replayed, in result.nearest_legal_gac.
void search_nearest_legal(const core::ConfigDocument& base,
                          const std::vector<GacRuledOut>& ruled_out,
                          const std::vector<Setting>& searched, const PlanRequest& request,
                          PlanResult& result);

}  // namespace ipusim::sim::plan_detail
