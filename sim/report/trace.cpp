#include "sim/report/trace.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>

#include "sim/machine/collectives.hpp"
#include "sim/report/operations_report.hpp"

namespace ipusim::sim {
namespace {

using nlohmann::json;

// Process ids of the track groups; Perfetto shows them in the order of kGroupOrder.
enum TrackGroup { kIpus = 1, kLinks = 2, kHostLinks = 3, kBsp = 4, kMemory = 5, kStreaming = 6 };
constexpr std::array<TrackGroup, 6> kGroupOrder = {kIpus,      kLinks, kHostLinks,
                                                   kStreaming, kBsp,   kMemory};
constexpr int kSyncThread = 0;
constexpr int kPhaseThread = 1;

// Builds the event list; every event carries name, ph, ts, pid and tid.
class TraceWriter {
 public:
  TraceWriter(const RunReport& report, const Timeline& timeline)
      : report_(report),
        timeline_(timeline),
        us_per_cycle_(1e6 / timeline.clock_hz()),
        split_weight_grad_(report.spec->schedule->splits_weight_grad()) {}

  json write() {
    metadata();
    tasks();
    weight_updates();
    host();
    transfers();
    streams();
    barriers();
    phases();
    memory();
    flows();
    json other = {{"generator", "ipusim"},
                  {"config", report_.spec->config_path},
                  {"model", report_.spec->model.name},
                  {"schedule", report_.schedule},
                  {"clock_hz", timeline_.clock_hz()},
                  {"step_cycles", report_.replay.step_cycles},
                  {"ipu_numbering",
                   "IPUn is the logical IPU (device_mapping); physical_ipus[n] is where "
                   "hardware.selection_order places it"},
                  {"physical_ipus", timeline_.layout.physical},
                  {"truncated", timeline_.truncated}};
    if (timeline_.truncated)
      other["truncation"] = timeline_.truncation_note();
    return {{"traceEvents", std::move(events_)},
            {"displayTimeUnit", display_time_unit()},
            {"otherData", other}};
  }

 private:
  double us(core::Cycles at) const { return double(at.count) * us_per_cycle_; }

  // The viewer's unit: nanoseconds for a step under a millisecond, milliseconds beyond (the
  // format allows only these two).
  const char* display_time_unit() const { return us(timeline_.end) >= 1000.0 ? "ms" : "ns"; }

  // Where a flow event binds to `span`'s slice: its middle, safely inside it.
  double middle(core::Cycles start, core::Cycles end) const { return (us(start) + us(end)) / 2; }

  void flow_point(const char* ph, std::int64_t id, const std::string& name, double ts, int pid,
                  int tid) {
    json e = {{"name", name}, {"cat", "flow"}, {"ph", ph},  {"id", id},
              {"ts", ts},     {"pid", pid},    {"tid", tid}};
    if (std::string_view(ph) != "s")
      e["bp"] = "e";
    events_.push_back(std::move(e));
  }

  // The copy of `stage`'s output (forward) or input gradient (backward) that carries `from`'s
  // tensor to `to`, or null.
  static const TransferSpan* copy_between(
      const std::map<std::pair<schedules::CopyKind, int>, std::vector<const TransferSpan*>>& copies,
      bool forward, int stage, const TaskSpan& from, const TaskSpan& to) {
    const auto kind = forward ? schedules::CopyKind::kActivation : schedules::CopyKind::kGradient;
    const auto found = copies.find({kind, stage});
    if (found == copies.end())
      return nullptr;
    const auto& spans = found->second;
    const auto first = std::lower_bound(
        spans.begin(), spans.end(), from.end,
        [](const TransferSpan* span, core::Cycles at) { return span->start < at; });
    if (first == spans.end() || (*first)->end > to.start)
      return nullptr;
    if ((*first)->task.microbatch >= 0 && (*first)->task.microbatch != from.task.microbatch)
      return nullptr;
    return *first;
  }

