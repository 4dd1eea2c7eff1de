#include "sim/replay/replay.hpp"

#include <algorithm>
#include <cmath>
#include <queue>

#include "sim/core/checked.hpp"
#include "sim/core/error.hpp"
#include "sim/core/event_queue.hpp"
#include "sim/core/format.hpp"
#include "sim/core/resource.hpp"

namespace ipusim::sim {
namespace {

// What an overflow of a byte count names (see core::Overflow).
constexpr const char* kBytes = "byte count";

using core::Cycles;
using core::EventPriority;
using schedules::Op;
using schedules::Task;

std::int64_t transfer_cycles(double bytes, double bandwidth, double clock_hz) {
  if (bandwidth <= 0 || bytes <= 0)
    return 0;
  return core::cycles_from_seconds(bytes / bandwidth, clock_hz);
}

// Per-IPU memory: static items, the stash FIFOs and the activations of the running task on
// chip; what is offloaded to streaming memory apart.
class MemoryTracker {
 public:
  MemoryTracker(const CostModel& cost, const schedules::Schedule& schedule, int ipus,
                std::int64_t capacity, bool offload_fifos)
      : items_(cost.static_memory),
        streaming_items_(cost.streaming_memory),
        capacity_(capacity),
        stash_(ipus, 0),
        live_(ipus, 0),
        at_peak_(ipus),
        stats_(ipus) {
    items_.resize(ipus);
    streaming_items_.resize(ipus);
    if (schedule.step_based())
      add_static_fifos(cost, schedule, offload_fifos ? streaming_items_ : items_);
    static_by_category_ = by_category(items_);
    streaming_by_category_ = by_category(streaming_items_);
    static_total_.assign(ipus, 0);
    fifo_total_.assign(ipus, 0);
    for (int ipu = 0; ipu < ipus; ++ipu) {
      for (const auto& [category, bytes] : static_by_category_[ipu])
        static_total_[ipu] = core::checked_add(static_total_[ipu], bytes, kBytes);
      const auto fifos = static_by_category_[ipu].find("stash");
      fifo_total_[ipu] = fifos == static_by_category_[ipu].end() ? 0 : fifos->second;
    }
  }

  void add_stash(int ipu, std::int64_t bytes) {
    stash_[ipu] = core::checked_add(stash_[ipu], bytes, kBytes);
  }
  void set_live(int ipu, std::int64_t bytes) { live_[ipu] = bytes; }

  // Records the current totals of `ipu`, and when and what it held at its peak.
  void observe(int ipu, std::int64_t step, Cycles now) {
    const std::int64_t total = static_total_[ipu] + stash_[ipu] + live_[ipu];
    auto& stats = stats_[ipu];
    stats.peak_stash_bytes = std::max(stats.peak_stash_bytes, stash_[ipu] + fifo_total_[ipu]);
    if (total > stats.peak_memory_bytes) {
      stats.peak_memory_bytes = total;
      at_peak_[ipu] = {stash_[ipu], live_[ipu], step, now.count};
    }
  }

  // The peaks, with what each IPU held at its peak by category.
  std::vector<IpuStats> stats() const {
    auto stats = stats_;
    for (std::size_t ipu = 0; ipu < stats.size(); ++ipu) {
      auto& breakdown = stats[ipu].memory_at_peak;
      breakdown = static_by_category_[ipu];
      if (at_peak_[ipu].stash > 0)
        breakdown["stash"] += at_peak_[ipu].stash;
      if (at_peak_[ipu].live > 0)
        breakdown["activations"] += at_peak_[ipu].live;
      stats[ipu].streaming_memory = streaming_by_category_[ipu];
    }
    return stats;
  }

  // Every IPU over capacity at its peak, the largest need first (the lower IPU on a tie).
  std::vector<IpuOverflow> overflows() const {
    std::vector<IpuOverflow> out;
    for (int ipu = 0; ipu < int(stats_.size()); ++ipu) {
      if (stats_[ipu].peak_memory_bytes > capacity_)
        out.push_back(overflow(ipu));
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const IpuOverflow& a, const IpuOverflow& b) { return a.bytes > b.bytes; });
    return out;
  }

  const std::vector<std::map<std::string, std::int64_t>>& static_memory() const {
    return static_by_category_;
  }
  MemorySample sample(int ipu, Cycles now) const { return {ipu, now, stash_[ipu], live_[ipu]}; }

 private:
  struct Peak {
    std::int64_t stash = 0;
    std::int64_t live = 0;
    std::int64_t step = 0;
    std::int64_t cycle = 0;
  };

  static std::vector<std::map<std::string, std::int64_t>> by_category(
      const std::vector<std::vector<MemoryItem>>& items) {
    std::vector<std::map<std::string, std::int64_t>> out(items.size());
    for (std::size_t ipu = 0; ipu < items.size(); ++ipu) {
      for (const auto& item : items[ipu]) {
        auto& total = out[ipu][item.category];
        total = core::checked_add(total, item.bytes, kBytes);
      }
    }
    return out;
  }

