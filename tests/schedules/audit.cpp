#include "audit.hpp"
#include "schedules/step_schedule.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <vector>

#include "schedules/task_graph.hpp"

namespace ipusim::schedules::testing {
namespace {

struct Position {
  int ipu;
  std::int64_t index;
};

class Auditor {
 public:
  explicit Auditor(const Schedule& schedule) : s_(schedule) {}

  std::string run() {
    using Check = std::string (Auditor::*)();
    for (Check check :
         {&Auditor::collect, &Auditor::steps_match_programs, &Auditor::work_runs_once,
          &Auditor::dependencies_come_first, &Auditor::no_cycle, &Auditor::stashes_are_fifo,
          &Auditor::phases_add_up, &Auditor::stash_depth_matches}) {
      std::string failure = (this->*check)();
      if (!failure.empty())
        return s_.name() + ": " + failure;
    }
    return "";
  }

 private:
  std::string collect() {
    programs_.resize(s_.layout().ipus());
    for (int ipu = 0; ipu < s_.layout().ipus(); ++ipu) {
      for (std::int64_t index = 0; index < s_.program_length(ipu); ++index) {
        const Task task = s_.program_task(ipu, index);
        if (task.ipu != ipu)
          return to_string(task) + " is listed on IPU" + std::to_string(ipu);
        if (!position_.emplace(task, Position{ipu, index}).second)
          return to_string(task) + " runs twice";
        programs_[ipu].push_back(task);
      }
    }
    return "";
  }

  std::string steps_match_programs() {
    if (!s_.step_based())
      return "";
    std::vector<Task> step_tasks;
    for (int ipu = 0; ipu < s_.layout().ipus(); ++ipu) {
      std::size_t next = 0;
      std::int64_t busy_from = 0;  // steps before it must come out idle
      for (std::int64_t step = 0; step < s_.as_steps()->steps(); ++step) {
        s_.as_steps()->tasks_in_step(step, ipu, step_tasks);
        if (step >= busy_from) {
          busy_from = s_.as_steps()->next_busy_step(ipu, step);
          if ((busy_from == step) == step_tasks.empty())
            return "next_busy_step of IPU" + std::to_string(ipu) + " is wrong at step " +
                   std::to_string(step);
        } else if (!step_tasks.empty()) {
          return "next_busy_step of IPU" + std::to_string(ipu) + " skips step " +
                 std::to_string(step);
        }
        for (const Task& task : step_tasks) {
          if (next >= programs_[ipu].size() || !(programs_[ipu][next] == task))
            return "step " + std::to_string(step) + " of IPU" + std::to_string(ipu) +
                   " disagrees with program_task at " + std::to_string(next);
          if (task.phase != s_.as_steps()->step_phase(step) ||
              task.code_phase != s_.as_steps()->step_code_phase(step))
            return to_string(task) + " has other phases than its step";
          ++next;
        }
      }
      if (next != programs_[ipu].size())
        return "the steps of IPU" + std::to_string(ipu) + " hold fewer tasks than its program";
    }
    return "";
  }

  std::vector<Task> expected_work() const {
    std::vector<Task> work;
    const StageLayout& layout = s_.layout();
    const int last = layout.stages() - 1;
    const bool training = s_.shape().training;
    const auto add = [&](Op op, int stage, int sub, int ipu, std::int64_t m) {
      Task task;
      task.op = op;
      task.stage = stage;
      task.substage = sub;
      task.microbatch = m;
      task.ipu = ipu;
      work.push_back(task);
      return task;
    };
    const auto copies = [&](Task copy, int target, CopyKind kind) {
      if (target < 0 || target > last)
        return;
      copy.op = Op::kCopy;
      copy.copy = kind;
      for (int peer : layout.ipus_of(target)) {
        if (peer == copy.ipu)
          continue;
        copy.peer_ipu = peer;
        work.push_back(copy);
      }
    };
    for (int k = 0; k <= last; ++k) {
      for (int sub = 0; sub < static_cast<int>(layout.ipus_of(k).size()); ++sub) {
        const int ipu = layout.ipus_of(k)[sub];
        for (std::int64_t m = 0; m < s_.shape().microbatches; ++m) {
          const Task forward = add(Op::kForward, k, sub, ipu, m);
          if (k == 0)
            add(Op::kInfeed, 0, sub, ipu, m);
          if (k == last)
            add(Op::kOutfeed, last, sub, ipu, m);
          copies(forward, k + 1, CopyKind::kActivation);
          if (!training)
            continue;
          const Task backward = add(Op::kBackward, k, sub, ipu, m);
          copies(backward, k - 1, CopyKind::kGradient);
          if (s_.recomputes(k))
            add(Op::kRecompute, k, sub, ipu, m);
          if (s_.splits_weight_grad())
            add(Op::kWeightGrad, k, sub, ipu, m);
        }
      }
    }
    return work;
  }