  // Each micro-batch's path through the pipeline as flow arrows: forward from F on stage k
  // through the copy to F on stage k+1, backward from B on stage k+1 through the copy to B on
  // stage k.
  void flows() {
    std::map<std::tuple<schedules::Op, std::int64_t, int>, const TaskSpan*> compute;
    for (const auto& span : timeline_.tasks) {
      const auto& t = span.task;
      if ((t.op == schedules::Op::kForward || t.op == schedules::Op::kBackward) && t.substage == 0)
        compute.emplace(std::make_tuple(t.op, t.microbatch, t.stage), &span);
    }
    // Copies by what they carry and from which stage, in time order. A BSP schedule's copies
    // carry a step's tensors, not one micro-batch's: a flow goes through the first copy after
    // its source that ends before its target starts.
    std::map<std::pair<schedules::CopyKind, int>, std::vector<const TransferSpan*>> copies;
    for (const auto& span : timeline_.transfers)
      copies[{span.task.copy, span.task.stage}].push_back(&span);
    for (auto& [key, spans] : copies)
      std::stable_sort(spans.begin(), spans.end(),
                       [](const auto* a, const auto* b) { return a->start < b->start; });
    std::int64_t id = 0;
    for (const auto& [key, from] : compute) {
      const auto [op, microbatch, stage] = key;
      const bool forward = op == schedules::Op::kForward;
      const auto to = compute.find({op, microbatch, forward ? stage + 1 : stage - 1});
      if (to == compute.end())
        continue;
      const std::string name =
          std::string(schedules::to_string(op)) + " micro-batch " + std::to_string(microbatch + 1);
      ++id;
      flow_point("s", id, name, middle(from->start, from->end), kIpus, from->task.ipu);
      const auto* copy = copy_between(copies, forward, stage, *from, *to->second);
      if (copy) {
        flow_point("t", id, name, middle(copy->start, copy->end), kLinks,
                   link_thread(copy->from_physical, copy->to_physical));
      }
      const auto& target = *to->second;
      flow_point("f", id, name, middle(target.start, target.end), kIpus, target.task.ipu);
    }
  }

  json event(const std::string& name, const char* ph, core::Cycles at, int pid, int tid) const {
    return {{"name", name}, {"ph", ph}, {"ts", us(at)}, {"pid", pid}, {"tid", tid}};
  }

  void slice(const std::string& name, std::string_view category, core::Cycles start,
             core::Cycles end, int pid, int tid, json args) {
    auto e = event(name, "X", start, pid, tid);
    e["cat"] = std::string(category);
    e["dur"] = us(end) - us(start);
    args["cycles"] = (end - start).count;
    e["args"] = std::move(args);
    events_.push_back(std::move(e));
  }

  void name_process(TrackGroup pid, const std::string& name) {
    auto e = event("process_name", "M", core::Cycles{0}, pid, 0);
    e["args"] = {{"name", name}};
    events_.push_back(std::move(e));
    auto order = event("process_sort_index", "M", core::Cycles{0}, pid, 0);
    const auto position = std::find(kGroupOrder.begin(), kGroupOrder.end(), pid);
    order["args"] = {{"sort_index", int(position - kGroupOrder.begin()) + 1}};
    events_.push_back(std::move(order));
  }

  void name_thread(int pid, int tid, const std::string& name) {
    auto e = event("thread_name", "M", core::Cycles{0}, pid, tid);
    e["args"] = {{"name", name}};
    events_.push_back(std::move(e));
    auto order = event("thread_sort_index", "M", core::Cycles{0}, pid, tid);
    order["args"] = {{"sort_index", tid}};
    events_.push_back(std::move(order));
  }

