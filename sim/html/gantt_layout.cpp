#include "sim/html/gantt_layout.hpp"

#include <array>
#include <map>
#include <set>
#include <tuple>

#include "schedules/step_schedule.hpp"
#include "sim/core/format.hpp"
#include "sim/machine/collectives.hpp"

namespace ipusim::sim::gantt {
namespace {

Kind compute_kind(schedules::Op op) {
  switch (op) {
    case schedules::Op::kBackward:
      return Kind::kBackward;
    case schedules::Op::kRecompute:
      return Kind::kRecompute;
    case schedules::Op::kWeightGrad:
      return Kind::kWeightGrad;
    default:
      return Kind::kForward;
  }
}

std::string cycles_text(std::int64_t start, std::int64_t end) {
  return "cycles " + with_commas(start) + " \u2013 " + with_commas(end) + " (" +
         with_commas(end - start) + ")";
}

// The rows of one run, in drawing order.
class RowBuilder {
 public:
  RowBuilder(const Timeline& timeline, bool links_and_host)
      : timeline_(timeline), links_and_host_(links_and_host) {}

  std::vector<Row> build() {
    const int ipus = timeline_.layout.ipus;
    rows_.clear();
    for (int ipu = 0; ipu < ipus; ++ipu)
      rows_.push_back({"IPU" + std::to_string(ipu), kIpuRow, {}});
    add_tasks();
    add_weight_updates();
    if (!timeline_.barriers.empty())
      add_barriers();
    if (links_and_host_) {
      add_links();
      add_host_links();
      add_streaming();
    }
    return std::move(rows_);
  }

 private:
  void add_tasks() {
    for (const auto& span : timeline_.tasks) {
      if (!schedules::is_compute(span.task.op))
        continue;
      const auto& task = span.task;
      const std::string m = std::to_string(task.microbatch + 1);
      const std::string letter(1, schedules::op_letter(task.op));
      rows_[task.ipu].spans.push_back(
          {span.start.count, span.end.count, compute_kind(task.op), letter + m, m,
           span_label(task) + " on IPU" + std::to_string(task.ipu) + " \u00b7 " +
               cycles_text(span.start.count, span.end.count)});
    }
  }

  void add_weight_updates() {
    for (const auto& span : timeline_.weight_updates) {
      using schedules::Op;
      // The collectives share the all-reduce's colour; their labels tell them apart.
      const std::array<std::tuple<Kind, core::Cycles, core::Cycles, std::string_view, const char*>,
                       5>
          parts = {{{Kind::kAllReduce, span.start, span.reduce_scatter_end, kReduceScatter, "RS"},
                    {Kind::kAllReduce, span.reduce_scatter_end, span.all_reduce_end,
                     schedules::to_string(Op::kAllReduce), "AR"},
                    {Kind::kStateStream, span.all_reduce_end, span.offload_end,
                     std::string_view("optimizer state"), "opt"},
                    {Kind::kWeightUpdate, span.offload_end, span.update_end,
                     schedules::to_string(Op::kWeightUpdate), "WU"},
                    {Kind::kAllReduce, span.update_end, span.end, kAllGather, "AG"}}};
      for (const auto& [kind, start, end, label, short_label] : parts) {
        if (end <= start)
          continue;
        rows_[span.ipu].spans.push_back({start.count, end.count, kind, std::string(label),
                                         short_label,
                                         std::string(label) + " on IPU" + std::to_string(span.ipu) +
                                             " \u00b7 " + cycles_text(start.count, end.count)});
      }
    }
  }

  void add_barriers() {
    Row row{"sync / exchange", kThinRow, {}};
    for (const auto& span : timeline_.barriers) {
      const bool sync = span.kind == BarrierSpan::Kind::kSync;
      row.spans.push_back({span.start.count, span.end.count, sync ? Kind::kSync : Kind::kExchange,
                           "", "",
                           std::string(sync ? "sync" : "exchange") + " after step " +
                               std::to_string(span.step + 1) + " \u00b7 " +
                               cycles_text(span.start.count, span.end.count)});
    }
    rows_.push_back(std::move(row));
  }