  // Graphcore allocates every FIFO buffer for the whole program, on chip or, offloaded, in
  // streaming memory.
  static void add_static_fifos(const CostModel& cost, const schedules::Schedule& schedule,
                               std::vector<std::vector<MemoryItem>>& items) {
    const auto depth = schedule.stash_depth();
    for (int s = 0; s < int(cost.stages.size()); ++s) {
      for (const auto& sub : cost.stages[s]) {
        const std::int64_t bytes = core::checked_mul(depth[s], sub.stash_bytes, kBytes);
        if (bytes == 0)
          continue;
        items[sub.ipu].push_back({"stash",
                                  "stash FIFO of stage " + std::to_string(s) + " (" +
                                      std::to_string(depth[s]) + " x " +
                                      si(double(sub.stash_bytes), "B") + ")",
                                  bytes});
      }
    }
  }

  IpuOverflow overflow(int ipu) const {
    const Peak& peak = at_peak_[ipu];
    IpuOverflow oom{ipu, ipu, peak.step, peak.cycle, stats_[ipu].peak_memory_bytes, items_[ipu]};
    if (peak.stash > 0)
      oom.largest.push_back({"stash", "stashed activations in flight", peak.stash});
    if (peak.live > 0)
      oom.largest.push_back({"activations", "activations of the running task", peak.live});
    std::stable_sort(oom.largest.begin(), oom.largest.end(),
                     [](const MemoryItem& a, const MemoryItem& b) { return a.bytes > b.bytes; });
    if (oom.largest.size() > 5)
      oom.largest.resize(5);
    return oom;
  }

  std::vector<std::vector<MemoryItem>> items_;
  std::vector<std::vector<MemoryItem>> streaming_items_;
  std::vector<std::map<std::string, std::int64_t>> static_by_category_;
  std::vector<std::map<std::string, std::int64_t>> streaming_by_category_;
  std::vector<std::int64_t> static_total_;
  std::vector<std::int64_t> fifo_total_;  // static FIFOs, part of static_total_
  std::int64_t capacity_;
  std::vector<std::int64_t> stash_;
  std::vector<std::int64_t> live_;
  std::vector<Peak> at_peak_;
  std::vector<IpuStats> stats_;
};

// When a transfer occupied which link (physical IPUs).
struct LinkUse {
  int from = 0;
  int to = 0;
  Cycles begin;
  Cycles end;
};

// IPU-Links between physical IPUs; a busy link queues later transfers behind earlier ones.
class Links {
 public:
  explicit Links(const HardwareSpec& hardware, int pipeline_ipus) : hardware_(hardware) {
    int placed = 1;
    while (placed < pipeline_ipus)
      placed *= 2;
    for (int i = 0; i < pipeline_ipus; ++i) {
      physical_.push_back(physical_ipu(hardware.selection_order, i, std::max(placed, 2)));
    }
    width_ = std::max(placed, 2);
    for (int p : physical_)
      width_ = std::max(width_, p + 1);
    routes_.resize(std::size_t(width_) * width_);
  }

  const std::vector<int>& physical() const { return physical_; }

  // Sends `bytes` from pipeline IPU `from` to `to` no earlier than `start`.
  LinkUse send(int from, int to, std::int64_t bytes, Cycles start) {
    const int a = physical_[from];
    const int b = physical_[to];
    const int direct = links_between(hardware_, a, b);
    // Non-neighbours route over the ladder: a latency per rung and the rail links' bandwidth.
    const int hops = direct > 0 ? 1 : std::abs(a / 2 - b / 2) + 1;
    const int width = direct > 0 ? direct : std::max(1, hardware_.links_up_down);
    const std::int64_t duration =
        hops * hardware_.link_latency_cycles +
        transfer_cycles(double(bytes), hardware_.link_bandwidth * width, hardware_.clock_hz);
    Route& route = routes_[std::size_t(a) * width_ + b];
    const auto held = route.link.occupy(start, duration);
    route.bytes = core::checked_add(route.bytes, bytes, kBytes);
    return {a, b, held.begin, held.end};
  }

  // The links used, ordered by logical (from, to).
  std::vector<LinkStats> stats() const {
    std::vector<int> logical(std::size_t(width_), -1);
    for (int i = 0; i < int(physical_.size()); ++i)
      logical[physical_[i]] = i;
    std::vector<LinkStats> out;
    for (std::size_t i = 0; i < routes_.size(); ++i) {
      const auto& route = routes_[i];
      if (route.link.uses() == 0)
        continue;
      const int a = int(i / width_);
      const int b = int(i % width_);
      out.push_back({logical[a], logical[b], a, b, route.link.busy_cycles(), route.bytes});
    }
    std::sort(out.begin(), out.end(), [](const LinkStats& x, const LinkStats& y) {
      return std::pair{x.from_ipu, x.to_ipu} < std::pair{y.from_ipu, y.to_ipu};
    });
    return out;
  }

 private:
  struct Route {
    core::Resource link;
    std::int64_t bytes = 0;
  };

  const HardwareSpec& hardware_;
  std::vector<int> physical_;
  int width_ = 0;
  std::vector<Route> routes_;  // by from * width_ + to
};

// Dense ids for the streams of in-order completions the dependency-ordered replay waits on:
// each compute op of each sub-stage, each IPU's infeed and outfeed, each copy route. Also
// holds the bytes of every copy route, so a copy costs one short scan, not a map lookup.
class StreamIndex {
 public:
  StreamIndex(const CostModel& cost, int ipus) : ipus_(ipus) {
    int substages = 0;
    for (const auto& stage : cost.stages) {
      substage_base_.push_back(substages);
      substages += int(stage.size());
    }
    substages_ = substages;
    feed_base_ = 4 * substages;
    size_ = feed_base_ + 2 * ipus;
    routes_.resize(cost.stages.size());
    for (const auto& [key, bytes] : cost.copy_bytes) {
      const auto& [stage, ipu, peer, gradient] = key;
      routes_[stage].push_back({ipu, peer, gradient, bytes, size_++});
    }
  }

