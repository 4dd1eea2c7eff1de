// The explicit task graph: what validate() reports for broken schedules, and critical paths.

#include <catch2/catch.hpp>

#include "schedules/build.hpp"
#include "schedules/task_graph.hpp"
#include "shapes.hpp"
#include "sim/core/error.hpp"

using namespace ipusim::schedules;
using namespace ipusim::schedules::testing;

namespace {

// A two-stage, one-micro-batch schedule whose per-IPU programs are given by hand, so that
// tests can build orders no real builder produces.
class HandWritten final : public Schedule {
 public:
  explicit HandWritten(std::vector<std::vector<Task>> programs)
      : Schedule(one_per_ipu(2, 1), RecomputationMode::kNone, false, false),
        programs_(std::move(programs)) {}

  std::string name() const override { return "hand-written"; }
  std::int64_t program_length(int ipu) const override {
    return static_cast<std::int64_t>(programs_[ipu].size());
  }
  Task program_task(int ipu, std::int64_t index) const override { return programs_[ipu][index]; }
  std::vector<std::int64_t> stash_depth() const override { return {1, 0}; }
  std::vector<std::int64_t> microbatches_held() const override { return {1, 0}; }
  std::vector<StashKind> stash_kind() const override { return {}; }
  PhaseCounts phase_counts() const override { return {}; }

  static Task make(Op op, int stage, int ipu, int peer = -1) {
    Task task;
    task.op = op;
    task.stage = stage;
    task.microbatch = 0;
    task.ipu = ipu;
    if (op == Op::kCopy) {
      task.peer_ipu = peer;
      task.copy = peer > ipu ? CopyKind::kActivation : CopyKind::kGradient;
    }
    return task;
  }

 protected:
  void locate(Task&) const override {}

 private:
  std::vector<std::vector<Task>> programs_;
};

std::string validation_error(const Schedule& schedule) {
  try {
    materialise(schedule).validate();
  } catch (const ipusim::core::InternalError& error) {
    return error.what();
  }
  return "valid";
}

using H = HandWritten;

}  // namespace

TEST_CASE("a backward placed before its own forward is reported as a named cycle") {
  const HandWritten schedule({{H::make(Op::kInfeed, 0, 0), H::make(Op::kForward, 0, 0),
                               H::make(Op::kCopy, 0, 0, 1), H::make(Op::kBackward, 0, 0)},
                              {H::make(Op::kBackward, 1, 1), H::make(Op::kCopy, 1, 1, 0),
                               H::make(Op::kForward, 1, 1), H::make(Op::kOutfeed, 1, 1)}});
  CHECK(validation_error(schedule) ==
        "internal error (this is a bug in ipusim): schedule deadlocks: F[s1,m1]@IPU1 -> "
        "B[s1,m1]@IPU1 -> copy-grad[s1,m1] IPU1->IPU0 -> F[s1,m1]@IPU1");
}

TEST_CASE("a dependency that no IPU runs is reported") {
  const HandWritten schedule({{H::make(Op::kForward, 0, 0), H::make(Op::kCopy, 0, 0, 1)},
                              {H::make(Op::kForward, 1, 1), H::make(Op::kOutfeed, 1, 1)}});
  CHECK(validation_error(schedule) ==
        "internal error (this is a bug in ipusim): schedule is inconsistent: F[s0,m1]@IPU0 "
        "depends on infeed[m1]@IPU0, which no IPU runs");
}

TEST_CASE("a task listed twice is reported") {
  const HandWritten schedule(
      {{H::make(Op::kInfeed, 0, 0), H::make(Op::kForward, 0, 0), H::make(Op::kForward, 0, 0)}, {}});
  CHECK(validation_error(schedule) ==
        "internal error (this is a bug in ipusim): schedule is inconsistent: F[s0,m1]@IPU0 runs "
        "twice");
}

TEST_CASE("a valid schedule has one vertex per task and validates") {
  const auto schedule = build_schedule("grouped", one_per_ipu(2, 4));
  const TaskGraph graph = materialise(*schedule);
  // Per micro-batch: infeed, F0, copy, F1, outfeed, B1, copy, B0; then two weight updates.
  CHECK(graph.task_count() == 4 * 8 + 2);
  CHECK(validation_error(*schedule) == "valid");
}

TEST_CASE("the unit-cost critical path of a gpu schedule is its simulated makespan") {
  for (const std::string name : {"gpipe", "1f1b", "zero_bubble_h1"}) {
    for (int n = 1; n <= 6; ++n) {
      for (int m = 1; m <= 16; ++m) {
        const auto schedule = build_schedule(name, one_per_ipu(n, m));
        INFO(name << " N=" << n << " M=" << m);
        CHECK(materialise(*schedule).critical_path().length ==
              static_cast<double>(schedule->phase_counts().makespan));
      }
    }
  }
  const auto interleaved = build_schedule("interleaved_1f1b", round_robin(8, 4, 8));
  CHECK(materialise(*interleaved).critical_path().length == 57);
  CHECK(interleaved->phase_counts().makespan == 57);
}

TEST_CASE("a critical path runs from the first infeed to the last backward") {
  const TaskGraph::Path path =
      materialise(*build_schedule("1f1b", one_per_ipu(4, 8))).critical_path();
  CHECK(path.length == 33);
  CHECK(to_string(path.tasks.front()) == "infeed[m1]@IPU0");
  CHECK(to_string(path.tasks.back()) == "weight-update@IPU0");
}
