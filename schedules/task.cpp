#include "schedules/task.hpp"

#include <functional>

namespace ipusim::schedules {

bool same_work(const Task& a, const Task& b) {
  return a.op == b.op && a.stage == b.stage && a.substage == b.substage &&
         a.microbatch == b.microbatch && a.ipu == b.ipu && a.peer_ipu == b.peer_ipu &&
         a.copy == b.copy;
}

std::size_t TaskWorkHash::operator()(const Task& task) const {
  std::size_t h = std::hash<std::int64_t>{}(task.microbatch);
  const auto mix = [&h](std::int64_t value) {
    h ^= std::hash<std::int64_t>{}(value) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  };
  mix(static_cast<int>(task.op));
  mix(task.stage);
  mix(task.substage);
  mix(task.ipu);
  mix(task.peer_ipu);
  mix(static_cast<int>(task.copy));
  return h;
}

namespace {

// The task and the phase share their name.
constexpr std::string_view kWeightUpdate = "weight update";

}  // namespace

std::string_view to_string(Op op) {
  static constexpr std::array<std::string_view, 9> kNames = {
      "forward", "backward", "recompute",   "weight gradient", "copy",
      "infeed",  "outfeed",  kWeightUpdate, "all-reduce"};
  return kNames[static_cast<std::size_t>(op)];
}

char op_letter(Op op) {
  switch (op) {
    case Op::kForward:
      return 'F';
    case Op::kBackward:
      return 'B';
    case Op::kRecompute:
      return 'R';
    case Op::kWeightGrad:
      return 'W';
    default:
      return '?';
  }
}

namespace {

struct PhaseSpelling {
  std::string_view label;
  std::string_view key;
};

constexpr std::array<PhaseSpelling, 4> kPhaseSpellings = {{{"ramp-up", "ramp_up"},
                                                           {"main", "main"},
                                                           {"ramp-down", "ramp_down"},
                                                           {kWeightUpdate, "weight_update"}}};

}  // namespace

std::vector<Phase> phases_of_run(bool training) {
  std::vector<Phase> phases(kPhases.begin(), kPhases.end());
  if (!training)
    std::erase(phases, Phase::kWeightUpdate);
  return phases;
}

std::string_view to_string(Phase phase) {
  return kPhaseSpellings[index(phase)].label;
}

std::string_view phase_key(Phase phase) {
  return kPhaseSpellings[index(phase)].key;
}

std::string phase_heading(Phase phase) {
  std::string heading(to_string(phase));
  heading[0] = static_cast<char>(heading[0] - 'a' + 'A');
  return heading;
}

std::string_view to_string(CodePhase phase) {
  return to_string(static_cast<Phase>(static_cast<int>(phase)));
}

std::string to_string(const Task& task) {
  const std::string ipu = "IPU" + std::to_string(task.ipu);
  const std::string m = std::to_string(task.microbatch + 1);
  const std::string s = std::to_string(task.stage);
  switch (task.op) {
    case Op::kForward:
    case Op::kBackward:
    case Op::kRecompute:
    case Op::kWeightGrad:
      return std::string(1, op_letter(task.op)) + "[s" + s + ",m" + m + "]@" + ipu;
    case Op::kCopy:
      return std::string(task.copy == CopyKind::kGradient ? "copy-grad" : "copy-act") + "[s" + s +
             ",m" + m + "] " + ipu + "->IPU" + std::to_string(task.peer_ipu);
    case Op::kInfeed:
      return "infeed[m" + m + "]@" + ipu;
    case Op::kOutfeed:
      return "outfeed[m" + m + "]@" + ipu;
    case Op::kWeightUpdate:
      return "weight-update@" + ipu;
    case Op::kAllReduce:
      return "all-reduce@" + ipu;
  }
  return "?";
}

}  // namespace ipusim::schedules