  std::string work_runs_once() {
    const std::vector<Task> expected = expected_work();
    for (const Task& task : expected) {
      if (!position_.count(task))
        return to_string(task) + " never runs";
    }
    if (expected.size() != position_.size())
      return std::to_string(position_.size()) + " tasks run, " + std::to_string(expected.size()) +
             " expected";
    if (static_cast<std::int64_t>(expected.size()) !=
        s_.tasks_per_microbatch() * s_.shape().microbatches)
      return "tasks_per_microbatch is " + std::to_string(s_.tasks_per_microbatch()) + " for " +
             std::to_string(expected.size()) + " tasks";
    return "";
  }

  std::string dependency_comes_first(const Task& task, std::int64_t index,
                                     const Task& dependency) const {
    const auto it = position_.find(dependency);
    if (it == position_.end())
      return to_string(task) + " depends on " + to_string(dependency) + ", which never runs";
    const Task& actual = programs_[it->second.ipu][it->second.index];
    if (!(actual == dependency))
      return "dependency " + to_string(dependency) + " is located unlike its program task";
    if (index < 0)
      return "";  // a weight-update task: it follows the whole program
    const bool same_ipu_earlier = dependency.ipu == task.ipu && it->second.index < index;
    const bool ordered = s_.step_based() ? dependency.step < task.step ||
                                               (dependency.step == task.step && same_ipu_earlier)
                                         : dependency.ipu != task.ipu || same_ipu_earlier;
    return ordered ? ""
                   : to_string(task) + " may run before its dependency " + to_string(dependency);
  }

  std::string dependencies_come_first() {
    std::vector<Task> dependencies;
    for (const auto& program : programs_) {
      for (std::size_t index = 0; index < program.size(); ++index) {
        s_.dependencies(program[index], dependencies);
        for (const Task& dependency : dependencies) {
          std::string failure =
              dependency_comes_first(program[index], static_cast<std::int64_t>(index), dependency);
          if (!failure.empty())
            return failure;
        }
      }
    }
    for (int ipu = 0; ipu < s_.layout().ipus(); ++ipu) {
      for (const Task& task : s_.weight_update_tasks(ipu)) {
        s_.dependencies(task, dependencies);
        if (dependencies.empty())
          return to_string(task) + " waits for nothing";
        for (const Task& dependency : dependencies) {
          if (dependency.op == Op::kAllReduce)
            continue;
          std::string failure = dependency_comes_first(task, -1, dependency);
          if (!failure.empty())
            return failure;
        }
      }
    }
    return "";
  }

