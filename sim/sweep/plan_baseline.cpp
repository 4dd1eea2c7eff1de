// The planner's two reference points: the baseline, the config as it stands replayed for the
// first row of its tables, and the best the user can run (sim/sweep/planner.hpp).

#include "sim/core/error.hpp"
#include "sim/sweep/planner_internal.hpp"

namespace ipusim::sim::plan_detail {

std::optional<PlanCandidate> baseline_of(const core::ConfigDocument& base,
                                         const PlanRequest& request, const PlanResult& result) {
  std::optional<RunSpec> spec;
  try {
    spec = build_run_spec(base);
  } catch (const core::ConfigError&) {
    return std::nullopt;
  }
  auto own = request;
  own.fixed_splits = true;
  own.progress = nullptr;
  PlanResult scratch;  // its counts stay out of the plan's
  scratch.capacity_bytes = result.capacity_bytes;
  auto found = search_splits(base, Setting{}, own, scratch, *spec);
  replay_all(found, own, scratch);
  if (found.empty())
    return std::nullopt;
  found.front().show_shape = result.varies_shape;
  found.front().show_offload = result.varies_offload;
  return std::move(found.front());
}

}  // namespace ipusim::sim::plan_detail

namespace ipusim::sim {

using plan_detail::rank_key;
using plan_detail::ranks_before;

bool PlanResult::any_fits() const {
  return !ranked.empty() && ranked.front().report->figures.fits_in_memory;
}

const PlanCandidate& PlanResult::best() const {
  const PlanCandidate* out = &ranked.front();
  for (const auto& c : nearest_legal_gac) {
    // The ranked one keeps a tie: it runs at the GAC asked for.
    if (ranks_before(rank_key(c, 0), rank_key(*out, 1), objective))
      out = &c;
  }
  return *out;
}

}  // namespace ipusim::sim
