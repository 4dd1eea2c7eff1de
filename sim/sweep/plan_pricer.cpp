#include "sim/sweep/plan_pricer.hpp"

#include <algorithm>

#include "models/kernels/optimizer.hpp"
#include "schedules/step_schedule.hpp"
#include "sim/machine/collectives.hpp"
#include "sim/machine/cost_model.hpp"
#include "sim/machine/stash_cost.hpp"

namespace ipusim::sim::plan_detail {
namespace {

// The stage layer `l` falls in under `cuts`.
int stage_of(const std::vector<int>& cuts, int l) {
  return int(std::upper_bound(cuts.begin(), cuts.end(), l) - cuts.begin());
}

}  // namespace

SplitPricer::SplitPricer(const RunSpec& spec)
    : spec_(spec),
      layers_(int(spec.model.layers.size())),
      stash_kind_(spec.schedule->stash_kind()),
      held_(held_on_chip(*spec.schedule, spec.pipeline.offload_activations)) {
  for (const auto& stage : spec.pipeline.stages)
    ipu_.push_back(stage.ipus.front());
  find_ties();
  find_window();
}

void SplitPricer::estimate(const std::vector<int>& cuts, PlanCandidate& out) {
  const int ipus = spec_.pipeline.ipus_per_replica();
  auto& work = work_;
  auto& live = live_;
  auto& stage_costs = stage_costs_;
  work.assign(std::size_t(ipus), 0);
  live.assign(std::size_t(ipus), 0);
  stage_costs.clear();
  out.estimated_peak_bytes.assign(std::size_t(ipus), spec_.hardware.code.control_bytes);
  for (int k = 0; k < stages(); ++k) {
    const int begin = k == 0 ? 0 : cuts[k - 1];
    const int end = k + 1 == stages() ? layers_ : cuts[k];
    const RangeCost& c = range(k, begin, end);
    stage_costs.push_back(&c);
    const auto ipu = std::size_t(ipu_[k]);
    work[ipu] += c.work;
    live[ipu] = std::max(live[ipu], c.live_bytes);
    out.estimated_peak_bytes[ipu] += c.static_bytes;
    out.estimated_peak_bytes[ipu] += held_[k] * c.stash_bytes;
  }
  for (std::size_t i = 0; i < std::size_t(ipus); ++i)
    out.estimated_peak_bytes[i] += live[i];
  add_tied_copies(cuts, out);
  const auto busiest = std::max_element(work.begin(), work.end());
  out.bottleneck_cycles = *busiest;
  out.bottleneck_ipu = int(busiest - work.begin());
  out.microbatch_cycles = window_.empty() ? out.bottleneck_cycles : window_cycles(stage_costs);
}

// The steps of one period in the middle of the schedule, where every slot runs once when the
// pipeline is full (none for a schedule without steps).
void SplitPricer::find_window() {
  const auto* steps = spec_.schedule->as_steps();
  if (steps == nullptr)
    return;
  const std::int64_t first = std::max<std::int64_t>(0, (steps->steps() - steps->period()) / 2);
  std::vector<schedules::Task> tasks;
  for (std::int64_t t = first; t < std::min(first + steps->period(), steps->steps()); ++t) {
    StepWork step(std::size_t(spec_.pipeline.ipus_per_replica()));
    for (std::size_t ipu = 0; ipu < step.size(); ++ipu) {
      steps->tasks_in_step(t, int(ipu), tasks);
      for (const auto& task : tasks)
        if (schedules::is_compute(task.op))
          step[ipu].emplace_back(task.stage, task.op);
    }
    window_.push_back(std::move(step));
  }
}

// The window's cycles: each step lasts as long as its busiest IPU's compute.
std::int64_t SplitPricer::window_cycles(const std::vector<const RangeCost*>& stage_costs) const {
  std::int64_t total = 0;
  for (const auto& step : window_) {
    std::int64_t longest = 0;
    for (const auto& ipu : step) {
      std::int64_t busy = 0;
      for (const auto& [stage, op] : ipu) {
        const RangeCost& c = *stage_costs[std::size_t(stage)];
        busy += op == schedules::Op::kForward     ? c.forward
                : op == schedules::Op::kBackward  ? c.backward
                : op == schedules::Op::kRecompute ? c.recompute
                                                  : 0;
      }
      longest = std::max(longest, busy);
    }
    total += longest;
  }
  return total;
}

void SplitPricer::find_ties() {
  const auto& p = spec_.pipeline;
  for (int l = 0; l < layers_; ++l) {
    const auto& layer = spec_.model.layers[std::size_t(l)];
    if (layer.tied_to.empty())
      continue;
    const int owner = spec_.model.index_of(layer.tied_to);
    const auto& word = spec_.model.layers[std::size_t(owner)].params;
    const std::int64_t per_element =
        models::dtype_bytes(p.dtype) +
        (p.training ? models::dtype_bytes(p.gradient_accumulation_dtype) : 0);
    ties_.push_back({l, owner, word.vocab_size * word.hidden * per_element});
  }
}

void SplitPricer::add_tied_copies(const std::vector<int>& cuts, PlanCandidate& out) const {
  for (const Tie& tie : ties_) {
    const int user_ipu = ipu_[std::size_t(stage_of(cuts, tie.user))];
    if (user_ipu != ipu_[std::size_t(stage_of(cuts, tie.owner))])
      out.estimated_peak_bytes[std::size_t(user_ipu)] += tie.copy_bytes;
  }
}

const SplitPricer::RangeCost& SplitPricer::range(int k, int begin, int end) {
  const auto key = (std::int64_t(k) * (layers_ + 1) + begin) * (layers_ + 1) + end;
  const auto found = memo_.find(key);
  if (found != memo_.end())
    return found->second;
  return memo_.emplace(key, price(k, begin, end)).first->second;
}

SplitPricer::RangeCost SplitPricer::price(int k, int begin, int end) const {
  std::vector<int> layers;
  for (int l = begin; l < end; ++l)
    layers.push_back(l);
  const auto kind = stash_kind_[std::size_t(k)];
  const SubstageCost cost =
      substage_cost(spec_, layers, ipu_[k], kind, spec_.schedule->final_forward_stage(k));
  const bool recomputes =
      kind == schedules::StashKind::kStageInputs || kind == schedules::StashKind::kCheckpoints;
  RangeCost out;
  out.forward = cost.forward_cycles;
  out.backward = cost.backward_cycles;
  out.recompute = recomputes ? cost.recompute_cycles : 0;
  out.work = out.forward + out.backward + out.recompute;
  for (const auto& op : cost.operations)
    out.static_bytes += op.code_bytes;
  out.static_bytes += cost.params * bytes_per_parameter() + optimizer_state_bytes(cost.params);
  out.stash_bytes = cost.stash_bytes;
  out.live_bytes = std::max(cost.live_bytes, cost.backward_live_bytes);
  return out;
}

// Weights, and when training their accumulators.
std::int64_t SplitPricer::bytes_per_parameter() const {
  const auto& p = spec_.pipeline;
  std::int64_t bytes = models::dtype_bytes(p.dtype);
  if (p.training)
    bytes += models::dtype_bytes(p.gradient_accumulation_dtype);
  return bytes;
}

// The optimizer state `params` keep on chip: none when offloaded, this replica's shard when
// the replicas shard it (as the cost model counts it, rounded up).
std::int64_t SplitPricer::optimizer_state_bytes(std::int64_t params) const {
  const auto& p = spec_.pipeline;
  if (!p.training || p.offload_weight_update_variables)
    return 0;
  const std::int64_t group = sharding_group(spec_);
  return (params * models::state_bytes_per_parameter(p.optimizer, p.dtype) + group - 1) / group;
}

}  // namespace ipusim::sim::plan_detail
