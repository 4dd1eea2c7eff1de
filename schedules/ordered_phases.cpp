// The utilisation phases of the dependency-ordered schedules: a unit-time simulation of a few
// micro-batches, extrapolated to M (see the top of ordered_schedule.hpp).

#include <algorithm>

#include "schedules/ordered_schedule.hpp"
#include "sim/core/error.hpp"

namespace ipusim::schedules {

// The unit-time simulation behind the utilisation phases, for a small M (see place_phases).
// Each IPU runs its units in order; a unit starts when its IPU is free and its cross-IPU input
// is ready (F_k(m) waits for F_{k-1}(m), B_k(m) for B_{k+1}(m)). Finish times of the
// micro-batches in flight live in a short ring per stage and direction: a producer that would
// overwrite an entry its consumers have not read yet waits for them, which only changes the
// order of evaluation, never the simulated times. Every stage runs its micro-batches in order,
// so no unit waits, even through others, for a later micro-batch of its own input, and this
// cannot stall however short the rings.
class OrderedSchedule::Simulation {
 public:
  explicit Simulation(OrderedSchedule& schedule) : schedule_(schedule) {}

  // First pass: when the phases change. Second pass: which units fall in which phase.
  void run() {
    simulate(false);
    std::int64_t ramp_up_end = 0;
    std::int64_t ramp_down_begin = -1;
    std::int64_t makespan = 0;
    for (const IpuState& ipu : ipus_) {
      if (ipu.units == 0)
        continue;
      ramp_up_end = std::max(ramp_up_end, ipu.first_start);
      ramp_down_begin =
          ramp_down_begin < 0 ? ipu.last_finish : std::min(ramp_down_begin, ipu.last_finish);
      makespan = std::max(makespan, ipu.last_finish);
    }
    PhaseCounts& counts = schedule_.counts_;
    counts.makespan = makespan;
    counts.ramp_up_end = ramp_up_end;
    counts.ramp_down_begin = std::max(ramp_up_end, ramp_down_begin);
    simulate(true);
  }

 private:
  static constexpr std::size_t kRingSize = 16;  // a power of two

  // What one stage sent one way for the micro-batch that holds a ring slot.
  struct Entry {
    std::int64_t microbatch = -1;
    std::int64_t finish = 0;  // latest over the producer's sub-stages
    int written = 0;          // producer sub-stages done
    int unread = 0;           // consumer sub-stages still to read it
  };

  struct IpuState {
    Cursor cursor;
    std::int64_t units = 0;
    std::int64_t done = 0;
    std::int64_t free = 0;
    std::int64_t first_start = 0;
    std::int64_t last_finish = 0;
  };

  Entry& entry(Unit unit, int stage, std::int64_t m) {
    std::vector<Entry>& rings = unit == kF ? forward_ : backward_;
    return rings[static_cast<std::size_t>(stage) * kRingSize +
                 (static_cast<std::size_t>(m) & (kRingSize - 1))];
  }

  void reset() {
    const auto entries = static_cast<std::size_t>(schedule_.layout().stages()) * kRingSize;
    forward_.assign(entries, Entry{});
    backward_.assign(entries, Entry{});
    ipus_.assign(schedule_.programs_.size(), IpuState{});
    for (std::size_t ipu = 0; ipu < ipus_.size(); ++ipu)
      ipus_[ipu].units = schedule_.programs_[ipu].units;
  }

  void simulate(bool mark) {
    reset();
    std::int64_t remaining = 0;
    for (const IpuState& ipu : ipus_)
      remaining += ipu.units;
    // Bursts keep every IPU close to the others, so the rings stay short.
    constexpr int kBurst = 32;
    while (remaining > 0) {
      bool progress = false;
      for (std::size_t ipu = 0; ipu < ipus_.size(); ++ipu) {
        for (int burst = 0; burst < kBurst && ipus_[ipu].done < ipus_[ipu].units; ++burst) {
          if (!step(static_cast<int>(ipu), mark))
            break;
          progress = true;
          --remaining;
        }
      }
      IPUSIM_CHECK(progress);
    }
  }

