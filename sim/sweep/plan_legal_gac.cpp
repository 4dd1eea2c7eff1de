// The planner's answer to a GAC the schedule rules out: the same setting at the nearest GAC
// values the schedule accepts, below and above, each searched and its best split replayed
// (sim/sweep/planner_internal.hpp).

#include <algorithm>
#include <map>
#include <set>

#include "schedules/build.hpp"
#include "sim/core/error.hpp"
#include "sim/sweep/planner_internal.hpp"

namespace ipusim::sim::plan_detail {
namespace {

// The overrides' final values by JSON pointer: two settings with the same are the same config.
std::string setting_key(const std::vector<core::Override>& overrides) {
  std::map<std::string, std::string> values;
  for (const auto& o : overrides)
    values[core::to_json_pointer(o.path)] = o.value;
  std::string out;
  for (const auto& [pointer, value] : values)
    out += pointer + "=" + value + "\n";
  return out;
}

// `ruled_out`'s setting at `gac`, its label saying which GAC it replaces.
Setting at_gac(const GacRuledOut& ruled_out, std::int64_t gac) {
  Setting s = ruled_out.setting;
  const std::string label = "the nearest legal GAC " + std::to_string(gac);
  s.overrides.push_back(override_of("/pipeline/gradient_accumulation_count", gac, label));
  s.label += " at " + label;
  return s;
}

// The best fitting (else the best) replayed candidate of `setting`, if any validates.
std::optional<PlanCandidate> best_of(const core::ConfigDocument& base, const Setting& setting,
                                     const PlanRequest& request, const PlanResult& result) {
  std::optional<RunSpec> spec;
  try {
    spec = build_run_spec(base.with_overrides(setting.overrides));
  } catch (const core::ConfigError&) {
    return std::nullopt;
  }
  PlanResult scratch;  // its counts stay out of the plan's
  scratch.capacity_bytes = result.capacity_bytes;
  auto finalists = search_splits(base, setting, request, scratch, *spec);
  if (finalists.empty())
    return std::nullopt;
  auto quiet = request;
  quiet.progress = nullptr;
  replay_all(finalists, quiet, scratch);
  if (finalists.empty())
    return std::nullopt;
  rank(finalists, request.objective);
  return std::move(finalists.front());
}

}  // namespace

std::optional<GacRuledOut> ruled_out_by_gac(const core::ConfigDocument& base,
                                            const Setting& setting) {
  if (!setting.error.empty())
    return std::nullopt;
  auto relaxed = setting.overrides;
  relaxed.push_back(override_of("/pipeline/relaxed_divisibility", true, "the planner"));
  std::optional<RunSpec> spec;
  try {
    spec = build_run_spec(base.with_overrides(relaxed));
  } catch (const core::ConfigError&) {
    return std::nullopt;  // something besides the divisibility rule rules it out
  }
  const auto lanes = schedules::graphcore_lanes(spec->pipeline.schedule, spec->pipeline_shape());
  const auto gac = spec->pipeline.gradient_accumulation_count;
  if (lanes < 1 || (gac % lanes == 0 && gac >= lanes))
    return std::nullopt;
  GacRuledOut out{setting, gac, {}};
  const auto below = gac / lanes * lanes;
  if (below >= lanes)
    out.legal.push_back(below);
  out.legal.push_back(below + lanes);
  return out;
}

void search_nearest_legal(const core::ConfigDocument& base,
                          const std::vector<GacRuledOut>& ruled_out, const SettingList& settings,
                          const PlanRequest& request, PlanResult& result) {
  if (ruled_out.empty())
    return;
  // The settings at a legal GAC, then which of them the search already covered: one pass over
  // the settings, none of them kept.
  std::vector<std::pair<Setting, const GacRuledOut*>> wanted;
  std::set<std::string> seen;
  for (const auto& r : ruled_out)
    for (const auto gac : r.legal)
      if (auto setting = at_gac(r, gac); seen.insert(setting_key(setting.overrides)).second)
        wanted.emplace_back(std::move(setting), &r);
  std::set<std::string> searched;
  for (std::size_t i = 0; i < settings.size(); ++i) {
    if (!request.shard.contains(i))
      continue;
    if (auto key = setting_key(settings.at(i).overrides); seen.count(key) > 0)
      searched.insert(std::move(key));
  }
  for (const auto& [setting, r] : wanted) {
    if (searched.count(setting_key(setting.overrides)) > 0)
      continue;
    if (auto best = best_of(base, setting, request, result)) {
      best->instead_of_gac = r->gac;
      result.nearest_legal_gac.push_back(std::move(*best));
    }
  }
}

}  // namespace ipusim::sim::plan_detail
