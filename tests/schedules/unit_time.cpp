#include "unit_time.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <stdexcept>
#include <tuple>
#include <vector>

namespace ipusim::schedules::testing {
namespace {

// F, B (with its R) or W of one stage and micro-batch, and the program tasks it covers.
struct Unit {
  Op op = Op::kForward;
  int stage = 0;
  std::int64_t microbatch = 0;
  std::int64_t cost = 0;
  std::int64_t compute_tasks = 0;
  std::int64_t start = -1;
};

// Per IPU: its units, and for every program task the unit it belongs to (an infeed belongs to
// the forward after it, copies and the outfeed to the unit before them).
struct Program {
  std::vector<Unit> units;
  std::vector<std::size_t> unit_of_task;
};

std::int64_t cost_of(const Schedule& schedule, Op op) {
  if (op == Op::kBackward)
    return schedule.splits_weight_grad() ? 1 : 2;
  return 1;
}

Program read_program(const Schedule& schedule, int ipu) {
  Program program;
  bool recompute_pending = false;
  for (std::int64_t index = 0; index < schedule.program_length(ipu); ++index) {
    const Task task = schedule.program_task(ipu, index);
    if (is_compute(task.op) && !recompute_pending)
      program.units.push_back({task.op, task.stage, task.microbatch, 0, 0, -1});
    if (is_compute(task.op)) {
      Unit& unit = program.units.back();
      unit.op = task.op == Op::kRecompute ? Op::kBackward : task.op;
      unit.cost += cost_of(schedule, task.op);
      ++unit.compute_tasks;
      recompute_pending = task.op == Op::kRecompute;
    }
    const bool ahead = task.op == Op::kInfeed || program.units.empty();
    program.unit_of_task.push_back(program.units.size() - (ahead ? 0 : 1));
  }
  return program;
}

class UnitTimeSimulation {
 public:
  explicit UnitTimeSimulation(const Schedule& schedule) : s_(schedule) {
    for (int ipu = 0; ipu < s_.layout().ipus(); ++ipu)
      programs_.push_back(read_program(s_, ipu));
  }

  std::vector<Program> run() {
    std::vector<std::size_t> next(programs_.size(), 0);
    std::vector<std::int64_t> free(programs_.size(), 0);
    bool progress = true;
    while (progress) {
      progress = false;
      for (std::size_t ipu = 0; ipu < programs_.size(); ++ipu) {
        auto& units = programs_[ipu].units;
        while (next[ipu] < units.size() && try_start(units[next[ipu]], free[ipu])) {
          ++next[ipu];
          progress = true;
        }
      }
    }
    for (std::size_t ipu = 0; ipu < programs_.size(); ++ipu) {
      if (next[ipu] != programs_[ipu].units.size())
        throw std::logic_error("the unit-time simulation deadlocks on IPU" + std::to_string(ipu));
    }
    return programs_;
  }

 private:
  using Key = std::tuple<Op, int, std::int64_t>;
  struct Output {
    std::int64_t finish = 0;
    int written = 0;
  };

  // F_k(m) waits for F_{k-1}(m) and B_k(m) for B_{k+1}(m), on every IPU of that stage.
  bool try_start(Unit& unit, std::int64_t& free) {
    const int producer = unit.op == Op::kForward ? unit.stage - 1 : unit.stage + 1;
    std::int64_t ready = 0;
    if (unit.op != Op::kWeightGrad && producer >= 0 && producer < s_.layout().stages()) {
      const auto it = outputs_.find({unit.op, producer, unit.microbatch});
      const int needed = static_cast<int>(s_.layout().ipus_of(producer).size());
      if (it == outputs_.end() || it->second.written < needed)
        return false;
      ready = it->second.finish;
    }
    unit.start = std::max(free, ready);
    free = unit.start + unit.cost;
    Output& output = outputs_[{unit.op, unit.stage, unit.microbatch}];
    output.finish = std::max(output.finish, free);
    ++output.written;
    return true;
  }

