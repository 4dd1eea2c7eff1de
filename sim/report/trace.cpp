#include "sim/report/trace.hpp"

#include <algorithm>
#include <array>
#include <string_view>

#include "sim/core/error.hpp"
#include "sim/machine/collectives.hpp"
#include "sim/report/operations_report.hpp"

namespace ipusim::sim {
namespace {

// Process ids of the track groups; Perfetto shows them in the order of kGroupOrder.
enum TrackGroup { kIpus = 1, kLinks = 2, kHostLinks = 3, kBsp = 4, kMemory = 5, kStreaming = 6 };
constexpr std::array<TrackGroup, 6> kGroupOrder = {kIpus,      kLinks, kHostLinks,
                                                   kStreaming, kBsp,   kMemory};
constexpr int kSyncThread = 0;
constexpr int kPhaseThread = 1;

int group_rank(TrackGroup group) {
  return int(std::find(kGroupOrder.begin(), kGroupOrder.end(), group) - kGroupOrder.begin()) + 1;
}

std::string phase_name(schedules::Phase phase) {
  return std::string(schedules::to_string(phase));
}

// Where a flow binds to a slice: its middle, which the encoder works out from the span.
FlowPoint point_of(int pid, int tid, core::Cycles start, core::Cycles end) {
  return {{pid, tid}, start, end};
}

}  // namespace

TraceWriter::TraceWriter(const RunSpec& spec, TraceFormat format, core::ByteSink& sink)
    : spec_(spec),
      format_(format),
      sink_(sink),
      split_weight_grad_(spec.schedule->splits_weight_grad()),
      recorder_(TimelineOptions{0, TimelineOptions{}.memory_buckets}) {}

TraceWriter::~TraceWriter() = default;

void TraceWriter::on_begin(const ReplayLayout& layout) {
  IPUSIM_CHECK(!encoder_ && layout.cost != nullptr);
  recorder_.on_begin(layout);
  encoder_ = make_trace_encoder(format_, sink_, layout.clock_hz);
  cost_ = layout.cost;
  ipus_ = layout.ipus;
  physical_ = layout.physical;
  encoder_->process(kIpus, "IPUs", group_rank(kIpus));
  encoder_->process(kHostLinks, "Host links", group_rank(kHostLinks));
  encoder_->process(kBsp, "BSP", group_rank(kBsp));
  encoder_->process(kMemory, "Memory", group_rank(kMemory));
  for (int ipu = 0; ipu < ipus_; ++ipu) {
    const int physical = ipu < int(physical_.size()) ? physical_[ipu] : ipu;
    encoder_->thread(
        {kIpus, ipu},
        "IPU" + std::to_string(ipu) + " (physical IPU" + std::to_string(physical) + ")", ipu);
    encoder_->thread({kHostLinks, ipu}, "host link IPU" + std::to_string(ipu), ipu);
  }
  encoder_->thread({kBsp, kSyncThread}, "sync / exchange", kSyncThread);
  encoder_->thread({kBsp, kPhaseThread}, "phases", kPhaseThread);
  // JSON counters need a thread to sit on; protobuf counters are tracks of their own.
  if (format_ == TraceFormat::kJson)
    encoder_->thread({kMemory, 0}, "memory", 0);
  plan_links();
}

// The flows `span` ends (into `ends`) and starts (returned): a micro-batch's F or B on one stage
// flows to the same task on the next stage (forward) or the previous one (backward).
std::vector<std::uint64_t> TraceWriter::take_flows(const TaskSpan& span,
                                                   std::vector<std::uint64_t>& ends) {
  const auto& t = span.task;
  const bool forward = t.op == schedules::Op::kForward;
  if ((!forward && t.op != schedules::Op::kBackward) || t.substage != 0)
    return {};
  const FlowPoint here = point_of(kIpus, t.ipu, span.start, span.end);
  const FlowKey key{t.op, t.microbatch, t.stage};
  if (const auto found = open_flows_.find(key); found != open_flows_.end()) {
    const auto& flow = found->second;
    ends.push_back(flow.id);
    const std::string name = std::string(schedules::to_string(t.op)) + " micro-batch " +
                             std::to_string(t.microbatch + 1);
    std::vector<FlowPoint> points = {flow.from};
    if (flow.via_copy)
      points.push_back(flow.copy);
    points.push_back(here);
    encoder_->flow(flow.id, name, points);
    if (!flow.copy_seen) {
      auto& awaiting = awaiting_copy_[{
          forward ? schedules::CopyKind::kActivation : schedules::CopyKind::kGradient,
          t.stage + (forward ? -1 : 1)}];
      awaiting.erase(std::remove(awaiting.begin(), awaiting.end(), key), awaiting.end());
    }
    open_flows_.erase(found);
  }
  const int next = forward ? t.stage + 1 : t.stage - 1;
  if (next < 0 || next >= int(spec_.pipeline.stages.size()))
    return {};
  const FlowKey target{t.op, t.microbatch, next};
  const auto id = next_flow_id_++;
  open_flows_[target] = OpenFlow{id, t.microbatch, here, false, false, {}};
  awaiting_copy_[{forward ? schedules::CopyKind::kActivation : schedules::CopyKind::kGradient,
                  t.stage}]
      .push_back(target);
  return {id};
}

// A copy is the one an open flow passes through when it is the first of its stage's output
// after the flow's source ends (a BSP step's copies carry the whole step's tensors), and
// carries the flow's micro-batch or the step's.
std::vector<std::uint64_t> TraceWriter::pass_flows(const TransferSpan& span,
                                                   const FlowPoint& point) {
  std::vector<std::uint64_t> ids;
  const auto found = awaiting_copy_.find({span.task.copy, span.task.stage});
  if (found == awaiting_copy_.end())
    return ids;
  auto& awaiting = found->second;
  std::erase_if(awaiting, [&](const FlowKey& key) {
    auto& flow = open_flows_.at(key);
    if (flow.from.end > span.start)
      return false;
    flow.copy_seen = true;
    if (span.task.microbatch < 0 || span.task.microbatch == flow.microbatch) {
      flow.via_copy = true;
      flow.copy = point;
      ids.push_back(flow.id);
    }
    return true;
  });
  return ids;
}

void TraceWriter::on_task(const TaskSpan& span) {
  const auto& task = span.task;
  std::array<TraceArg, 7> args = {
      TraceArg::of("stage", task.stage), TraceArg::of("micro_batch", task.microbatch + 1),
      TraceArg::of("phase", schedules::to_string(span.phase)), TraceArg::of("flops", span.flops),
      TraceArg::of("bytes", span.bytes)};
  std::size_t count = 5;
  if (task.step >= 0)
    args[count++] = TraceArg::of("step", task.step + 1);
  if (!schedules::is_compute(task.op)) {
    encoder_->slice({kHostLinks, task.ipu}, span_label(task), "host", span.start, span.end,
                    std::span(args.data(), count));
    return;
  }
  args[count++] = TraceArg::of("substage", task.substage);
  std::vector<std::uint64_t> ends;
  const auto starts = take_flows(span, ends);
  encoder_->open_slice({kIpus, task.ipu}, span_label(task), "compute", span.start, span.end,
                       std::span(args.data(), count), SliceFlows{starts, ends});
  operations(span);
  encoder_->close_slice({kIpus, task.ipu}, span.end);
}

namespace {

// An operation's cycles inside a task of kind `op`.
std::int64_t operation_cycles(const OperationCost& cost, schedules::Op op, bool split_weight_grad) {
  switch (op) {
    case schedules::Op::kForward:
    case schedules::Op::kRecompute:
      return cost.forward.cycles;
    case schedules::Op::kWeightGrad:
      return cost.weight_gradient_cycles;
    case schedules::Op::kBackward:
      return cost.backward.cycles - (split_weight_grad ? cost.weight_gradient_cycles : 0);
    default:
      return 0;
  }
}

}  // namespace

// The operations of micro-batch 1's compute tasks, nested inside their slices: every
// micro-batch runs the same operations, and nesting them all would multiply the trace.
void TraceWriter::operations(const TaskSpan& span) {
  const auto& task = span.task;
  if (task.microbatch != 0)
    return;
  const auto& sub = cost_->substage(task.stage, task.substage);
  std::int64_t total = 0;
  for (const auto& op : sub.operations)
    total += operation_cycles(op, task.op, split_weight_grad_);
  if (total != (span.end - span.start).count)
    return;  // the task's slice holds more than its operations' compute
  core::Cycles at = span.start;
  for (const auto& op : sub.operations) {
    const auto cycles = operation_cycles(op, task.op, split_weight_grad_);
    if (cycles == 0)
      continue;
    const std::string op_class = operation_class_name(op);
    const std::array<TraceArg, 2> args = {TraceArg::of("layer", std::string_view(op.layer)),
                                          TraceArg::of("class", std::string_view(op_class))};
    encoder_->slice({kIpus, task.ipu}, op.layer + " " + op.name, "operation", at,
                    at + core::Cycles{cycles}, args);
    at = at + core::Cycles{cycles};
  }
}

int TraceWriter::link_track(int from_ipu, int to_ipu, int from_physical, int to_physical) {
  const auto [at, added] =
      links_.emplace(std::make_pair(from_physical, to_physical), int(links_.size()));
  if (added) {
    if (at->second == 0)
      encoder_->process(kLinks, "IPU-Links", group_rank(kLinks));
    encoder_->thread({kLinks, at->second},
                     "link IPU" + std::to_string(from_ipu) + "->IPU" + std::to_string(to_ipu) +
                         " (physical IPU" + std::to_string(from_physical) + "->IPU" +
                         std::to_string(to_physical) + ")",
                     at->second);
  }
  return at->second;
}

// Links are numbered before the first copy, in the pipeline's order, so that the tracks read
// top-down as the pipeline: the links that carry activations stage by stage, then those that
// carry gradients back from the last stage to the first. A link no stage boundary uses (a tied
// weight's) is numbered at its first copy.
void TraceWriter::plan_links() {
  const auto& schedule = *spec_.schedule;
  const int stages = schedule.layout().stages();
  std::vector<schedules::Task> copies;
  const auto add = [&](int stage, schedules::CopyKind kind) {
    for (const int ipu : schedule.layout().ipus_of(stage)) {
      copies.clear();
      schedule.append_boundary_copies(ipu, stage, kind, copies);
      for (const auto& copy : copies)
        link_track(copy.ipu, copy.peer_ipu, physical(copy.ipu), physical(copy.peer_ipu));
    }
  };
  for (int stage = 0; stage < stages; ++stage)
    add(stage, schedules::CopyKind::kActivation);
  if (!spec_.pipeline.training)
    return;
  for (int stage = stages - 1; stage >= 0; --stage)
    add(stage, schedules::CopyKind::kGradient);
}

void TraceWriter::on_transfer(const TransferSpan& span) {
  const int tid =
      link_track(span.task.ipu, span.task.peer_ipu, span.from_physical, span.to_physical);
  std::array<TraceArg, 5> args = {
      TraceArg::of("stage", span.task.stage), TraceArg::of("bytes", span.bytes),
      TraceArg::of("from_ipu", span.task.ipu), TraceArg::of("to_ipu", span.task.peer_ipu)};
  std::size_t count = 4;
  if (span.task.microbatch >= 0)
    args[count++] = TraceArg::of("micro_batch", span.task.microbatch + 1);
  const auto flows = pass_flows(span, point_of(kLinks, tid, span.start, span.end));
  encoder_->slice({kLinks, tid}, span_label(span.task), "link", span.start, span.end,
                  std::span(args.data(), count), SliceFlows{flows, {}});
}

void TraceWriter::use_streaming() {
  if (streaming_named_)
    return;
  streaming_named_ = true;
  encoder_->process(kStreaming, "Streaming memory", group_rank(kStreaming));
  for (int ipu = 0; ipu < ipus_; ++ipu)
    encoder_->thread({kStreaming, ipu}, "streaming memory IPU" + std::to_string(ipu), ipu);
}

// Stash FIFO traffic under offload_activations: "stash read s0" brings the oldest entry back,
// "stash write s0" sends the newest out.
void TraceWriter::on_stream(const StreamSpan& span) {
  use_streaming();
  const bool read = span.kind == StreamSpan::Kind::kStashRead;
  const std::array<TraceArg, 4> args = {
      TraceArg::of("stage", span.stage), TraceArg::of("bytes", span.bytes),
      TraceArg::of("step", span.step + 1), TraceArg::of("phase", schedules::to_string(span.phase))};
  encoder_->slice({kStreaming, span.ipu},
                  std::string(read ? "stash read s" : "stash write s") + std::to_string(span.stage),
                  "streaming", span.start, span.end, args);
}

void TraceWriter::on_barrier(const BarrierSpan& span) {
  const bool sync = span.kind == BarrierSpan::Kind::kSync;
  const std::array<TraceArg, 1> args = {TraceArg::of("step", span.step + 1)};
  encoder_->slice({kBsp, kSyncThread}, sync ? "sync" : "exchange", "bsp", span.start, span.end,
                  args);
}

void TraceWriter::on_phase(schedules::Phase phase, core::Cycles start) {
  recorder_.on_phase(phase, start);
}

void TraceWriter::on_memory(const MemorySample& sample) {
  recorder_.on_memory(sample);
}

void TraceWriter::on_weight_update(const WeightUpdateSpan& span) {
  weight_update_slices(span);
}

void TraceWriter::on_end(core::Cycles end) {
  recorder_.on_end(end);
}

void TraceWriter::weight_update_slices(const WeightUpdateSpan& span) {
  const std::array<std::tuple<std::string_view, core::Cycles, core::Cycles>, 5> parts = {
      {{kReduceScatter, span.start, span.reduce_scatter_end},
       {schedules::to_string(schedules::Op::kAllReduce), span.reduce_scatter_end,
        span.all_reduce_end},
       {"optimizer state stream", span.all_reduce_end, span.offload_end},
       {schedules::to_string(schedules::Op::kWeightUpdate), span.offload_end, span.update_end},
       {kAllGather, span.update_end, span.end}}};
  const std::array<TraceArg, 1> args = {
      TraceArg::of("phase", schedules::to_string(schedules::Phase::kWeightUpdate))};
  for (const auto& [name, start, end] : parts) {
    if (end > start) {
      encoder_->slice({kIpus, span.ipu}, name,
                      schedules::phase_key(schedules::Phase::kWeightUpdate), start, end, args);
    }
  }
  if (span.offload_end > span.all_reduce_end) {
    use_streaming();
    encoder_->slice({kStreaming, span.ipu}, "optimizer state stream", "streaming",
                    span.all_reduce_end, span.offload_end, args);
  }
}

// The first host's own track beside the host links: its input pipeline preparing the next
// step's samples while the IPUs compute, and the end of the step it owns: the host call and
// any wait for the input.
void TraceWriter::host(const RunReport& report) {
  if (!spec_.pipeline.training)
    return;
  const TrackRef track{kHostLinks, ipus_};
  encoder_->thread(track, "host 0: input pipeline and program", ipus_);
  const auto& input = report.cost->host_input;
  const std::array<TraceArg, 2> args = {TraceArg::of("bytes", input.bytes),
                                        TraceArg::of("replicas", input.replicas_per_instance)};
  if (input.cycles > 0)
    encoder_->slice(track, "prepare next step's input", "host", core::Cycles{0},
                    core::Cycles{input.cycles}, args);
  const auto& w = report.replay.weight_update;
  const core::Cycles end{report.replay.step_cycles};
  const core::Cycles waited = end - core::Cycles{w.input_wait};
  const core::Cycles call = waited - core::Cycles{w.host_call};
  if (w.host_call > 0)
    encoder_->slice(track, kHostCall, "host", call, waited, {});
  if (w.input_wait > 0)
    encoder_->slice(track, kInputWait, "host", waited, end, {});
}

// One slice per phase from its start to the next phase's, and a marker at each start.
void TraceWriter::phases() {
  const auto& timeline = recorder_.timeline();
  auto starts = timeline.phases;
  std::stable_sort(starts.begin(), starts.end(),
                   [](const PhaseStart& a, const PhaseStart& b) { return a.start < b.start; });
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const auto& phase = starts[i];
    const auto end = i + 1 < starts.size() ? starts[i + 1].start : timeline.end;
    const std::string name = phase_name(phase.phase);
    encoder_->marker({kBsp, kPhaseThread}, name, phase.start);
    if (end > phase.start)
      encoder_->slice({kBsp, kPhaseThread}, name, "phase", phase.start, end, {});
  }
}

