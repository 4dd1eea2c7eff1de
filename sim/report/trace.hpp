#pragma once
// The run as a trace for Perfetto (ui.perfetto.dev), written while the replay runs: Chrome
// trace-event JSON or Perfetto's protobuf trace (trace_encoder.hpp). IPUn is the logical IPU
// (device_mapping); names add the physical IPUs where selection_order places them. Tracks, as
// groups (processes) and tracks (threads):
//   "IPUs"        one per pipeline IPU ("IPU2 (physical IPU3)"): F/B/R/W tasks ("F3 s1"),
//                 micro-batch 1's operations nested in them, then the weight update
//   "IPU-Links"   one per directed link ("link IPU1->IPU2 (physical IPU1->IPU3)"), in the
//                 pipeline's order: activation/gradient copies
//   "Host links"  one per IPU ("host link IPU0"): infeed and outfeed; and the first host's
//                 input pipeline and program
//   "Streaming memory"  when used, one per IPU ("streaming memory IPU0"): stash FIFO reads and
//                 writes under offload_activations, the offloaded optimizer state
//   "BSP"         "sync / exchange" slices of every step, and a "phases" track with one slice
//                 per phase plus a marker where each phase begins
//   "Memory"      a counter per IPU with one series per on-chip memory category (bytes)
// Flow arrows follow each micro-batch from stage to stage through its copy.
//
// Every span is written when the replay reports it, so the file holds all of them however long
// the run, and memory holds only what is still open: flows waiting for their next stage, the
// tracks named so far and the memory counters' buckets (at most 4,096 a IPU, as the HTML
// report's). The events are in the replay's order, then the host track, the phases and the
// memory counters; the bytes are a function of the run, so the same config gives the same file.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/replay/timeline.hpp"
#include "sim/report/report.hpp"
#include "sim/report/trace_encoder.hpp"
#include "sim/spec/spec.hpp"

namespace ipusim::sim {

class TraceWriter : public ReplayObserver {
 public:
  // `spec` and `sink` must outlive the writer.
  TraceWriter(const RunSpec& spec, TraceFormat format, core::ByteSink& sink);
  ~TraceWriter() override;

  void on_begin(const ReplayLayout& layout) override;
  void on_task(const TaskSpan& span) override;
  void on_transfer(const TransferSpan& span) override;
  void on_stream(const StreamSpan& span) override;
  void on_barrier(const BarrierSpan& span) override;
  void on_phase(schedules::Phase phase, core::Cycles start) override;
  void on_memory(const MemorySample& sample) override;
  void on_weight_update(const WeightUpdateSpan& span) override;
  void on_end(core::Cycles end) override;

  // After the replay: what only the report knows (the host's track), the phases, the memory
  // counters and the summary; then the last bytes go to the sink.
  void finish(const RunReport& report);

 private:
  // A micro-batch's arrow from one stage's slice towards the next stage's, written when that
  // slice is reported.
  struct OpenFlow {
    std::uint64_t id = 0;
    std::int64_t microbatch = 0;
    FlowPoint from;
    bool copy_seen = false;  // the first copy after `from` was looked at
    bool via_copy = false;   // and it carries this micro-batch
    FlowPoint copy;
  };
  using FlowKey = std::tuple<schedules::Op, std::int64_t, int>;  // op, micro-batch, stage

  std::vector<std::uint64_t> take_flows(const TaskSpan& span, std::vector<std::uint64_t>& ends);
  std::vector<std::uint64_t> pass_flows(const TransferSpan& span, const FlowPoint& point);
  void operations(const TaskSpan& span);
  int link_track(int from_ipu, int to_ipu, int from_physical, int to_physical);
  void plan_links();
  int physical(int ipu) const { return ipu < int(physical_.size()) ? physical_[ipu] : ipu; }
  void use_streaming();
  void weight_update_slices(const WeightUpdateSpan& span);
  void host(const RunReport& report);
  void phases();
  void memory();

  const RunSpec& spec_;
  TraceFormat format_;
  core::ByteSink& sink_;
  std::unique_ptr<TraceEncoder> encoder_;
  const CostModel* cost_ = nullptr;
  int ipus_ = 0;
  std::vector<int> physical_;
  bool split_weight_grad_ = false;
  bool streaming_named_ = false;
  std::map<std::pair<int, int>, int> links_;  // physical (from, to) -> track
  std::map<FlowKey, OpenFlow> open_flows_;    // by the key of the slice they go to
  // Open flows whose copy is still to come, by what the copy carries from which stage.
  std::map<std::pair<schedules::CopyKind, int>, std::vector<FlowKey>> awaiting_copy_;
  std::uint64_t next_flow_id_ = 1;
  TimelineRecorder recorder_;  // keeps no spans: the phases and memory buckets only
};

// Throws core::ConfigError naming `path` when the trace of `spec` would not fit in `free_bytes`
// (the free space of its file system; negative when unknown, and then nothing is refused). The
// estimate is the replay's tasks times the bytes a task takes in `format`.
void refuse_oversized_trace(const RunSpec& spec, const std::string& path, const std::string& option,
                            TraceFormat format, std::int64_t free_bytes);

// The trace bytes `spec`'s replay is expected to write in `format`.
double estimated_trace_bytes(const RunSpec& spec, TraceFormat format);

}  // namespace ipusim::sim
