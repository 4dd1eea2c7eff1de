#include "sim/sweep/planner.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "schedules/build.hpp"
#include "sim/core/error.hpp"
#include "sim/core/suggest.hpp"
#include "sim/sweep/plan_pricer.hpp"
#include "sim/sweep/planner_internal.hpp"

namespace ipusim::sim {

using namespace plan_detail;

namespace {

// By the schedule's cycles per micro-batch, then the bottleneck IPU (which also sets the
// weight update, run on every IPU at once: of sequential splits of equal sum the balanced win),
// then the estimated peak; for the memory objective the peak first.
bool better_estimate(const PlanCandidate& a, const PlanCandidate& b, PlanObjective objective) {
  const auto ka = std::make_tuple(a.microbatch_cycles, a.bottleneck_cycles, a.estimated_peak_max());
  const auto kb = std::make_tuple(b.microbatch_cycles, b.bottleneck_cycles, b.estimated_peak_max());
  if (objective == PlanObjective::kMemory)
    return std::make_tuple(std::get<2>(ka), std::get<0>(ka), std::get<1>(ka)) <
           std::make_tuple(std::get<2>(kb), std::get<0>(kb), std::get<1>(kb));
  return ka < kb;
}

// The best `limit` candidates pushed, by `better` and then by the order they came in, so that
// millions of priced splits never sit in memory at once. Sorted best first on the way out.
class BestCandidates {
 public:
  using Better = std::function<bool(const PlanCandidate&, const PlanCandidate&)>;
  BestCandidates(std::size_t limit, Better better) : limit_(limit), better_(std::move(better)) {}

  // Whether push(c) would keep `c`: there is room, or it is better than the worst kept (on a
  // tie the earlier one stays). Lets the search skip building a split it would drop at once.
  bool would_keep(const PlanCandidate& c) const {
    return entries_.size() < limit_ || better_(c, entries_.front().candidate);
  }

  void push(PlanCandidate c) {
    entries_.push_back({std::move(c), pushed_++});
    std::push_heap(entries_.begin(), entries_.end(), worse_last());
    if (entries_.size() > limit_) {
      std::pop_heap(entries_.begin(), entries_.end(), worse_last());
      entries_.pop_back();
    }
  }

  bool empty() const { return entries_.empty(); }

  // Copies of the best `n`, best first; the list keeps them.
  std::vector<PlanCandidate> best(std::size_t n) const {
    auto entries = entries_;
    std::sort_heap(entries.begin(), entries.end(), worse_last());
    std::vector<PlanCandidate> out;
    for (std::size_t i = 0; i < entries.size() && i < n; ++i)
      out.push_back(entries[i].candidate);
    return out;
  }

  std::vector<PlanCandidate> sorted() {
    std::sort_heap(entries_.begin(), entries_.end(), worse_last());
    std::vector<PlanCandidate> out;
    for (auto& e : entries_)
      out.push_back(std::move(e.candidate));
    return out;
  }

 private:
  struct Entry {
    PlanCandidate candidate;
    std::size_t order;
  };
  // A max-heap whose top is the worst entry.
  std::function<bool(const Entry&, const Entry&)> worse_last() const {
    return [this](const Entry& a, const Entry& b) {
      if (better_(a.candidate, b.candidate))
        return true;
      if (better_(b.candidate, a.candidate))
        return false;
      return a.order < b.order;
    };
  }

  std::size_t limit_;
  Better better_;
  std::size_t pushed_ = 0;
  std::vector<Entry> entries_;
};

// Splits over capacity by the estimate that a plan names, nearest to fitting first.
constexpr std::size_t kNearestOverCapacity = 5;

// Priced splits kept per setting: enough for 4 x --top finalists even when the stage rules
// refuse many of the best.
std::size_t kept_per_setting(int top) {
  return std::size_t(16 * std::max(1, top) + 64);
}

}  // namespace

namespace {

// Picks the finalists of one setting among its priced splits.
class SettingSearch {
 public:
  SettingSearch(const core::ConfigDocument& base, const Setting& setting,
                const PlanRequest& request, PlanResult& result)
      : base_(base), setting_(setting), request_(request), result_(result) {}