void TraceWriter::memory() {
  const auto& timeline = recorder_.timeline();
  std::vector<std::pair<std::string, std::int64_t>> values;
  std::vector<std::pair<std::string_view, std::int64_t>> series;
  for (int ipu = 0; ipu < ipus_; ++ipu) {
    auto points = timeline.memory[ipu];
    if (points.empty() || points.front().at.count > 0)
      points.insert(points.begin(), MemoryPoint{});
    const std::string name = "IPU" + std::to_string(ipu) + " memory";
    for (const auto& point : points) {
      values.clear();
      for (const auto& [category, bytes] : timeline.memory_by_category(ipu, point))
        values.emplace_back(to_string(category), bytes);
      std::sort(values.begin(), values.end());  // the series by name, as before
      series.assign(values.begin(), values.end());
      encoder_->counter(kMemory, name, point.at, series);
    }
  }
}

void TraceWriter::finish(const RunReport& report) {
  IPUSIM_CHECK(encoder_ != nullptr);
  for (const auto& link : report.replay.links)
    link_track(link.from_ipu, link.to_ipu, link.from_physical, link.to_physical);
  host(report);
  phases();
  memory();
  TraceSummary summary;
  summary.config = spec_.config_path;
  summary.model = spec_.model.name;
  summary.schedule = report.schedule;
  summary.step_cycles = report.replay.step_cycles;
  summary.physical_ipus = physical_;
  summary.end = recorder_.timeline().end;
  summary.summary_track = {kBsp, kPhaseThread};
  encoder_->finish(summary);
}

}  // namespace ipusim::sim