  int size() const { return size_; }

  int id(const Task& task) {
    if (schedules::is_compute(task.op))
      return int(task.op) * substages_ + substage_base_[task.stage] + task.substage;
    if (task.op == Op::kInfeed)
      return feed_base_ + task.ipu;
    if (task.op == Op::kOutfeed)
      return feed_base_ + ipus_ + task.ipu;
    IPUSIM_CHECK(task.op == Op::kCopy);
    return route(task).id;
  }

  std::int64_t copy_bytes(const Task& task) { return route(task).bytes; }

 private:
  struct Route {
    int ipu = 0;
    int peer = 0;
    bool gradient = false;
    std::int64_t bytes = 0;
    int id = 0;
  };

  // A route the cost model has no bytes for carries nothing but is still waited on.
  Route& route(const Task& task) {
    const bool gradient = task.copy == schedules::CopyKind::kGradient;
    auto& routes = routes_[task.stage];
    for (auto& r : routes) {
      if (r.ipu == task.ipu && r.peer == task.peer_ipu && r.gradient == gradient)
        return r;
    }
    routes.push_back({task.ipu, task.peer_ipu, gradient, 0, size_++});
    return routes.back();
  }

  int ipus_;
  int substages_ = 0;
  std::vector<int> substage_base_;
  int feed_base_ = 0;
  int size_ = 0;
  std::vector<std::vector<Route>> routes_;  // by stage
};

class Replayer {
 public:
  Replayer(const RunSpec& spec, const schedules::Schedule& schedule, const CostModel& cost,
           const ReplayOptions& options)
      : spec_(spec),
        schedule_(schedule),
        cost_(cost),
        options_(options),
        ipus_(spec.pipeline.ipus_per_replica()),
        memory_(cost, schedule, ipus_, spec.hardware.memory_per_ipu_bytes,
                spec.pipeline.offload_activations),
        links_(spec.hardware, ipus_),
        streams_(cost, ipus_),
        copy_slots_(copy_slots(schedule)),
        fifos_(offloaded_fifos()),
        fifo_ipus_(ipus_with_fifos(fifos_)),
        stepped_(ipus_, -1),
        busy_(ipus_) {}

  ReplayResult run() {
    notify([this](ReplayObserver& o) { o.on_begin(layout()); });
    for (int ipu = 0; ipu < ipus_; ++ipu)
      check_memory(ipu, 1, Cycles{0});
    const Cycles pipeline_end = schedule_.step_based() ? run_steps() : run_ordered();
    const Cycles end = run_weight_update(pipeline_end);
    notify([end](ReplayObserver& o) { o.on_end(end); });
    ReplayResult result = finish(end);
    if (result.out_of_memory && !options_.allow_oom)
      throw core::SimulationOutcome(result.out_of_memory->message());
    return result;
  }

 private:
  // ---- observers ----
  template <typename Call>
  void notify(const Call& call) const {
    for (auto* observer : options_.observers)
      call(*observer);
  }
  bool observed() const { return !options_.observers.empty(); }

  ReplayLayout layout() const {
    ReplayLayout layout;
    layout.ipus = ipus_;
    layout.physical = links_.physical();
    layout.replicas = spec_.pipeline.replication_factor;
    layout.clock_hz = spec_.hardware.clock_hz;
    layout.memory_capacity = spec_.hardware.memory_per_ipu_bytes;
    layout.step_based = schedule_.step_based();
    layout.static_memory = memory_.static_memory();
    return layout;
  }

  void notify_task(const Task& task, Cycles start, std::int64_t cycles, int phase,
                   std::int64_t bytes) const {
    if (!observed())
      return;
    TaskSpan span{task, start, start + Cycles{cycles}, phase, task_flops(task), bytes};
    notify([&span](ReplayObserver& o) { o.on_task(span); });
  }

  void notify_transfer(const Task& task, std::int64_t bytes, const LinkUse& use) const {
    if (!observed())
      return;
    TransferSpan span{task, use.from, use.to, bytes, use.begin, use.end};
    notify([&span](ReplayObserver& o) { o.on_transfer(span); });
  }

  void notify_memory(int ipu, Cycles now) const {
    if (!observed())
      return;
    const auto sample = memory_.sample(ipu, now);
    notify([&sample](ReplayObserver& o) { o.on_memory(sample); });
  }

  void notify_phase(int phase, Cycles start) const {
    notify([phase, start](ReplayObserver& o) { o.on_phase(phase, start); });
  }

  // FLOPs of one task; a split-off W gets the backward's FLOPs in proportion to its cycles.
  double task_flops(const Task& task) const {
    const auto& sub = cost_.substage(task.stage, task.substage);
    switch (task.op) {
      case Op::kForward:
      case Op::kRecompute:
        return sub.forward_flops;
      case Op::kBackward:
      case Op::kWeightGrad:
        return sub.backward_cycles > 0
                   ? sub.backward_flops * double(compute_cycles(task)) / double(sub.backward_cycles)
                   : 0.0;
      default:
        return 0.0;
    }
  }