  // Directed links by logical IPUs; a link's thread id is its index. They are listed in the
  // order of the pipeline's path, so the tracks read top-down as the pipeline: the links that
  // carry activations by the stage that produced them, then those that carry gradients back
  // from the last stage to the first, then any other (a tied weight's), each by first use.
  void collect_links() {
    using Place = std::tuple<int, int, core::Cycles>;
    std::map<LinkName, Place> place;
    for (const auto& transfer : timeline_.transfers) {
      const auto& task = transfer.task;
      const int kind = task.copy == schedules::CopyKind::kActivation ? 0
                       : task.copy == schedules::CopyKind::kGradient ? 1
                                                                     : 2;
      const Place here{kind, kind == 1 ? -task.stage : task.stage, transfer.start};
      const LinkName name{task.ipu, task.peer_ipu, transfer.from_physical, transfer.to_physical};
      const auto [at, added] = place.emplace(name, here);
      if (!added)
        at->second = std::min(at->second, here);
    }
    // Links the recorded part of a truncated trace never used come last.
    const Place unused{3, 0, core::Cycles{0}};
    for (const auto& link : report_.replay.links)
      place.emplace(LinkName{link.from_ipu, link.to_ipu, link.from_physical, link.to_physical},
                    unused);
    std::vector<std::pair<Place, LinkName>> order;
    for (const auto& [name, at] : place)
      order.emplace_back(at, name);
    std::sort(order.begin(), order.end());
    links_.clear();
    for (const auto& [at, name] : order)
      links_.push_back(name);
  }

  int link_thread(int from_physical, int to_physical) const {
    const auto found = std::find_if(links_.begin(), links_.end(), [&](const LinkName& link) {
      return link.from_physical == from_physical && link.to_physical == to_physical;
    });
    return int(found - links_.begin());
  }

  void metadata() {
    const int ipus = timeline_.layout.ipus;
    name_process(kIpus, "IPUs");
    name_process(kHostLinks, "Host links");
    name_process(kBsp, "BSP");
    name_process(kMemory, "Memory");
    for (int ipu = 0; ipu < ipus; ++ipu) {
      name_thread(kIpus, ipu, ipu_name(ipu));
      name_thread(kHostLinks, ipu, "host link IPU" + std::to_string(ipu));
    }
    if (streams_memory()) {
      name_process(kStreaming, "Streaming memory");
      for (int ipu = 0; ipu < ipus; ++ipu)
        name_thread(kStreaming, ipu, "streaming memory IPU" + std::to_string(ipu));
    }
    name_thread(kBsp, kSyncThread, "sync / exchange");
    name_thread(kBsp, kPhaseThread, "phases");
    name_thread(kMemory, 0, "memory");
    collect_links();
    if (links_.empty())
      return;
    name_process(kLinks, "IPU-Links");
    for (std::size_t i = 0; i < links_.size(); ++i) {
      const auto& link = links_[i];
      name_thread(kLinks, int(i),
                  "link IPU" + std::to_string(link.from_ipu) + "->IPU" +
                      std::to_string(link.to_ipu) + " (physical IPU" +
                      std::to_string(link.from_physical) + "->IPU" +
                      std::to_string(link.to_physical) + ")");
    }
  }

  // "IPU2 (physical IPU3)": logical, then where selection_order places it.
  std::string ipu_name(int ipu) const {
    const auto& physical = timeline_.layout.physical;
    return "IPU" + std::to_string(ipu) + " (physical IPU" +
           std::to_string(ipu < int(physical.size()) ? physical[ipu] : ipu) + ")";
  }

  // Whether any IPU streams to or from streaming memory during the step.
  bool streams_memory() const {
    if (!timeline_.streams.empty())
      return true;
    return std::any_of(
        timeline_.weight_updates.begin(), timeline_.weight_updates.end(),
        [](const WeightUpdateSpan& span) { return span.offload_end > span.all_reduce_end; });
  }

  // An operation's cycles inside a task of kind `op`.
  std::int64_t operation_cycles(const OperationCost& cost, schedules::Op op) const {
    switch (op) {
      case schedules::Op::kForward:
      case schedules::Op::kRecompute:
        return cost.forward.cycles;
      case schedules::Op::kWeightGrad:
        return cost.weight_gradient_cycles;
      case schedules::Op::kBackward:
        return cost.backward.cycles - (split_weight_grad_ ? cost.weight_gradient_cycles : 0);
      default:
        return 0;
    }
  }