  // One row per directed link, named by logical IPUs; the tooltips give the physical ones.
  void add_links() {
    std::set<std::pair<int, int>> links;
    for (const auto& span : timeline_.transfers)
      links.insert({span.task.ipu, span.task.peer_ipu});
    for (const auto& [from, to] : links) {
      Row row{"IPU" + std::to_string(from) + " \u2192 IPU" + std::to_string(to), kThinRow, {}};
      for (const auto& span : timeline_.transfers) {
        if (span.task.ipu != from || span.task.peer_ipu != to)
          continue;
        const bool gradient = span.task.copy == schedules::CopyKind::kGradient;
        row.spans.push_back({span.start.count, span.end.count,
                             gradient ? Kind::kGradient : Kind::kActivation, "", "",
                             span_label(span.task) + " \u00b7 " + si(double(span.bytes), "B") +
                                 " \u00b7 physical IPU" + std::to_string(span.from_physical) +
                                 " \u2192 IPU" + std::to_string(span.to_physical) + " \u00b7 " +
                                 cycles_text(span.start.count, span.end.count)});
      }
      rows_.push_back(std::move(row));
    }
  }

  // Each IPU's link to streaming memory: offloaded stash FIFOs and optimizer state.
  void add_streaming() {
    const int ipus = timeline_.layout.ipus;
    std::vector<Row> rows(ipus);
    for (int ipu = 0; ipu < ipus; ++ipu)
      rows[ipu] = {"IPU" + std::to_string(ipu) + " \u2194 streaming", kThinRow, {}};
    for (const auto& span : timeline_.streams) {
      const bool read = span.kind == StreamSpan::Kind::kStashRead;
      rows[span.ipu].spans.push_back({span.start.count, span.end.count, Kind::kStashStream, "", "",
                                      std::string(read ? "stash read s" : "stash write s") +
                                          std::to_string(span.stage) + " \u00b7 " +
                                          si(double(span.bytes), "B") + " \u00b7 " +
                                          cycles_text(span.start.count, span.end.count)});
    }
    for (const auto& span : timeline_.weight_updates) {
      if (span.offload_end <= span.all_reduce_end)
        continue;
      rows[span.ipu].spans.push_back(
          {span.all_reduce_end.count, span.offload_end.count, Kind::kStateStream, "", "",
           "optimizer state stream \u00b7 " +
               cycles_text(span.all_reduce_end.count, span.offload_end.count)});
    }
    for (auto& row : rows) {
      if (!row.spans.empty())
        rows_.push_back(std::move(row));
    }
  }

  void add_host_links() {
    const int ipus = timeline_.layout.ipus;
    std::vector<Row> host(ipus);
    bool any = false;
    for (int ipu = 0; ipu < ipus; ++ipu)
      host[ipu] = {"host \u2194 IPU" + std::to_string(ipu), kThinRow, {}};
    for (const auto& span : timeline_.tasks) {
      if (schedules::is_compute(span.task.op))
        continue;
      any = true;
      const bool in = span.task.op == schedules::Op::kInfeed;
      host[span.task.ipu].spans.push_back(
          {span.start.count, span.end.count, in ? Kind::kInfeed : Kind::kOutfeed, "", "",
           span_label(span.task) + " \u00b7 " + si(double(span.bytes), "B") + " \u00b7 " +
               cycles_text(span.start.count, span.end.count)});
    }
    if (!any)
      return;
    for (auto& row : host) {
      if (!row.spans.empty())
        rows_.push_back(std::move(row));
    }
  }

  const Timeline& timeline_;
  bool links_and_host_;
  std::vector<Row> rows_;
};

std::int64_t view_end(const Timeline& timeline) {
  return timeline.truncated ? timeline.recorded_until.count : timeline.end.count;
}

std::vector<PhaseBand> time_bands(const Timeline& timeline) {
  auto starts = timeline.phases;
  std::stable_sort(starts.begin(), starts.end(),
                   [](const PhaseStart& a, const PhaseStart& b) { return a.start < b.start; });
  std::vector<PhaseBand> bands;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const auto next = i + 1 < starts.size() ? starts[i + 1].start : timeline.end;
    bands.push_back({starts[i].phase, starts[i].start.count, next.count});
  }
  return bands;
}

}  // namespace