  // ---- costs of single tasks ----
  std::int64_t compute_cycles(const Task& task) const {
    const auto& sub = cost_.substage(task.stage, task.substage);
    switch (task.op) {
      case Op::kForward:
        return sub.forward_cycles;
      case Op::kRecompute:
        return sub.recompute_cycles;
      case Op::kWeightGrad:
        return sub.weight_grad_cycles;
      case Op::kBackward:
        return schedule_.splits_weight_grad() ? sub.backward_cycles - sub.weight_grad_cycles
                                              : sub.backward_cycles;
      default:
        return 0;
    }
  }

  std::int64_t host_cycles(std::int64_t bytes) const {
    const auto& hw = spec_.hardware;
    return hw.host_sync_cycles +
           transfer_cycles(double(bytes), hw.host_link_bandwidth, hw.clock_hz);
  }

  void check_memory(int ipu, std::int64_t step, Cycles now) { memory_.observe(ipu, step, now); }

  // Busy time of a compute span, split over the phase it belongs to.
  void add_busy(int ipu, std::int64_t cycles, int phase) {
    busy_[ipu].total += cycles;
    busy_[ipu].in_phase[phase] += cycles;
  }

  // ---- BSP (Graphcore) ----
  // Which copies a BSP step exchanges: Grouped runs every stage's forward and backward copy
  // program in every step, Interleaved each in alternate steps; Sequential only the copies of
  // the stage that ran.
  enum class CopySlots { kAsScheduled, kEveryStep, kAlternateSteps };

  static CopySlots copy_slots(const schedules::Schedule& schedule) {
    const auto name = schedule.name();
    if (name == "grouped")
      return CopySlots::kEveryStep;
    return name == "interleaved" ? CopySlots::kAlternateSteps : CopySlots::kAsScheduled;
  }

  Cycles run_steps() {
    Cycles now{0};
    std::vector<Task> tasks;
    std::vector<Task> copies;
    int last_phase = -1;
    // (next busy step, IPU), earliest first: IPUs run in index order within a step, and the
    // idle ones of Sequential's long steps cost nothing.
    using Wake = std::pair<std::int64_t, int>;
    std::priority_queue<Wake, std::vector<Wake>, std::greater<>> next_busy;
    for (int ipu = 0; ipu < ipus_; ++ipu)
      next_busy.push({schedule_.next_busy_step(ipu, 0), ipu});
    for (std::int64_t step = 0; step < schedule_.steps(); ++step) {
      const int phase = int(schedule_.step_phase(step));
      if (phase != last_phase)
        notify_phase(phase, now);
      last_phase = phase;
      Cycles compute_end = now;
      copies.clear();
      while (next_busy.top().first == step) {
        const int ipu = next_busy.top().second;
        next_busy.pop();
        compute_end = std::max(compute_end, run_ipu_step(ipu, step, phase, now, tasks, copies));
        stepped_[ipu] = step;
        next_busy.push({schedule_.next_busy_step(ipu, step + 1), ipu});
      }
      compute_end = std::max(compute_end, stream_idle_fifos(step, phase, now));
      const Cycles exchanged = exchange(step, compute_end, copies);
      phase_cycles_[phase] += (exchanged - now).count;
      now = exchanged;
    }
    return now;
  }

  Cycles run_ipu_step(int ipu, std::int64_t step, int phase, Cycles start, std::vector<Task>& tasks,
                      std::vector<Task>& copies) {
    schedule_.tasks_in_step(step, ipu, tasks);
    Cycles cursor = start;
    const std::size_t fifos_at = fifos_[ipu].empty() ? kNoFifos : fifo_position(tasks);
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const Task& task = tasks[i];
      ++task_count_;
      if (i == fifos_at)
        cursor = stream_fifos(ipu, step, phase, cursor, tasks);
      if (task.op == Op::kCopy) {
        copies.push_back(task);
      } else if (task.op == Op::kInfeed || task.op == Op::kOutfeed) {
        const auto bytes = task.op == Op::kInfeed ? cost_.infeed_bytes : cost_.outfeed_bytes;
        const auto cycles = host_cycles(bytes);
        busy_[ipu].host += cycles;
        notify_task(task, cursor, cycles, phase, bytes);
        cursor += Cycles{cycles};
      } else if (schedules::is_compute(task.op)) {
        const auto cycles = compute_cycles(task);
        const auto live = cost_.substage(task.stage, task.substage).live_bytes;
        memory_.set_live(ipu, live);
        check_memory(ipu, step + 1, cursor);
        notify_task(task, cursor, cycles, phase, live);
        notify_memory(ipu, cursor);
        memory_.set_live(ipu, 0);
        add_busy(ipu, cycles, phase);
        cursor += Cycles{cycles};
        notify_memory(ipu, cursor);
      }
    }
    return fifos_at == tasks.size() ? stream_fifos(ipu, step, phase, cursor, tasks) : cursor;
  }

  // ---- stash FIFOs in streaming memory (offload_activations) ----
  struct OffloadedFifo {
    int stage = 0;
    std::int64_t bytes = 0;  // one entry: one micro-batch of what the stage stashes
  };

  // Per IPU, the FIFOs kept in streaming memory: none without offload_activations.
  std::vector<std::vector<OffloadedFifo>> offloaded_fifos() const {
    std::vector<std::vector<OffloadedFifo>> fifos(static_cast<std::size_t>(ipus_));
    if (!spec_.pipeline.offload_activations || !schedule_.step_based())
      return fifos;
    const auto depth = schedule_.stash_depth();
    for (int s = 0; s < int(cost_.stages.size()); ++s) {
      for (const auto& sub : cost_.stages[s]) {
        if (depth[s] > 0 && sub.stash_bytes > 0)
          fifos[sub.ipu].push_back({s, sub.stash_bytes});
      }
    }
    return fifos;
  }

