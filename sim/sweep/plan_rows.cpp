// The rows of the planner's tables: the per-IPU count of the layers a split puts on each IPU,
// and the candidates one row stands for (sim/sweep/planner_internal.hpp).

#include <algorithm>
#include <map>

#include "models/layers/layer_types.hpp"
#include "sim/core/format.hpp"
#include "sim/sweep/planner_internal.hpp"

namespace ipusim::sim::plan_detail {

namespace {

// The layer types the per-IPU column counts: the one the model repeats most (BERT's encoders,
// an MLP's dense layers), which says how a split balances the model; for a model of encoder
// halves both halves apart, so that a split between an attention half and its feed-forward
// half shows.
std::vector<std::string> counted_types(const RunSpec& spec) {
  std::map<std::string, int> count;
  for (const auto& layer : spec.model.layers)
    ++count[models::layer_type_name(layer.type)];
  const std::string most =
      std::max_element(count.begin(), count.end(), [](const auto& a, const auto& b) {
        return a.second < b.second;
      })->first;
  const std::string attention = models::layer_type_name(models::LayerType::kTransformerAttention);
  const std::string feed_forward =
      models::layer_type_name(models::LayerType::kTransformerFeedForward);
  if ((most == attention || most == feed_forward) && count[attention] > 0 &&
      count[feed_forward] > 0)
    return {attention, feed_forward};
  return {most};
}

}  // namespace

std::string counted_header(const RunSpec& spec) {
  const auto types = counted_types(spec);
  return types.size() == 1 ? types.front() + " layers per IPU" : "attention/FFN halves per IPU";
}

namespace {

// A stage's count of each counted type, joined by '/'; `none` says whether all are 0.
std::string stage_count(const RunSpec& spec, const std::vector<std::string>& types,
                        const std::vector<int>& layers, bool& none) {
  std::string out;
  none = true;
  for (const auto& type : types) {
    int n = 0;
    for (int layer : layers)
      n += models::layer_type_name(spec.model.layers[std::size_t(layer)].type) == type ? 1 : 0;
    none = none && n == 0;
    out += (out.empty() ? "" : "/") + std::to_string(n);
  }
  return out;
}

}  // namespace

std::string layers_per_ipu(const PlanCandidate& c) {
  const auto& spec = *c.spec;
  const auto types = counted_types(spec);
  std::vector<std::string> per_ipu(std::size_t(spec.pipeline.ipus_per_replica()));
  const auto& stages = spec.pipeline.stages;
  for (std::size_t k = 0; k < stages.size(); ++k) {
    bool none = true;
    const std::string n = stage_count(spec, types, stages[k].layers(), none);
    const bool head = none && k + 1 == stages.size() && k > 0;
    auto& cell = per_ipu[std::size_t(stages[k].ipus.front())];
    cell += (cell.empty() ? "" : "+") + (head ? std::string("head") : n);
  }
  std::string out;
  for (const auto& cell : per_ipu)
    out += (out.empty() ? "" : ",") + cell;
  return out;
}

namespace {

bool same_row(const PlanCandidate& a, const PlanCandidate& b) {
  const auto samples = [](const PlanCandidate& c) {
    return std::int64_t(c.report->figures.throughput + 0.5);
  };
  return layers_per_ipu(a) == layers_per_ipu(b) && a.schedule == b.schedule && a.gac == b.gac &&
         a.micro_batch == b.micro_batch && a.recomputation == b.recomputation &&
         a.offload == b.offload && a.ipus_per_replica == b.ipus_per_replica &&
         a.replicas == b.replicas && samples(a) == samples(b) &&
         a.report->figures.fits_in_memory == b.report->figures.fits_in_memory;
}

}  // namespace

std::vector<RowGroup> row_groups(const PlanResult& result, std::size_t shown) {
  std::vector<RowGroup> groups;
  for (std::size_t i = 0; i < shown; ++i) {
    if (!groups.empty() && same_row(result.ranked[groups.back().first], result.ranked[i]))
      groups.back().last = i;
    else
      groups.push_back({i, i});
  }
  return groups;
}

// "#4-#5: 2 splits of the same row, the first shown: [...] (938 MB), [...] (932 MB)".
std::string group_splits_line(const PlanResult& result, const RowGroup& g) {
  if (g.size() == 1)
    return "";
  std::string out = g.rank_text() + ": " + std::to_string(g.size()) +
                    " splits of the same row, the first's memory shown:";
  for (std::size_t i = g.first; i <= g.last; ++i) {
    const auto& c = result.ranked[i];
    out += (i == g.first ? " " : ", ") + nlohmann::json(c.splits).dump() + " (peak " +
           si(double(c.report->figures.peak_memory_bytes_max), "B") + ")";
  }
  return out + "\n";
}

}  // namespace ipusim::sim::plan_detail