  // Runs the next unit of `ipu` if its input is ready and its output has room.
  bool step(int ipu, bool mark) {
    IpuState& state = ipus_[ipu];
    const Program& program = schedule_.programs_[ipu];
    const Segment& segment = program.segments[state.cursor.segment];
    const Unit unit = segment.units[state.cursor.position];
    const std::int64_t index = segment.first[unit] + state.cursor.rep;
    const int stage = program.chunk_stages[schedule_.chunk_of(unit, index)];
    const std::int64_t m = schedule_.microbatch_of(index);
    const int last = schedule_.layout().stages() - 1;

    // F_k(m) reads F_{k-1}(m) and feeds F_{k+1}(m); B_k(m) reads B_{k+1}(m), feeds B_{k-1}(m).
    const int direction = unit == kF ? -1 : 1;
    const int producer = stage + direction;
    const int consumer = stage - direction;
    Entry* input =
        unit != kW && producer >= 0 && producer <= last ? &entry(unit, producer, m) : nullptr;
    Entry* output =
        unit != kW && consumer >= 0 && consumer <= last ? &entry(unit, stage, m) : nullptr;
    std::int64_t ready = 0;
    if (input != nullptr) {
      const int subs = static_cast<int>(schedule_.layout().ipus_of(producer).size());
      if (input->microbatch != m || input->written != subs)
        return false;
      ready = input->finish;
    }
    if (output != nullptr && output->microbatch != m && output->unread > 0)
      return false;

    const std::int64_t start = std::max(state.free, ready);
    const std::int64_t finish = start + schedule_.unit_cost(unit);
    if (input != nullptr)
      --input->unread;
    if (output != nullptr)
      publish(*output, m, finish, consumer);
    if (mark)
      count(ipu, unit, start);
    else if (state.done == 0)
      state.first_start = start;
    state.last_finish = finish;
    state.free = finish;
    ++state.done;
    advance(program, state.cursor);
    return true;
  }

  void publish(Entry& output, std::int64_t m, std::int64_t finish, int consumer) const {
    if (output.microbatch != m) {
      output.microbatch = m;
      output.finish = finish;
      output.written = 1;
      output.unread = static_cast<int>(schedule_.layout().ipus_of(consumer).size());
      return;
    }
    output.finish = std::max(output.finish, finish);
    ++output.written;
  }

  void count(int ipu, Unit unit, std::int64_t start) {
    PhaseCounts& counts = schedule_.counts_;
    Program& program = schedule_.programs_[ipu];
    const std::int64_t tasks = schedule_.compute_tasks(unit);
    const std::int64_t after = ipus_[ipu].done + 1;
    if (start < counts.ramp_up_end) {
      counts.ramp_up += tasks;
      program.main_unit = after;
    } else if (start < counts.ramp_down_begin) {
      counts.main += tasks;
    } else {
      counts.ramp_down += tasks;
    }
    if (start < counts.ramp_down_begin)
      program.ramp_down_unit = after;
  }

  OrderedSchedule& schedule_;
  std::vector<Entry> forward_;  // stage k's ring at [k * kRingSize, (k + 1) * kRingSize)
  std::vector<Entry> backward_;
  std::vector<IpuState> ipus_;
};

// M itself while small, else the M' of the top of ordered_schedule.hpp.
std::int64_t OrderedSchedule::simulated_microbatches() const {
  const std::int64_t m = shape().microbatches;
  const std::int64_t n = layout().stages();
  const std::int64_t settled = rule_->virtual_stages() ? std::min<std::int64_t>(n, 2 * group_) : n;
  const std::int64_t base = settled + group_;
  if (m < base + group_)
    return m;
  return base + (m - base) % group_;
}

void OrderedSchedule::place_phases() {
  const std::int64_t simulated = simulated_microbatches();
  if (simulated == shape().microbatches) {
    Simulation(*this).run();
    return;
  }
  PipelineShape shorter = shape();
  shorter.microbatches = simulated;
  extrapolate_phases(OrderedSchedule(*rule_, std::move(shorter), recomputation()),
                     (shape().microbatches - simulated) / group_);
}

// Each period left out of `simulated` runs P micro-batches of every chunk on every IPU, back to
// back in the steady part: its units and compute tasks join the main phase and its work
// delays the ramp-down and the end.
void OrderedSchedule::extrapolate_phases(const OrderedSchedule& simulated, std::int64_t periods) {
  std::int64_t units = 0;
  std::int64_t tasks = 0;
  std::int64_t work = 0;
  for (Unit unit : {kF, kB, kW}) {
    if ((unit == kB && !shape().training) || (unit == kW && !splits_weight_grad()))
      continue;
    units += group_ * chunks_;
    tasks += group_ * chunks_ * compute_tasks(unit);
    work += group_ * chunks_ * unit_cost(unit);
  }
  const PhaseCounts& base = simulated.counts_;
  // The ramp-down begins when the first IPU finishes, which moves with the work added.
  IPUSIM_CHECK(base.ramp_down_begin > base.ramp_up_end);
  counts_.makespan = base.makespan + periods * work;
  counts_.ramp_up_end = base.ramp_up_end;
  counts_.ramp_down_begin = base.ramp_down_begin + periods * work;
  counts_.ramp_up = base.ramp_up;
  counts_.main = base.main;
  counts_.ramp_down = base.ramp_down;
  for (std::size_t ipu = 0; ipu < programs_.size(); ++ipu) {
    const Program& model = simulated.programs_[ipu];
    if (model.units == 0)
      continue;
    programs_[ipu].main_unit = model.main_unit;
    programs_[ipu].ramp_down_unit = model.ramp_down_unit + periods * units;
    counts_.main += periods * tasks;
  }
}
}  // namespace ipusim::schedules