  static constexpr std::size_t kNoFifos = std::size_t(-1);

  static std::vector<int> ipus_with_fifos(const std::vector<std::vector<OffloadedFifo>>& fifos) {
    std::vector<int> ipus;
    for (int ipu = 0; ipu < int(fifos.size()); ++ipu) {
      if (!fifos[ipu].empty())
        ipus.push_back(ipu);
    }
    return ipus;
  }

  // Where in an IPU's step its FIFOs run: right after the stage programs (F, B, W), before the
  // recomputation, copies and outfeed (TF's PipelineVisitor order), wherever the schedule lists
  // the recomputation; in a step without stage programs, before the first of those.
  static std::size_t fifo_position(const std::vector<Task>& tasks) {
    const auto last_program = std::find_if(tasks.rbegin(), tasks.rend(), [](const Task& task) {
      return schedules::is_compute(task.op) && task.op != Op::kRecompute;
    });
    if (last_program != tasks.rend())
      return std::size_t(tasks.rend() - last_program);
    const auto first_after = std::find_if(tasks.begin(), tasks.end(), [](const Task& task) {
      return task.op == Op::kRecompute || task.op == Op::kCopy || task.op == Op::kOutfeed;
    });
    return std::size_t(first_after - tasks.begin());
  }

  // Graphcore runs stage k's FIFO in k's forward slot: in ramp-up only where F_k runs, after
  // that in every slot, masked or not, so that the last entries drain in ramp-down.
  bool fifo_runs(const OffloadedFifo& fifo, std::int64_t step,
                 const std::vector<Task>& tasks) const {
    if (schedule_.step_code_phase(step) == schedules::CodePhase::kRampUp) {
      return std::any_of(tasks.begin(), tasks.end(), [&fifo](const Task& task) {
        return task.op == Op::kForward && task.stage == fifo.stage;
      });
    }
    return copy_slots_ == CopySlots::kEveryStep || (step - fifo.stage) % 2 == 0;
  }

  // Each run of an offloaded FIFO copies its oldest entry from streaming memory to its output,
  // then its input into the freed buffer (TF's FifoOp); the IPU waits for both.
  Cycles stream_fifos(int ipu, std::int64_t step, int phase, Cycles cursor,
                      const std::vector<Task>& tasks) {
    for (const auto& fifo : fifos_[ipu]) {
      if (!fifo_runs(fifo, step, tasks))
        continue;
      for (const auto kind : {StreamSpan::Kind::kStashRead, StreamSpan::Kind::kStashWrite})
        cursor = stream(ipu, fifo, kind, step, phase, cursor);
    }
    return cursor;
  }

  // The FIFOs of IPUs without tasks in this step still run in the slots after ramp-up.
  Cycles stream_idle_fifos(std::int64_t step, int phase, Cycles start) {
    static const std::vector<Task> no_tasks;
    Cycles end = start;
    for (const int ipu : fifo_ipus_) {
      if (stepped_[ipu] != step)
        end = std::max(end, stream_fifos(ipu, step, phase, start, no_tasks));
    }
    return end;
  }

  // At the link's bandwidth only: no fixed cost per copy is published (ipu-hardware.md §2 has
  // only the bandwidth's upper bound), so none is modelled.
  Cycles stream(int ipu, const OffloadedFifo& fifo, StreamSpan::Kind kind, std::int64_t step,
                int phase, Cycles start) {
    const auto& hw = spec_.hardware;
    const auto cycles =
        transfer_cycles(double(fifo.bytes), hw.streaming_memory_bandwidth, hw.clock_hz);
    busy_[ipu].streaming += cycles;
    busy_[ipu].streamed_bytes = core::checked_add(busy_[ipu].streamed_bytes, fifo.bytes, kBytes);
    const Cycles end = start + Cycles{cycles};
    if (observed()) {
      const StreamSpan span{kind, ipu, fifo.stage, step, phase, fifo.bytes, start, end};
      notify([&span](ReplayObserver& o) { o.on_stream(span); });
    }
    return end;
  }

  // All IPUs sync, then the step's copies cross the links at once; Grouped and Interleaved
  // copy in every slot of a stage even when its compute is masked (ramp-up, ramp-down).
  Cycles exchange(std::int64_t step, Cycles compute_end, std::vector<Task>& copies) {
    if (ipus_ <= 1)
      return compute_end;
    const auto& hw = spec_.hardware;
    const Cycles synced = compute_end + Cycles{hw.global_sync_cycles(ipus_)};
    notify_barrier(BarrierSpan::Kind::kSync, step, compute_end, synced);
    if (copy_slots_ != CopySlots::kAsScheduled)
      slot_copies(step, copies);
    Cycles end = synced;
    for (const auto& copy : copies) {
      const auto bytes = streams_.copy_bytes(copy);
      const auto use = links_.send(copy.ipu, copy.peer_ipu, bytes, synced);
      notify_transfer(copy, bytes, use);
      end = std::max(end, use.end);
    }
    if (copies.empty())
      return end;
    end += Cycles{hw.exchange_overhead_cycles};
    notify_barrier(BarrierSpan::Kind::kExchange, step, synced, end);
    return end;
  }