  // The operations of micro-batch 1's compute tasks, nested inside their slices: every
  // micro-batch runs the same operations, and nesting them all would multiply the trace.
  void operations(const TaskSpan& span) {
    const auto& task = span.task;
    if (task.microbatch != 0)
      return;
    const auto& sub = report_.cost->substage(task.stage, task.substage);
    std::int64_t total = 0;
    for (const auto& op : sub.operations)
      total += operation_cycles(op, task.op);
    if (total != (span.end - span.start).count)
      return;  // the task's slice holds more than its operations' compute
    core::Cycles at = span.start;
    for (const auto& op : sub.operations) {
      const auto cycles = operation_cycles(op, task.op);
      if (cycles == 0)
        continue;
      json args = {{"layer", op.layer}, {"class", operation_class_name(op)}};
      slice(op.layer + " " + op.name, "operation", at, at + core::Cycles{cycles}, kIpus, task.ipu,
            std::move(args));
      at = at + core::Cycles{cycles};
    }
  }

  void tasks() {
    for (const auto& span : timeline_.tasks) {
      const auto& task = span.task;
      json args = {{"stage", task.stage},
                   {"micro_batch", task.microbatch + 1},
                   {"phase", std::string(schedules::to_string(span.phase))},
                   {"flops", span.flops},
                   {"bytes", span.bytes}};
      if (task.step >= 0)
        args["step"] = task.step + 1;
      if (schedules::is_compute(task.op)) {
        args["substage"] = task.substage;
        slice(span_label(task), "compute", span.start, span.end, kIpus, task.ipu, std::move(args));
        operations(span);
      } else {
        slice(span_label(task), "host", span.start, span.end, kHostLinks, task.ipu,
              std::move(args));
      }
    }
  }

  void weight_updates() {
    for (const auto& span : timeline_.weight_updates) {
      const std::array<std::tuple<std::string_view, core::Cycles, core::Cycles>, 5> parts = {
          {{kReduceScatter, span.start, span.reduce_scatter_end},
           {schedules::to_string(schedules::Op::kAllReduce), span.reduce_scatter_end,
            span.all_reduce_end},
           {"optimizer state stream", span.all_reduce_end, span.offload_end},
           {schedules::to_string(schedules::Op::kWeightUpdate), span.offload_end, span.update_end},
           {kAllGather, span.update_end, span.end}}};
      for (const auto& [name, start, end] : parts) {
        if (end > start) {
          slice(std::string(name), schedules::phase_key(schedules::Phase::kWeightUpdate), start,
                end, kIpus, span.ipu,
                {{"phase", std::string(schedules::to_string(schedules::Phase::kWeightUpdate))}});
        }
      }
      if (span.offload_end > span.all_reduce_end) {
        slice("optimizer state stream", "streaming", span.all_reduce_end, span.offload_end,
              kStreaming, span.ipu,
              {{"phase", std::string(schedules::to_string(schedules::Phase::kWeightUpdate))}});
      }
    }
  }

  // The first host's own track beside the host links: its input pipeline preparing the next
  // step's samples while the IPUs compute, and the end of the step it owns: the host call and
  // any wait for the input.
  void host() {
    if (!report_.spec->pipeline.training)
      return;
    const int tid = timeline_.layout.ipus;
    name_thread(kHostLinks, tid, "host 0: input pipeline and program");
    const auto& input = report_.cost->host_input;
    const json args = {{"bytes", input.bytes}, {"replicas", input.replicas_per_instance}};
    if (input.cycles > 0)
      slice("prepare next step's input", "host", core::Cycles{0}, core::Cycles{input.cycles},
            kHostLinks, tid, args);
    const auto& w = report_.replay.weight_update;
    const core::Cycles end{report_.replay.step_cycles};
    const core::Cycles waited = end - core::Cycles{w.input_wait};
    const core::Cycles call = waited - core::Cycles{w.host_call};
    if (w.host_call > 0)
      slice(std::string(kHostCall), "host", call, waited, kHostLinks, tid, {});
    if (w.input_wait > 0)
      slice(std::string(kInputWait), "host", waited, end, kHostLinks, tid, {});
  }