  std::vector<PlanCandidate> run(const RunSpec& spec) {
    SplitPricer pricer(spec);
    const auto objective = request_.objective;
    BestCandidates fit(kept_per_setting(request_.top), [objective](const auto& a, const auto& b) {
      return better_estimate(a, b, objective);
    });
    BestCandidates over(kept_per_setting(request_.top), [](const auto& a, const auto& b) {
      return a.estimated_peak_max() < b.estimated_peak_max();
    });
    BestCandidates over_best(
        kept_per_setting(request_.top),
        [objective](const auto& a, const auto& b) { return better_estimate(a, b, objective); });
    // Millions of splits are priced into one scratch candidate; only those a list keeps are
    // copied and named.
    PlanCandidate priced;
    auto visit = [&](const std::vector<int>& cuts) {
      pricer.estimate(cuts, priced);
      ++result_.evaluated;
      const bool over_capacity = priced.estimated_peak_max() > result_.capacity_bytes;
      result_.over_capacity += over_capacity ? 1 : 0;
      const auto keep = [&](BestCandidates& list) {
        if (!list.would_keep(priced))
          return;
        PlanCandidate c = priced;
        for (int cut : cuts)
          c.splits.push_back(spec.model.layers[std::size_t(cut)].id);
        list.push(std::move(c));
      };
      keep(over_capacity ? over : fit);
      if (over_capacity && request_.fastest_when_none_fits)
        keep(over_best);
    };
    const int step = coarse_step(pricer.layers(), pricer.stages());
    if (request_.fixed_splits) {
      visit(own_cuts(spec));
    } else if (step == 1) {
      for_each_split(pricer.layers(), pricer.stages() - 1, visit);
    } else {
      for_each_coarse_split(pricer.layers(), pricer.stages(), step, visit);
      refine_best(spec, fit.empty() ? over : fit, priced, visit, pricer.layers());
      ++result_.coarse_settings;
      result_.coarse_step = std::max(result_.coarse_step, step);
    }
    auto fitting = fit.sorted();
    auto least = over.sorted();
    keep_nearest(least, spec);
    auto finalists = validated(fitting, std::size_t(4 * std::max(1, request_.top)));
    if (!finalists.empty())
      return finalists;
    // Nothing fits by the estimate: the split needing least memory is replayed all the same,
    // so that the answer names real consumers rather than an estimate's; or the best by the
    // objective, when asked for the figures of the best split whatever it needs.
    if (request_.fastest_when_none_fits) {
      auto best = over_best.sorted();
      return validated(best, 1);
    }
    return validated(least, 1);
  }

 private:
  // The setting's splits nearest to fitting join the result's few, least estimated peak first,
  // for the HTML page to name what the estimate left out.
  void keep_nearest(const std::vector<PlanCandidate>& least, const RunSpec& spec) {
    auto& nearest = result_.nearest_over_capacity;
    for (std::size_t i = 0; i < least.size() && i < kNearestOverCapacity; ++i) {
      nearest.push_back(least[i]);
      describe_setting(nearest.back(), spec);
    }
    std::stable_sort(nearest.begin(), nearest.end(), [](const auto& a, const auto& b) {
      return a.estimated_peak_max() < b.estimated_peak_max();
    });
    if (nearest.size() > kNearestOverCapacity)
      nearest.resize(kNearestOverCapacity);
  }

  // The first `wanted` of `ranked` that the spec's validation accepts, with their specs.
  std::vector<PlanCandidate> validated(std::vector<PlanCandidate>& ranked, std::size_t wanted) {
    std::vector<PlanCandidate> out;
    for (auto& c : ranked) {
      if (out.size() == wanted)
        break;
      c.overrides = setting_.overrides;
      c.relaid_mapping = setting_.relaid_mapping;
      c.overrides.push_back({"/pipeline/splits", nlohmann::json(c.splits).dump(),
                             "split " + nlohmann::json(c.splits).dump()});
      try {
        c.spec = std::make_shared<const RunSpec>(build_run_spec(base_.with_overrides(c.overrides)));
      } catch (const core::ConfigError&) {
        ++result_.invalid;
        continue;
      }
      describe_candidate(c);
      out.push_back(std::move(c));
    }
    return out;
  }

  // A coarse walk's best few splits, each improved one cut at a time: every split the moves
  // reach is visited, and a move is kept when it ranks above the split it came from.
  void refine_best(const RunSpec& spec, const BestCandidates& list, const PlanCandidate& priced,
                   const std::function<void(const std::vector<int>&)>& visit, int layers) {
    std::map<std::string, int> index;
    for (std::size_t i = 0; i < spec.model.layers.size(); ++i)
      index[spec.model.layers[i].id] = int(i);
    for (const auto& seed : list.best(kRefinedSeeds)) {
      std::vector<int> cuts;
      for (const auto& id : seed.splits)
        cuts.push_back(index.at(id));
      PlanCandidate best = seed;
      refine_split(cuts, layers, [&](const std::vector<int>& trial) {
        visit(trial);
        if (!ranks_above(priced, best))
          return false;
        best = priced;
        return true;
      });
    }
  }

  // Fitting by the estimate first, then by the objective; of two over capacity the smaller.
  bool ranks_above(const PlanCandidate& a, const PlanCandidate& b) const {
    const bool a_fits = a.estimated_peak_max() <= result_.capacity_bytes;
    const bool b_fits = b.estimated_peak_max() <= result_.capacity_bytes;
    if (a_fits != b_fits)
      return a_fits;
    if (!a_fits)
      return a.estimated_peak_max() < b.estimated_peak_max();
    return better_estimate(a, b, request_.objective);
  }