  void notify_barrier(BarrierSpan::Kind kind, std::int64_t step, Cycles start, Cycles end) const {
    const BarrierSpan span{kind, step, start, end};
    notify([&span](ReplayObserver& o) { o.on_barrier(span); });
  }

  // The copies of every stage slot in this step, masked or not.
  void slot_copies(std::int64_t step, std::vector<Task>& copies) const {
    copies.clear();
    const bool every_step = copy_slots_ == CopySlots::kEveryStep;
    for (int k = 0; k < int(cost_.stages.size()); ++k) {
      const bool forward_slot = every_step || (step - k) % 2 == 0;
      const bool backward_slot = every_step || (step - k) % 2 != 0;
      for (const auto& sub : cost_.stages[k]) {
        if (forward_slot)
          schedule_.append_boundary_copies(sub.ipu, k, schedules::CopyKind::kActivation, copies);
        if (backward_slot && spec_.pipeline.training)
          schedule_.append_boundary_copies(sub.ipu, k, schedules::CopyKind::kGradient, copies);
      }
    }
  }

  // ---- dependency-ordered (GPU-world schedules) ----
  struct IpuCursor {
    std::int64_t next = 0;
    bool busy = false;
    bool started = false;
    Cycles running_since{0};
    std::int64_t running_cycles = 0;
    std::int64_t running_index = -1;
    Task running;
    // The task at `next`, kept while it waits: computing it again on every wake is costly.
    std::int64_t waiting_index = -1;
    Task waiting;
  };

  enum EventKind : std::uint32_t { kComputeDone, kTransferDone, kWake };

  // Streams are created on first use (a copy route the cost model does not list).
  int stream(const Task& task) {
    const int id = streams_.id(task);
    if (id >= int(completed_.size())) {
      completed_.resize(std::max(id + 1, streams_.size()), 0);
      waiters_.resize(completed_.size());
    }
    return id;
  }

  void complete(const Task& task) {
    const int id = stream(task);
    IPUSIM_CHECK(completed_[id] == task.microbatch);  // streams complete in micro-batch order
    ++completed_[id];
    for (int ipu : waiters_[id])
      queue_.schedule({queue_.now(), EventPriority::kStart, kWake, ipu, 0});
    waiters_[id].clear();
  }

  Cycles run_ordered() {
    cursors_.assign(ipus_, {});
    host_links_.assign(ipus_, {});
    for (int ipu = 0; ipu < ipus_; ++ipu)
      last_compute_.push_back(last_compute_index(ipu));
    for (int ipu = 0; ipu < ipus_; ++ipu)
      queue_.schedule({Cycles{0}, EventPriority::kStart, kWake, ipu, 0});
    notify_phase(kRampUp, Cycles{0});
    auto handler = [this](const core::Event& event) { handle(event); };
    queue_.run(handler);
    for (int ipu = 0; ipu < ipus_; ++ipu) {
      if (cursors_[ipu].next < schedule_.program_length(ipu))
        report_deadlock();
    }
    const Cycles end = queue_.now();
    const Cycles up = std::min(ramp_up_end_, end);
    const Cycles down = std::max(up, std::min(ramp_down_begin_, end));
    phase_cycles_[kRampUp] = up.count;
    phase_cycles_[kMain] = (down - up).count;
    phase_cycles_[kRampDown] = (end - down).count;
    for (int ipu = 0; ipu < ipus_; ++ipu) {
      auto& b = busy_[ipu];
      b.in_phase[kRampUp] = b.before_up;
      b.in_phase[kMain] = b.before_down - b.before_up;
      b.in_phase[kRampDown] = b.total - b.before_down;
    }
    return end;
  }

  [[noreturn]] void report_deadlock() const {
    std::string stuck;
    for (int ipu = 0; ipu < ipus_; ++ipu) {
      if (cursors_[ipu].next >= schedule_.program_length(ipu))
        continue;
      stuck += " IPU" + std::to_string(ipu) + " waits to run " +
               schedules::to_string(schedule_.program_task(ipu, cursors_[ipu].next)) + ";";
    }
    throw core::InternalError("the schedule deadlocked:" + stuck);
  }

  void handle(const core::Event& event) {
    const int ipu = int(event.subject);
    if (event.kind == kTransferDone) {
      complete(pending_transfers_[event.detail]);
      free_transfers_.push_back(event.detail);
      return;
    }
    if (event.kind == kComputeDone)
      finish_compute(ipu);
    advance(ipu);
  }

  void finish_compute(int ipu) {
    auto& cursor = cursors_[ipu];
    cursor.busy = false;
    busy_[ipu].total += cursor.running_cycles;
    memory_.set_live(ipu, 0);
    release_stash(ipu, cursor.running);
    notify_memory(ipu, queue_.now());
    complete(cursor.running);
    if (cursor.running_index == last_compute_[ipu] && !first_finished_) {
      first_finished_ = true;
      ramp_down_begin_ = queue_.now();
      snapshot(&BusyTotals::before_down);
      notify_phase(kRampDown, ramp_down_begin_);
    }
  }

  // Programs end with a few copies at most, so this scans only their tails.
  std::int64_t last_compute_index(int ipu) const {
    for (auto i = schedule_.program_length(ipu) - 1; i >= 0; --i) {
      if (schedules::is_compute(schedule_.program_task(ipu, i).op))
        return i;
    }
    return -1;
  }