  std::string no_cycle() {
    try {
      materialise(s_).validate();
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  }

  // Per (stage, IPU) and op, micro-batches come in order 0, 1, 2, ...: FIFO stashes work.
  std::string stashes_are_fifo() {
    for (const auto& program : programs_) {
      std::map<std::pair<int, int>, std::int64_t> next;
      for (const Task& task : program) {
        if (!is_compute(task.op))
          continue;
        std::int64_t& expected = next[{task.stage, static_cast<int>(task.op)}];
        if (task.microbatch != expected)
          return to_string(task) + " comes out of micro-batch order";
        ++expected;
      }
    }
    return "";
  }

  static std::string compare(const char* what, std::int64_t expected, std::int64_t actual) {
    if (expected == actual)
      return "";
    return std::string(what) + " is " + std::to_string(actual) + ", counted " +
           std::to_string(expected);
  }

  std::string step_phases_add_up(const PhaseCounts& counts) {
    std::array<std::int64_t, 4> phase{};
    std::array<std::int64_t, 4> code{};
    for (std::int64_t step = 0; step < s_.as_steps()->steps(); ++step) {
      ++phase[static_cast<int>(s_.as_steps()->step_phase(step))];
      ++code[static_cast<int>(s_.as_steps()->step_code_phase(step))];
    }
    std::int64_t idle = 0;
    std::vector<Task> tasks;
    for (std::int64_t step = s_.as_steps()->steps() - 1; step >= 0; --step) {
      bool busy = false;
      for (int ipu = 0; ipu < s_.layout().ipus(); ++ipu) {
        s_.as_steps()->tasks_in_step(step, ipu, tasks);
        busy = busy || std::any_of(tasks.begin(), tasks.end(),
                                   [](const Task& t) { return is_compute(t.op); });
      }
      if (busy)
        break;
      ++idle;
    }
    for (const std::string& failure :
         {compare("ramp_up", phase[0], counts.ramp_up), compare("main", phase[1], counts.main),
          compare("ramp_down", phase[2], counts.ramp_down),
          compare("code_ramp_up", code[0], counts.code_ramp_up),
          compare("code_main", code[1], counts.code_main),
          compare("code_ramp_down", code[2], counts.code_ramp_down),
          compare("idle_tail", idle, counts.idle_tail)}) {
      if (!failure.empty())
        return failure;
    }
    return "";
  }

  std::string task_phases_add_up(const PhaseCounts& counts) {
    std::array<std::int64_t, 4> phase{};
    std::array<std::int64_t, 4> code{};
    for (const auto& program : programs_) {
      int last_phase = 0;
      int last_code = 0;
      for (const Task& task : program) {
        if (static_cast<int>(task.phase) < last_phase ||
            static_cast<int>(task.code_phase) < last_code)
          return to_string(task) + " goes back to an earlier phase";
        last_phase = static_cast<int>(task.phase);
        last_code = static_cast<int>(task.code_phase);
        if (!is_compute(task.op))
          continue;
        ++phase[last_phase];
        ++code[last_code];
      }
    }
    for (const std::string& failure :
         {compare("ramp_up", phase[0], counts.ramp_up), compare("main", phase[1], counts.main),
          compare("ramp_down", phase[2], counts.ramp_down),
          compare("code_ramp_up", code[0], counts.code_ramp_up),
          compare("code_main", code[1], counts.code_main),
          compare("code_ramp_down", code[2], counts.code_ramp_down)}) {
      if (!failure.empty())
        return failure;
    }
    return "";
  }

  std::string phases_add_up() {
    const PhaseCounts counts = s_.phase_counts();
    if (counts.counts_steps != s_.step_based())
      return "phase counts are in the wrong unit";
    return s_.step_based() ? step_phases_add_up(counts) : task_phases_add_up(counts);
  }

  // Most micro-batches of a stage with F done and B not, over the program order of each IPU.
  std::vector<std::int64_t> in_flight_peaks() const {
    std::vector<std::int64_t> peaks(s_.layout().stages(), 0);
    for (const auto& program : programs_) {
      std::map<int, std::int64_t> in_flight;
      for (const Task& task : program) {
        // An entry lives until its last reader: W when the backward is split.
        if (task.op == Op::kForward)
          peaks[task.stage] = std::max(peaks[task.stage], ++in_flight[task.stage]);
        else if (task.op == (s_.splits_weight_grad() ? Op::kWeightGrad : Op::kBackward))
          --in_flight[task.stage];
      }
    }
    return peaks;
  }

  // Step-based: at the end of each step, F_k done minus B_k done. TF's FIFO holds one
  // micro-batch fewer than that (its output is the current input).
  std::vector<std::int64_t> step_in_flight_peaks() const {
    std::vector<std::int64_t> peaks(s_.layout().stages(), 0);
    std::vector<std::int64_t> in_flight(s_.layout().stages(), 0);
    std::vector<Task> tasks;
    for (std::int64_t step = 0; step < s_.as_steps()->steps(); ++step) {
      for (int ipu = 0; ipu < s_.layout().ipus(); ++ipu) {
        s_.as_steps()->tasks_in_step(step, ipu, tasks);
        for (const Task& task : tasks) {
          if (task.op == Op::kForward && task.substage == 0)
            ++in_flight[task.stage];
          if (task.op == Op::kBackward && task.substage == 0)
            --in_flight[task.stage];
        }
      }
      for (std::size_t k = 0; k < peaks.size(); ++k)
        peaks[k] = std::max(peaks[k], in_flight[k]);
    }
    return peaks;
  }

  std::string stash_depth_matches() {
    const std::vector<std::int64_t> depth = s_.stash_depth();
    if (!s_.shape().training) {
      if (std::any_of(depth.begin(), depth.end(), [](std::int64_t d) { return d != 0; }))
        return "inference stashes nothing";
      return "";
    }
    if (!s_.step_based())
      return in_flight_peaks() == depth ? "" : "stash depth differs from the program orders";
    const std::vector<std::int64_t> peaks = step_in_flight_peaks();
    for (std::size_t k = 0; k < depth.size(); ++k) {
      if (peaks[k] > depth[k] + 1)
        return "stage " + std::to_string(k) + " has more in flight than its FIFO holds";
    }
    return "";
  }

  const Schedule& s_;
  std::vector<std::vector<Task>> programs_;
  std::unordered_map<Task, Position, TaskWorkHash, TaskWorkEqual> position_;
};

}  // namespace

std::string audit(const Schedule& schedule) {
  return Auditor(schedule).run();
}

}  // namespace ipusim::schedules::testing