  const core::ConfigDocument& base_;
  const Setting& setting_;
  const PlanRequest& request_;
  PlanResult& result_;
};

}  // namespace

std::int64_t PlanCandidate::estimated_peak_max() const {
  return estimated_peak_bytes.empty()
             ? 0
             : *std::max_element(estimated_peak_bytes.begin(), estimated_peak_bytes.end());
}

std::string PlanCandidate::key() const {
  std::string out = "splits=" + nlohmann::json(splits).dump() + " schedule=" + schedule +
                    " gac=" + std::to_string(gac) + " micro-batch=" + std::to_string(micro_batch) +
                    " recomputation=" + recomputation;
  if (show_shape)
    out += " ipus-per-replica=" + std::to_string(ipus_per_replica) +
           " replicas=" + std::to_string(replicas);
  if (show_offload)
    out += " offload=" + offload;
  if (!relaid_mapping.empty())
    out += " device_mapping=" + nlohmann::json(relaid_mapping).dump();
  return out;
}

void PlanResult::add_skipped(const std::string& label, const std::string& why) {
  const auto same = std::find_if(skipped.begin(), skipped.end(),
                                 [&](const SkippedSettings& group) { return group.why == why; });
  if (same != skipped.end())
    ++same->count;
  else if (skipped.size() < kMaxSkipReasons)
    skipped.push_back({why, label, 1});
  else
    ++skipped_for_other_reasons;
}

std::size_t PlanResult::skipped_settings() const {
  std::size_t total = skipped_for_other_reasons;
  for (const auto& group : skipped)
    total += group.count;
  return total;
}

namespace {

// The finalists of one setting, or the reason it is skipped.
// What identifies a setting apart from its schedule.
std::string without_schedule(const Setting& setting) {
  std::string out;
  for (const auto& o : setting.overrides)
    if (o.path != "/pipeline/pipeline_schedule")
      out += o.path + "=" + o.value + "\n";
  return out;
}

// What the search of the settings keeps between them. `one_stage` holds the one-stage settings
// searched so far: with one stage every schedule runs the same program, so only the first
// schedule's is searched.
struct SearchState {
  std::set<std::string> one_stage;
  std::vector<GacRuledOut> ruled_out;  // settings the schedule's divisibility rule rules out
};

std::vector<PlanCandidate> search_setting(const core::ConfigDocument& base, const Setting& setting,
                                          const PlanRequest& search, PlanResult& result,
                                          SearchState& state) {
  if (!setting.error.empty()) {
    result.add_skipped(setting.label, setting.error);
    return {};
  }
  std::optional<RunSpec> spec;
  try {
    spec = build_run_spec(base.with_overrides(setting.overrides));
  } catch (const core::ConfigError& error) {
    result.add_skipped(setting.label, error.what());
    if (auto ruled_out = ruled_out_by_gac(base, setting))
      state.ruled_out.push_back(std::move(*ruled_out));
    return {};
  }
  if (spec->pipeline.stages.size() == 1 &&
      !state.one_stage.insert(without_schedule(setting)).second)
    return {};
  return SettingSearch(base, setting, search, result).run(*spec);
}

// "; the nearest GAC values its schedule accepts instead of 2050: 2034 or 2052" for the error
// when every setting is invalid, or empty when no GAC would make the first legal.
std::string legal_gac_hint(const std::vector<GacRuledOut>& ruled_out,
                           const std::string& first_label) {
  if (ruled_out.empty() || ruled_out.front().setting.label != first_label)
    return "";
  const auto& first = ruled_out.front();
  std::string values;
  for (std::size_t i = 0; i < first.legal.size(); ++i)
    values += (i == 0 ? "" : " or ") + std::to_string(first.legal[i]);
  return "; the nearest GAC values its schedule accepts instead of " + std::to_string(first.gac) +
         ": " + values;
}

}  // namespace

namespace plan_detail {

std::vector<PlanCandidate> search_splits(const core::ConfigDocument& base, const Setting& setting,
                                         const PlanRequest& request, PlanResult& result,
                                         const RunSpec& spec) {
  return SettingSearch(base, setting, request, result).run(spec);
}

}  // namespace plan_detail

namespace {

PlanResult empty_result(const PlanRequest& request, const RunSpec& base_spec) {
  PlanResult result;
  result.config_path = request.config_path;
  result.objective = request.objective;
  result.top = request.top;
  result.capacity_bytes = base_spec.hardware.memory_per_ipu_bytes;
  result.shard = request.shard;
  result.varies_shape = !request.ipus_per_replica.empty() || request.total_ipus > 0;
  result.varies_offload = !request.offloads.empty();
  result.varies_batch = !request.micro_batches.empty() || !request.gacs.empty() ||
                        request.global_batch > 0 || result.varies_shape;
  for (int n : request.ipus_per_replica)
    result.searched.most_ipus_per_replica = std::max(result.searched.most_ipus_per_replica, n);
  result.searched.recomputation = !request.recomputations.empty();
  result.searched.offloads = request.offloads;
  for (const auto& text : request.micro_batches) {
    const auto value = std::atoll(text.c_str());
    auto& least = result.searched.least_micro_batch;
    if (value > 0 && (least == 0 || value < least))
      least = value;
  }
  return result;
}

void show_columns(std::vector<PlanCandidate>& candidates, const PlanResult& result) {
  for (auto& c : candidates) {
    c.show_shape = result.varies_shape;
    c.show_offload = result.varies_offload;
  }
}

// A one-stage config has no split to search: unless told which IPU counts to try (or held to
// its split), plan spreads it over 1, 2, 4 and 8 IPUs per replica, the IPU-M2000's range.
PlanRequest with_default_shapes(PlanRequest search, const RunSpec& base) {
  if (search.ipus_per_replica.empty() && !search.fixed_splits && base.pipeline.stages.size() == 1)
    search.ipus_per_replica = {1, 2, 4, 8};
  return search;
}

}  // namespace

namespace {

// Candidates replayed together: enough to keep every job busy, few enough that their reports
// take a few megabytes.
std::size_t replay_batch(int jobs) {
  return std::size_t(std::max(256, 32 * jobs));
}

// Searches the settings of this process's shard in order, replaying the finalists a batch at a
// time and handing them to `keep` in the search's order, so that --jobs changes nothing.
// Returns how many finalists there were.
std::size_t search_all(const core::ConfigDocument& base, const SettingList& settings,
                       const PlanRequest& search, PlanResult& result, SearchState& state,
                       PlanKeeper& keep) {
  std::vector<PlanCandidate> batch;
  std::size_t finalists = 0;
  const auto replay = [&] {
    auto quiet = search;
    quiet.progress = nullptr;
    replay_all(batch, quiet, result);
    for (auto& c : batch)
      keep.add(std::move(c));
    batch.clear();
  };
  std::size_t done = 0;
  for (std::size_t i = 0; i < settings.size(); ++i) {
    if (!search.shard.contains(i))
      continue;
    auto found = search_setting(base, settings.at(i), search, result, state);
    finalists += found.size();
    for (auto& c : found)
      batch.push_back(std::move(c));
    ++done;
    if (batch.size() >= replay_batch(search.jobs) || done == result.settings)
      replay();
    if (search.progress)
      search.progress(done, result.settings, "settings");
  }
  return finalists;
}

}  // namespace

PlanResult plan(const PlanRequest& request) {
  const auto base = core::ConfigDocument::load(request.config_path, request.base_overrides);
  // The base is a template each setting overrides: its own GAC may be illegal for a split
  // fixed with --splits when --gac replaces it, so its divisibility is not held against it.
  const RunSpec base_spec = build_run_spec(
      request.gacs.empty()
          ? base
          : base.with_overrides({{"/pipeline/relaxed_divisibility", "true", "--gac"}}));
  refuse_explicit_stages(base, base_spec);
  auto search = request;
  search.fixed_splits = request.fixed_splits || overridden(request, "/pipeline/splits");
  check_request(request, base_spec, search.fixed_splits);
  search = with_default_shapes(search, base_spec);
  search = plan_detail::keeping_global_batch(search, base_spec);
  PlanResult result = empty_result(search, base_spec);
  result.default_shapes = request.ipus_per_replica != search.ipus_per_replica;
  const SettingList settings(schedules_searched(search, base_spec), search, base_spec);
  for (std::size_t i = 0; i < settings.size(); ++i)
    result.settings += request.shard.contains(i) ? 1 : 0;
  SearchState state;
  PlanKeeper keep(search, result);
  if (search_all(base, settings, search, result, state, keep) == 0) {
    throw core::ConfigError(
        request.config_path, "",
        "no combination of the values asked for is a valid config" +
            (result.skipped.empty()
                 ? std::string()
                 : "; the first: " + result.skipped.front().first_label + ": " +
                       result.skipped.front().why +
                       legal_gac_hint(state.ruled_out, result.skipped.front().first_label)));
  }
  keep.finish(result);
  search_nearest_legal(base, state.ruled_out, settings, search, result);
  result.baseline = baseline_of(base, search, result);
  show_columns(result.ranked, result);
  show_columns(result.nearest_over_capacity, result);
  show_columns(result.nearest_legal_gac, result);
  return result;
}

}  // namespace ipusim::sim