  void advance(int ipu) {
    auto& cursor = cursors_[ipu];
    if (cursor.busy)
      return;
    const auto length = schedule_.program_length(ipu);
    while (cursor.next < length) {
      if (cursor.waiting_index != cursor.next) {
        cursor.waiting = schedule_.program_task(ipu, cursor.next);
        cursor.waiting_index = cursor.next;
      }
      const Task task = cursor.waiting;
      if (!ready(task, ipu))
        return;
      ++cursor.next;
      ++task_count_;
      if (schedules::is_compute(task.op)) {
        start_compute(ipu, task);
        return;
      }
      start_transfer(ipu, task);
    }
  }

  bool ready(const Task& task, int ipu) {
    schedule_.dependencies(task, deps_, false);
    for (const auto& dep : deps_) {
      const int id = stream(dep);
      if (completed_[id] > dep.microbatch)
        continue;
      waiters_[id].push_back(ipu);
      return false;
    }
    return true;
  }

  void start_compute(int ipu, const Task& task) {
    auto& cursor = cursors_[ipu];
    const auto cycles = compute_cycles(task);
    cursor.busy = true;
    cursor.running = task;
    cursor.running_index = cursor.next - 1;
    cursor.running_since = queue_.now();
    cursor.running_cycles = cycles;
    if (!cursor.started)
      mark_started(ipu);
    const auto& sub = cost_.substage(task.stage, task.substage);
    if (task.op == Op::kForward && schedule_.stash_depth()[task.stage] > 0) {
      memory_.add_stash(ipu, sub.stash_bytes);
    }
    memory_.set_live(ipu, sub.live_bytes);
    check_memory(ipu, 0, queue_.now());
    notify_task(task, queue_.now(), cycles, phase_now(), sub.live_bytes);
    notify_memory(ipu, queue_.now());
    queue_.schedule(
        {queue_.now() + Cycles{cycles}, EventPriority::kComputeDone, kComputeDone, ipu, 0});
  }

  // A stash entry lives until the last task that reads it: W when the backward is split.
  void release_stash(int ipu, const Task& task) {
    const Op last_reader = schedule_.splits_weight_grad() ? Op::kWeightGrad : Op::kBackward;
    if (task.op != last_reader || schedule_.stash_depth()[task.stage] == 0)
      return;
    memory_.add_stash(ipu, -cost_.substage(task.stage, task.substage).stash_bytes);
  }

  void mark_started(int ipu) {
    cursors_[ipu].started = true;
    if (++started_ipus_ < ipus_)
      return;
    ramp_up_end_ = queue_.now();
    snapshot(&BusyTotals::before_up);
    notify_phase(kMain, ramp_up_end_);
  }

  // The phase of the dependency-ordered replay at this moment.
  int phase_now() const {
    if (first_finished_)
      return kRampDown;
    return started_ipus_ == ipus_ ? kMain : kRampUp;
  }

  struct BusyTotals {
    std::int64_t total = 0;
    std::array<std::int64_t, 4> in_phase{};
    std::int64_t host = 0;
    std::int64_t streaming = 0;  // cycles on the link to streaming memory
    std::int64_t streamed_bytes = 0;
    std::int64_t before_up = 0;
    std::int64_t before_down = 0;
  };

  // Busy cycles of every IPU up to now, counting the running part of tasks in progress.
  void snapshot(std::int64_t BusyTotals::*field) {
    for (int ipu = 0; ipu < ipus_; ++ipu) {
      const auto& cursor = cursors_[ipu];
      std::int64_t running = 0;
      if (cursor.busy)
        running = std::min(cursor.running_cycles, (queue_.now() - cursor.running_since).count);
      busy_[ipu].*field = busy_[ipu].total + running;
    }
  }

  void start_transfer(int ipu, const Task& task) {
    Cycles end = queue_.now();
    if (task.op == Op::kCopy) {
      const auto bytes = streams_.copy_bytes(task);
      const auto use = links_.send(task.ipu, task.peer_ipu, bytes, end);
      notify_transfer(task, bytes, use);
      end = use.end;
    } else if (task.op == Op::kInfeed || task.op == Op::kOutfeed) {
      const auto bytes = task.op == Op::kInfeed ? cost_.infeed_bytes : cost_.outfeed_bytes;
      const auto cycles = host_cycles(bytes);
      const auto held = host_links_[ipu].occupy(end, cycles);
      end = held.end;
      busy_[ipu].host += cycles;
      notify_task(task, held.begin, cycles, phase_now(), bytes);
    }
    std::int64_t slot;
    if (free_transfers_.empty()) {
      slot = std::int64_t(pending_transfers_.size());
      pending_transfers_.push_back(task);
    } else {
      slot = free_transfers_.back();
      free_transfers_.pop_back();
      pending_transfers_[slot] = task;
    }
    queue_.schedule({end, EventPriority::kTransferDone, kTransferDone, ipu, slot});
  }