// A column's time per kind as shares of the column, scaled down when boxes overlap in it.
Bin normalised(const Bin& bin) {
  double total = 0;
  for (const double share : bin)
    total += share;
  Bin out = bin;
  if (total > 1) {
    for (double& share : out)
      share /= total;
  }
  return out;
}

// The column's shares in kLevels height steps; work, however little, keeps the lowest level.
Levels levels_of(const Bin& bin) {
  const Bin shares = normalised(bin);
  Levels levels{};
  for (int k = 0; k < kKinds; ++k)
    levels[k] = bin[k] > 0 ? std::max(1, int(std::lround(shares[k] * kLevels))) : 0;
  return levels;
}

// The kinds of work present in a column, as bits.
unsigned kinds_of(const Bin& bin) {
  unsigned kinds = 0;
  for (int k = 0; k < kKinds; ++k)
    kinds |= bin[k] > 0 ? 1u << k : 0u;
  return kinds;
}

RunView time_view(const GanttRun& run, bool links_and_host) {
  const Timeline& timeline = *run.timeline;
  return {run.label,
          RowBuilder(timeline, links_and_host).build(),
          time_bands(timeline),
          0,
          view_end(timeline),
          timeline.clock_hz(),
          timeline.truncated};
}

RunView step_view(const GanttRun& run) {
  const Timeline& timeline = *run.timeline;
  const auto& schedule = *run.report->spec->schedule;
  const std::int64_t steps = timeline.recorded_steps;
  RunView view{run.label, {}, {}, 0, steps * kSlot, 1, timeline.truncated, steps};
  for (int ipu = 0; ipu < timeline.layout.ipus; ++ipu)
    view.rows.push_back({"IPU" + std::to_string(ipu), kIpuRow, {}});
  std::map<std::pair<int, std::int64_t>, std::vector<const TaskSpan*>> cells;
  for (const auto& span : timeline.tasks) {
    if (schedules::is_compute(span.task.op) && span.task.step < steps)
      cells[{span.task.ipu, span.task.step}].push_back(&span);
  }
  for (const auto& [key, spans] : cells) {
    const auto width = kSlot / std::int64_t(spans.size());
    for (std::size_t i = 0; i < spans.size(); ++i) {
      const auto& task = spans[i]->task;
      const std::string m = std::to_string(task.microbatch + 1);
      const std::int64_t from = key.second * kSlot + std::int64_t(i) * width;
      view.rows[key.first].spans.push_back(
          {from, from + width, compute_kind(task.op), schedules::op_letter(task.op) + m, m,
           span_label(task) + " on IPU" + std::to_string(task.ipu) + " in step " +
               std::to_string(task.step + 1) + " \u00b7 " +
               cycles_text(spans[i]->start.count, spans[i]->end.count)});
    }
  }
  for (std::int64_t step = 0; step < steps; ++step) {
    const auto phase = schedule.as_steps()->step_phase(step);
    if (view.bands.empty() || view.bands.back().phase != phase)
      view.bands.push_back({phase, step * kSlot, step * kSlot});
    view.bands.back().to = (step + 1) * kSlot;
  }
  if (!timeline.truncated && !timeline.weight_updates.empty()) {
    const std::int64_t from = view.end;
    view.end += kSlot;
    view.bands.push_back({schedules::Phase::kWeightUpdate, from, view.end});
    for (const auto& span : timeline.weight_updates) {
      view.rows[span.ipu].spans.push_back({from, view.end, Kind::kWeightUpdate, "WU", "",
                                           "weight update on IPU" + std::to_string(span.ipu) +
                                               " \u00b7 " +
                                               cycles_text(span.start.count, span.end.count)});
    }
  }
  return view;
}

}  // namespace ipusim::sim::gantt