  const Schedule& s_;
  std::vector<Program> programs_;
  std::map<Key, Output> outputs_;
};

PhaseCounts expected_counts(const Schedule& schedule, const std::vector<Program>& programs) {
  PhaseCounts counts;
  counts.counts_steps = false;
  std::int64_t first_finish = -1;
  for (const Program& program : programs) {
    if (program.units.empty())
      continue;
    const Unit& last = program.units.back();
    counts.ramp_up_end = std::max(counts.ramp_up_end, program.units.front().start);
    counts.makespan = std::max(counts.makespan, last.start + last.cost);
    first_finish =
        first_finish < 0 ? last.start + last.cost : std::min(first_finish, last.start + last.cost);
  }
  counts.ramp_down_begin = std::max(counts.ramp_up_end, first_finish);
  for (int ipu = 0; ipu < schedule.layout().ipus(); ++ipu) {
    for (std::int64_t index = 0; index < schedule.program_length(ipu); ++index) {
      const Task task = schedule.program_task(ipu, index);
      if (!is_compute(task.op))
        continue;
      const std::int64_t start = programs[ipu].units[programs[ipu].unit_of_task[index]].start;
      ++(start < counts.ramp_up_end       ? counts.ramp_up
         : start < counts.ramp_down_begin ? counts.main
                                          : counts.ramp_down);
      ++(task.code_phase == CodePhase::kRampUp ? counts.code_ramp_up
         : task.code_phase == CodePhase::kMain ? counts.code_main
                                               : counts.code_ramp_down);
    }
  }
  return counts;
}

std::string compare_counts(const PhaseCounts& expected, const PhaseCounts& actual) {
  const std::array<std::tuple<const char*, std::int64_t, std::int64_t>, 9> fields = {{
      {"makespan", expected.makespan, actual.makespan},
      {"ramp_up_end", expected.ramp_up_end, actual.ramp_up_end},
      {"ramp_down_begin", expected.ramp_down_begin, actual.ramp_down_begin},
      {"ramp_up", expected.ramp_up, actual.ramp_up},
      {"main", expected.main, actual.main},
      {"ramp_down", expected.ramp_down, actual.ramp_down},
      {"code_ramp_up", expected.code_ramp_up, actual.code_ramp_up},
      {"code_main", expected.code_main, actual.code_main},
      {"code_ramp_down", expected.code_ramp_down, actual.code_ramp_down},
  }};
  if (actual.counts_steps)
    return "phase counts are in steps";
  for (const auto& [name, want, got] : fields) {
    if (want != got)
      return std::string(name) + " is " + std::to_string(got) + ", simulated " +
             std::to_string(want);
  }
  return "";
}

Phase phase_at(const PhaseCounts& counts, std::int64_t start) {
  if (start < counts.ramp_up_end)
    return Phase::kRampUp;
  return start < counts.ramp_down_begin ? Phase::kMain : Phase::kRampDown;
}

}  // namespace

std::string compare_with_unit_time(const Schedule& schedule) {
  const std::vector<Program> programs = UnitTimeSimulation(schedule).run();
  const PhaseCounts expected = expected_counts(schedule, programs);
  std::string failure = compare_counts(expected, schedule.phase_counts());
  if (!failure.empty())
    return failure;
  for (int ipu = 0; ipu < schedule.layout().ipus(); ++ipu) {
    for (std::int64_t index = 0; index < schedule.program_length(ipu); ++index) {
      const Task task = schedule.program_task(ipu, index);
      const Unit& unit = programs[ipu].units[programs[ipu].unit_of_task[index]];
      if (task.phase != phase_at(expected, unit.start))
        return to_string(task) + " is in " + std::string(to_string(task.phase)) +
               ", but starts at " + std::to_string(unit.start);
    }
  }
  return "";
}

}  // namespace ipusim::schedules::testing