  // ---- weight update ----
  Cycles run_weight_update(Cycles start) {
    if (!spec_.pipeline.training)
      return start;
    const auto& hw = spec_.hardware;
    const int replicas = spec_.pipeline.replication_factor;
    notify_phase(kWeightUpdate, start);
    std::int64_t longest = 0;
    for (int ipu = 0; ipu < ipus_; ++ipu) {
      WeightUpdateSpan span{ipu, start, start, start, start};
      if (replicas > 1)
        span.all_reduce_end += Cycles{all_reduce_cycles(cost_.gradient_bytes[ipu], replicas)};
      const auto offload = transfer_cycles(double(cost_.offload_bytes[ipu]),
                                           hw.streaming_memory_bandwidth, hw.clock_hz);
      span.offload_end = span.all_reduce_end + Cycles{offload};
      busy_[ipu].streaming += offload;
      busy_[ipu].streamed_bytes =
          core::checked_add(busy_[ipu].streamed_bytes, cost_.offload_bytes[ipu], kBytes);
      span.end = span.offload_end + Cycles{cost_.weight_update_cycles[ipu]};
      add_busy(ipu, cost_.weight_update_cycles[ipu], kWeightUpdate);
      notify([&span](ReplayObserver& o) { o.on_weight_update(span); });
      longest = std::max(longest, (span.end - start).count);
    }
    const std::int64_t sync = ipus_ > 1 ? hw.global_sync_cycles(ipus_ * replicas) : 0;
    phase_cycles_[kWeightUpdate] = longest + sync;
    return start + Cycles{longest + sync};
  }

  // A ring all-reduce over the rails joining the replicas: 2(R-1) steps of 1/R of the data.
  std::int64_t all_reduce_cycles(std::int64_t bytes, int replicas) const {
    const auto& hw = spec_.hardware;
    const double chunk = double(bytes) / replicas;
    const double bandwidth = hw.link_bandwidth * std::max(1, hw.links_up_down);
    return 2 * (replicas - 1) *
           (hw.link_latency_cycles + transfer_cycles(chunk, bandwidth, hw.clock_hz));
  }

  ReplayResult finish(Cycles end) {
    ReplayResult result;
    result.step_cycles = end.count;
    result.phase_cycles = phase_cycles_;
    result.ipus = memory_.stats();
    for (int ipu = 0; ipu < ipus_; ++ipu) {
      auto& stats = result.ipus[ipu];
      stats.physical = links_.physical()[ipu];
      stats.busy_cycles = busy_[ipu].total;
      stats.busy_in_phase = busy_[ipu].in_phase;
      stats.host_busy_cycles = busy_[ipu].host;
      stats.streaming_busy_cycles = busy_[ipu].streaming;
      stats.streaming_bytes = busy_[ipu].streamed_bytes;
    }
    result.links = links_.stats();
    result.tasks = task_count_;
    auto overflows = memory_.overflows();
    if (!overflows.empty()) {
      for (auto& overflow : overflows)
        overflow.physical = links_.physical()[overflow.ipu];
      result.out_of_memory = OutOfMemory{spec_.hardware.memory_per_ipu_bytes, overflows};
    }
    return result;
  }

  const RunSpec& spec_;
  const schedules::Schedule& schedule_;
  const CostModel& cost_;
  const ReplayOptions& options_;
  int ipus_;
  MemoryTracker memory_;
  Links links_;
  StreamIndex streams_;
  CopySlots copy_slots_;
  std::vector<std::vector<OffloadedFifo>> fifos_;  // per IPU
  std::vector<int> fifo_ipus_;         // the IPUs with offloaded FIFOs: most runs have none
  std::vector<std::int64_t> stepped_;  // per IPU: the last BSP step it ran tasks in
  std::vector<BusyTotals> busy_;
  std::array<std::int64_t, 4> phase_cycles_{};
  std::int64_t task_count_ = 0;
  // dependency-ordered state
  core::EventQueue queue_;
  std::vector<IpuCursor> cursors_;
  std::vector<std::int64_t> last_compute_;
  std::vector<std::int64_t> completed_;  // by stream: micro-batches done
  std::vector<std::vector<int>> waiters_;
  std::vector<Task> deps_;
  std::vector<Task> pending_transfers_;
  std::vector<std::int64_t> free_transfers_;
  std::vector<core::Resource> host_links_;
  int started_ipus_ = 0;
  bool first_finished_ = false;
  Cycles ramp_up_end_{0};
  Cycles ramp_down_begin_{0};
};

}  // namespace

namespace {

// "IPU2 (physical IPU3) needs 1.2 GB but has 941 MB at step 4 (cycle 1,234)".
std::string overflow_text(const IpuOverflow& overflow, std::int64_t capacity) {
  return "IPU" + std::to_string(overflow.ipu) + " (physical IPU" +
         std::to_string(overflow.physical) + ") needs " + si(double(overflow.bytes), "B") +
         " but has " + si(double(capacity), "B") +
         (overflow.step > 0 ? " at step " + std::to_string(overflow.step) : "") + " (cycle " +
         with_commas(overflow.cycle) + ")";
}

}  // namespace

std::string OutOfMemory::message() const {
  IPUSIM_CHECK(!ipus.empty());
  std::string text = "out of memory";
  if (ipus.size() > 1)
    text += " on " + std::to_string(ipus.size()) + " IPUs, the worst first";
  text += ": " + overflow_text(ipus.front(), capacity) + ". Largest consumers:";
  for (const auto& item : ipus.front().largest)
    text += "\n  " + si(double(item.bytes), "B") + "  " + item.name;
  for (std::size_t i = 1; i < ipus.size(); ++i)
    text += "\n" + overflow_text(ipus[i], capacity);
  return text;
}

ReplayResult replay(const RunSpec& spec, const schedules::Schedule& schedule, const CostModel& cost,
                    const ReplayOptions& options) {
  return Replayer(spec, schedule, cost, options).run();
}

}  // namespace ipusim::sim