  // Stash FIFO traffic under offload_activations: "stash read s0" brings the oldest entry
  // back, "stash write s0" sends the newest out.
  void streams() {
    for (const auto& span : timeline_.streams) {
      const bool read = span.kind == StreamSpan::Kind::kStashRead;
      slice(std::string(read ? "stash read s" : "stash write s") + std::to_string(span.stage),
            "streaming", span.start, span.end, kStreaming, span.ipu,
            {{"stage", span.stage},
             {"bytes", span.bytes},
             {"step", span.step + 1},
             {"phase", std::string(schedules::to_string(span.phase))}});
    }
  }

  void transfers() {
    for (const auto& span : timeline_.transfers) {
      json args = {{"stage", span.task.stage},
                   {"bytes", span.bytes},
                   {"from_ipu", span.task.ipu},
                   {"to_ipu", span.task.peer_ipu}};
      if (span.task.microbatch >= 0)
        args["micro_batch"] = span.task.microbatch + 1;
      slice(span_label(span.task), "link", span.start, span.end, kLinks,
            link_thread(span.from_physical, span.to_physical), std::move(args));
    }
  }

  void barriers() {
    for (const auto& span : timeline_.barriers) {
      const bool sync = span.kind == BarrierSpan::Kind::kSync;
      slice(sync ? "sync" : "exchange", "bsp", span.start, span.end, kBsp, kSyncThread,
            {{"step", span.step + 1}});
    }
  }

  // One slice per phase from its start to the next phase's, and a global marker at each start.
  void phases() {
    auto starts = timeline_.phases;
    std::stable_sort(starts.begin(), starts.end(),
                     [](const PhaseStart& a, const PhaseStart& b) { return a.start < b.start; });
    for (std::size_t i = 0; i < starts.size(); ++i) {
      const auto& phase = starts[i];
      const auto end = i + 1 < starts.size() ? starts[i + 1].start : timeline_.end;
      const std::string name = std::string(schedules::to_string(phase.phase));
      auto marker = event(name, "i", phase.start, kBsp, kPhaseThread);
      marker["s"] = "g";
      events_.push_back(std::move(marker));
      if (end > phase.start)
        slice(name, "phase", phase.start, end, kBsp, kPhaseThread, json::object());
    }
    if (timeline_.truncated) {
      auto marker = event("truncated: " + timeline_.truncation_note(), "i",
                          timeline_.recorded_until, kBsp, kPhaseThread);
      marker["s"] = "g";
      events_.push_back(std::move(marker));
    }
  }

  void memory() {
    for (int ipu = 0; ipu < timeline_.layout.ipus; ++ipu) {
      auto points = timeline_.memory[ipu];
      if (points.empty() || points.front().at.count > 0)
        points.insert(points.begin(), MemoryPoint{});
      for (const auto& point : points) {
        auto e = event("IPU" + std::to_string(ipu) + " memory", "C", point.at, kMemory, 0);
        json args = json::object();
        for (const auto& [category, bytes] : timeline_.memory_by_category(ipu, point))
          args[std::string(to_string(category))] = bytes;
        e["args"] = std::move(args);
        events_.push_back(std::move(e));
      }
    }
  }

  const RunReport& report_;
  const Timeline& timeline_;
  double us_per_cycle_;
  bool split_weight_grad_;
  struct LinkName {
    int from_ipu = 0;
    int to_ipu = 0;
    int from_physical = 0;
    int to_physical = 0;
    friend auto operator<=>(const LinkName&, const LinkName&) = default;
  };
  std::vector<LinkName> links_;
  json events_ = json::array();
};

}  // namespace

nlohmann::json chrome_trace(const RunReport& report, const Timeline& timeline) {
  return TraceWriter(report, timeline).write();
}

}  // namespace ipusim::sim
