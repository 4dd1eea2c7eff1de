// Behaviour of the builders on small, hand-checked cases: step contents and their order,
// recomputation, concurrent and shared stages, stash depths, phase counts, the weight update,
// and the JSON form.

#include <catch2/catch.hpp>
#include <sstream>

#include "schedules/build.hpp"
#include "schedules/render.hpp"
#include "schedules/step_schedule.hpp"
#include "shapes.hpp"

using namespace ipusim::schedules;
using namespace ipusim::schedules::testing;

namespace {

std::string row(const Schedule& schedule, int step) {
  const std::string table =
      lines_starting(render_step_table(schedule), "| " + std::to_string(step) + " |");
  return table.substr(0, table.size() - 1);
}

std::vector<std::string> names(const std::vector<Task>& tasks) {
  std::vector<std::string> result;
  for (const Task& task : tasks)
    result.push_back(to_string(task));
  return result;
}

std::vector<std::string> step_tasks(const Schedule& schedule, int step, int ipu) {
  std::vector<Task> tasks;
  schedule.as_steps()->tasks_in_step(step, ipu, tasks);
  return names(tasks);
}

std::vector<std::string> dependencies_of(const Schedule& schedule, const Task& task) {
  std::vector<Task> tasks;
  schedule.dependencies(task, tasks);
  return names(tasks);
}

Task find(const Schedule& schedule, Op op, int stage, int ipu, std::int64_t microbatch) {
  for (std::int64_t index = 0; index < schedule.program_length(ipu); ++index) {
    const Task task = schedule.program_task(ipu, index);
    if (task.op == op && task.stage == stage && task.microbatch == microbatch)
      return task;
  }
  return {};
}

using Names = std::vector<std::string>;

}  // namespace

TEST_CASE("a step runs the infeed, the backward before the forward, then copies and outfeed") {
  const auto schedule = build_schedule("grouped", one_per_ipu(2, 4));
  CHECK(step_tasks(*schedule, 2, 1) ==
        Names{"B[s1,m1]@IPU1", "F[s1,m2]@IPU1", "copy-grad[s1,m1] IPU1->IPU0", "outfeed[m2]@IPU1"});
  CHECK(step_tasks(*schedule, 3, 0) ==
        Names{"infeed[m4]@IPU0", "B[s0,m1]@IPU0", "F[s0,m4]@IPU0", "copy-act[s0,m4] IPU0->IPU1"});
}

TEST_CASE("a forward waits for the copy of its input and a backward for its gradient") {
  const auto schedule = build_schedule("grouped", one_per_ipu(3, 6));
  const Task forward = find(*schedule, Op::kForward, 1, 1, 2);
  CHECK(forward.step == 3);
  CHECK(dependencies_of(*schedule, forward) == Names{"copy-act[s0,m3] IPU0->IPU1"});
  const Task backward = find(*schedule, Op::kBackward, 1, 1, 2);
  CHECK(dependencies_of(*schedule, backward) ==
        Names{"F[s1,m3]@IPU1", "copy-grad[s2,m3] IPU2->IPU1"});
  std::vector<Task> located;
  schedule->dependencies(backward, located);
  CHECK(located[1].step == 5);
  CHECK(backward.step == 6);
}

TEST_CASE("recompute_then_backpropagate recomputes at the end of the step before the backward") {
  PipelineShape shape = one_per_ipu(3, 6);
  shape.recomputation = RecomputationMode::kRecomputeThenBackpropagate;
  const auto grouped = build_schedule("grouped", shape);
  CHECK(row(*grouped, 5) == "| 5 | U | F5 R1 | B1 F4 R2 | B2 F3 |");
  CHECK(row(*grouped, 6) == "| 6 | U | B1 F6 R2 | B2 F5 R3 | B3 F4 |");
  const auto interleaved = build_schedule("interleaved", shape);
  CHECK(row(*interleaved, 4) == "| 4 | U | · | F2 R1 | B1 |");
  CHECK(row(*interleaved, 13) == "| 13 | D | R5 | B5 | F6 |");
  CHECK(grouped->stash_kind() ==
        std::vector{StashKind::kStageInputs, StashKind::kStageInputs, StashKind::kActivations});
}

TEST_CASE("recompute_and_backpropagate_interleaved recomputes just before every backward") {
  PipelineShape shape = one_per_ipu(3, 6);
  shape.recomputation = RecomputationMode::kRecomputeAndBackpropagateInterleaved;
  const auto grouped = build_schedule("grouped", shape);
  CHECK(row(*grouped, 6) == "| 6 | U | R1 B1 F6 | R2 B2 F5 | R3 B3 F4 |");
  CHECK(grouped->stash_kind() == std::vector<StashKind>(3, StashKind::kCheckpoints));
  const auto sequential = build_schedule("sequential", shape);
  CHECK(row(*sequential, 4) == "| 4 | M | · | · | R1 B1 |");
  // No FIFO, but each stage keeps its inputs for the backward that rebuilds it.
  CHECK(sequential->stash_kind() == std::vector<StashKind>(3, StashKind::kCheckpoints));
  shape.recomputation = RecomputationMode::kAuto;
  CHECK(build_schedule("sequential", shape)->recomputation() ==
        RecomputationMode::kRecomputeAndBackpropagateInterleaved);
}

TEST_CASE("a concurrent stage takes one slot with one sub-task per IPU") {
  PipelineShape shape = one_per_ipu(3, 6);
  shape.device_mapping = {{0}, {1, 2}, {3}};
  const auto schedule = build_schedule("grouped", shape);
  CHECK(schedule->as_steps()->steps() == 12);
  CHECK(row(*schedule, 2) == "| 2 | U | F2 | F1 | F1 | · |");
  CHECK(row(*schedule, 5) == "| 5 | U | F5 | B1 F4 | B1 F4 | B2 F3 |");
  CHECK(step_tasks(*schedule, 0, 0) == Names{"infeed[m1]@IPU0", "F[s0,m1]@IPU0",
                                             "copy-act[s0,m1] IPU0->IPU1",
                                             "copy-act[s0,m1] IPU0->IPU2"});
  const Task fan_in = find(*schedule, Op::kForward, 2, 3, 0);
  CHECK(dependencies_of(*schedule, fan_in) ==
        Names{"copy-act[s1,m1] IPU1->IPU3", "copy-act[s1,m1] IPU2->IPU3"});
  CHECK(find(*schedule, Op::kForward, 1, 2, 0).substage == 1);
}

TEST_CASE("grouped runs stages that share an IPU back to back in descending slot order") {
  PipelineShape shape = one_per_ipu(3, 6);
  shape.device_mapping = {{0}, {1}, {0}};
  const auto schedule = build_schedule("grouped", shape);
  CHECK(row(*schedule, 6) == "| 6 | U | B1@0 B3@2 F4@2 F6@0 | B2 F5 |");
  CHECK(step_tasks(*schedule, 5, 0) ==
        Names{"infeed[m6]@IPU0", "B[s0,m1]@IPU0", "B[s2,m3]@IPU0", "F[s2,m4]@IPU0", "F[s0,m6]@IPU0",
              "copy-grad[s2,m3] IPU0->IPU1", "copy-act[s0,m6] IPU0->IPU1", "outfeed[m4]@IPU0"});
}

TEST_CASE("fifo depths follow TF's multipliers and the gpu orders") {
  CHECK(build_schedule("grouped", one_per_ipu(4, 8))->stash_depth() ==
        std::vector<std::int64_t>{6, 4, 2, 0});
  CHECK(build_schedule("interleaved", one_per_ipu(4, 8))->stash_depth() ==
        std::vector<std::int64_t>{3, 2, 1, 0});
  CHECK(build_schedule("sequential", one_per_ipu(4, 8))->stash_depth() ==
        std::vector<std::int64_t>{0, 0, 0, 0});
  CHECK(build_schedule("gpipe", one_per_ipu(4, 8))->stash_depth() ==
        std::vector<std::int64_t>{8, 8, 8, 8});
  CHECK(build_schedule("1f1b", one_per_ipu(4, 2))->stash_depth() ==
        std::vector<std::int64_t>{2, 2, 2, 1});
  // Zero-bubble's entries live until the W that last reads them, which H1 defers: every IPU
  // holds p micro-batches, ZB-H1's peak of p·M_B (Qi et al. 2023, "Zero Bubble Pipeline
  // Parallelism", section 3.1).
  CHECK(build_schedule("zero_bubble_h1", one_per_ipu(4, 8))->stash_depth() ==
        std::vector<std::int64_t>{4, 4, 4, 4});
  CHECK(build_schedule("interleaved_1f1b", round_robin(8, 4, 8))->stash_depth() ==
        std::vector<std::int64_t>{8, 8, 7, 5, 4, 4, 3, 1});
}

TEST_CASE("phase counts follow the spec's formulas for every legal M") {
  for (std::int64_t n = 1; n <= 8; ++n) {
    for (std::int64_t m = 2 * n; m <= 64 * n; m += 2 * n) {
      INFO("N=" << n << " M=" << m);
      const PhaseCounts grouped =
          build_schedule("grouped", one_per_ipu(static_cast<int>(n), m))->phase_counts();
      CHECK(std::vector{grouped.code_ramp_up, grouped.code_main, grouped.code_ramp_down} ==
            std::vector{2 * n, m - 2 * n, 2 * n});
      CHECK(std::vector{grouped.ramp_up, grouped.main, grouped.ramp_down, grouped.full,
                        grouped.idle_tail} ==
            std::vector{2 * n - 1, m - 2 * n + 1, 2 * n, m - 2 * n + 1, std::int64_t{1}});
      const PhaseCounts interleaved =
          build_schedule("interleaved", one_per_ipu(static_cast<int>(n), m))->phase_counts();
      CHECK(std::vector{interleaved.code_ramp_up, interleaved.code_main,
                        interleaved.code_ramp_down} == std::vector{2 * n, 2 * m - 2 * n, 2 * n});
      CHECK(std::vector{interleaved.ramp_up, interleaved.main, interleaved.ramp_down,
                        interleaved.full, interleaved.idle_tail} ==
            std::vector{2 * n - 2, 2 * m - 2 * n + 2, 2 * n, 2 * m - 2 * n + 2, std::int64_t{2}});
      const PhaseCounts sequential =
          build_schedule("sequential", one_per_ipu(static_cast<int>(n), m))->phase_counts();
      CHECK(std::vector{sequential.code_ramp_up, sequential.code_main, sequential.ramp_up,
                        sequential.main, sequential.ramp_down, sequential.idle_tail} ==
            std::vector<std::int64_t>{0, 2 * n * m, 0, 2 * n * m, 0, 0});
      CHECK(sequential.full == (n == 1 ? 2 * m : 0));
    }
  }
}

TEST_CASE("the closed forms need no memory for huge M") {
  const std::int64_t m = 8'000'000'000'000;
  const auto schedule = build_schedule("grouped", one_per_ipu(4, m));
  CHECK(schedule->as_steps()->steps() == m + 8);
  CHECK(schedule->program_length(0) == 4 * m);
  const Task last = schedule->program_task(0, 4 * m - 1);
  CHECK(to_string(last) == "B[s0,m8000000000000]@IPU0");
  CHECK(last.step == m + 6);
  CHECK(schedule->phase_counts().main == m - 7);
}

TEST_CASE("gpu schedules place their phases at the largest M without simulating it") {
  const std::int64_t m = std::int64_t{1} << 40;
  // 1f1b: the unit-time makespan is (M + N - 1)(F + B) and the last stage ends (N - 1)B before
  // it; ramp-up and ramp-down hold as many tasks as for M = 8, main the other 2MN.
  const PhaseCounts counts = build_schedule("1f1b", one_per_ipu(4, m))->phase_counts();
  CHECK(std::vector{counts.makespan, counts.ramp_up_end, counts.ramp_down_begin} ==
        std::vector<std::int64_t>{3 * m + 9, 3, 3 * m + 3});
  CHECK(std::vector{counts.ramp_up, counts.main, counts.ramp_down} ==
        std::vector<std::int64_t>{6, 8 * m - 10, 4});
  CHECK(std::vector{counts.code_ramp_up, counts.code_main, counts.code_ramp_down} ==
        std::vector<std::int64_t>{6, 8 * m - 12, 6});
  const auto gpipe = build_schedule("gpipe", one_per_ipu(4, m));
  CHECK(gpipe->phase_counts().makespan == 3 * m + 9);
  CHECK(gpipe->stash_depth() == std::vector<std::int64_t>{m, m, m, m});
  CHECK(build_schedule("zero_bubble_h1", one_per_ipu(4, m))->phase_counts().makespan == 3 * m + 3);
  // Megatron-LM's bubble: (P - 1)(F + B) on top of the 3Mv of work on each IPU.
  CHECK(build_schedule("interleaved_1f1b", round_robin(8, 4, m))->phase_counts().makespan ==
        6 * m + 9);
}

TEST_CASE("the weight update follows the ramp-down and waits for every IPU") {
  PipelineShape shape = one_per_ipu(2, 4);
  shape.replicas = 2;
  const auto schedule = build_schedule("grouped", shape);
  const std::vector<Task> update = schedule->weight_update_tasks(1);
  CHECK(names(update) == Names{"all-reduce@IPU1", "weight-update@IPU1"});
  CHECK(update[0].step == 8);
  CHECK(update[0].phase == Phase::kWeightUpdate);
  CHECK(update[1].code_phase == CodePhase::kWeightUpdate);
  CHECK(dependencies_of(*schedule, update[0]) ==
        Names{"B[s0,m4]@IPU0", "copy-grad[s1,m4] IPU1->IPU0"});
  CHECK(dependencies_of(*schedule, update[1]) == Names{"all-reduce@IPU1"});
  const auto gpu = build_schedule("1f1b", shape);
  CHECK(dependencies_of(*gpu, gpu->weight_update_tasks(0)[0]) == Names{"B[s0,m4]@IPU0"});
  shape.training = false;
  CHECK(build_schedule("grouped", shape)->weight_update_tasks(0).empty());
}

TEST_CASE("inference runs only forwards, grouped and interleaved alike") {
  PipelineShape shape = one_per_ipu(3, 6);
  shape.training = false;
  const std::string grouped =
      lines_starting(render_step_table(*build_schedule("grouped", shape)), "|");
  const std::string interleaved =
      lines_starting(render_step_table(*build_schedule("interleaved", shape)), "|");
  CHECK(grouped == interleaved);
  CHECK(row(*build_schedule("grouped", shape), 3) == "| 3 | U | F3 | F2 | F1 |");
  CHECK(build_schedule("grouped", shape)->as_steps()->steps() == 9);
  CHECK(lines_starting(render_step_table(*build_schedule("1f1b", shape)), "IPU0") ==
        "IPU0: F1 F2 F3 F4 F5 F6\n");
}

TEST_CASE("gpu phases come from a unit-time simulation") {
  const PhaseCounts counts = build_schedule("1f1b", one_per_ipu(4, 8))->phase_counts();
  CHECK_FALSE(counts.counts_steps);
  CHECK(std::vector{counts.makespan, counts.ramp_up_end, counts.ramp_down_begin} ==
        std::vector<std::int64_t>{33, 3, 27});
  CHECK(std::vector{counts.ramp_up, counts.main, counts.ramp_down} ==
        std::vector<std::int64_t>{6, 54, 4});
  CHECK(std::vector{counts.code_ramp_up, counts.code_main, counts.code_ramp_down} ==
        std::vector<std::int64_t>{6, 52, 6});
}

TEST_CASE("the json form lists each step's compute per IPU with 1-based numbers") {
  const nlohmann::json json = schedule_to_json(*build_schedule("grouped", one_per_ipu(1, 2)));
  CHECK(json.dump() ==
        R"({"M":2,"N":1,"ipus":1,"phases":{"code":{"main":0,"ramp_down":2,"ramp_up":2},)"
        R"("counts":"steps","full":1,"idle_tail":1,"utilisation":{"main":1,"ramp_down":2,)"
        R"("ramp_up":1}},"relaxed":false,"schedule":"grouped","stash_depth":[0],)"
        R"("stash_kind":["activations"],"steps":[{"code_phase":"ramp-up","ipus":[[{"microbatch")"
        R"(:1,"op":"F","stage":0}]],"phase":"ramp-up","step":1},{"code_phase":"ramp-up","ipus")"
        R"(:[[{"microbatch":1,"op":"B","stage":0},{"microbatch":2,"op":"F","stage":0}]],"phase")"
        R"(:"main","step":2},{"code_phase":"ramp-down","ipus":[[{"microbatch":2,"op":"B",)"
        R"("stage":0}]],"phase":"ramp-down","step":3},{"code_phase":"ramp-down","ipus":[[]],)"
        R"("phase":"ramp-down","step":4}],"training":true})");
}

TEST_CASE("the streamed json form is the json form's dump, byte for byte, for every schedule") {
  for (const ScheduleInfo& info : schedule_catalogue()) {
    const std::string& name = info.name;
    for (const int stages : {1, 2, 4}) {
      INFO(name << " " << stages);
      std::unique_ptr<Schedule> schedule;
      try {
        schedule = build_schedule(name, one_per_ipu(stages, 8));
      } catch (const std::exception&) {
        continue;  // a shape this schedule refuses
      }
      std::ostringstream streamed;
      write_schedule_json(*schedule, streamed);
      CHECK(streamed.str() == schedule_to_json(*schedule).dump(2) + "\n");
    }
  }
}

TEST_CASE("the json form of a gpu schedule lists each IPU's order") {
  const nlohmann::json json = schedule_to_json(*build_schedule("1f1b", one_per_ipu(2, 2)));
  CHECK(json.contains("order"));
  CHECK_FALSE(json.contains("steps"));
  // IPU1 starts at time 1 and IPU1 ends first, at 7: IPU0's last backward starts then.
  CHECK(json["order"][0].dump() ==
        R"([{"code_phase":"ramp-up","microbatch":1,"op":"F","phase":"ramp-up","stage":0},)"
        R"({"code_phase":"main","microbatch":2,"op":"F","phase":"main","stage":0},)"
        R"({"code_phase":"main","microbatch":1,"op":"B","phase":"main","stage":0},)"
        R"({"code_phase":"ramp-down","microbatch":2,"op":"B","phase":"ramp-down","stage":0}])");
  CHECK(json["phases"]["counts"] == "compute_tasks");
}

TEST_CASE("the catalogue names every schedule build_schedule accepts") {
  std::vector<std::string> listed;
  for (const ScheduleInfo& info : schedule_catalogue()) {
    listed.push_back(info.name);
    // interleaved_1f1b needs two stages an IPU.
    const auto shape = info.name == "interleaved_1f1b" ? round_robin(4, 2, 4) : one_per_ipu(2, 4);
    CHECK(build_schedule(info.name, shape)->name() == info.name);
    CHECK_FALSE(info.when_to_use.empty());
  }
  CHECK(listed == std::vector<std::string>{"grouped", "interleaved", "sequential", "gpipe", "1f1b",
                                           "interleaved_1f1b", "zero_bubble_h1"});
  CHECK(build_schedule("grouped", one_per_ipu(2, 4))->step_based());
  CHECK_FALSE(build_schedule("gpipe", one_per_ipu(2, 4))->step_based());
}

namespace {

// "0>1a 1>0g" for the copies of a step's exchange: from, to, activation or gradient.
std::string exchange_text(const StepSchedule& schedule, std::int64_t step) {
  std::vector<Task> copies;
  if (schedule.copies_every_slot()) {
    schedule.exchange_in_step(step, copies);
  } else {
    std::vector<Task> tasks;
    for (int ipu = 0; ipu < schedule.layout().ipus(); ++ipu) {
      schedule.tasks_in_step(step, ipu, tasks);
      for (const Task& task : tasks) {
        if (task.op == Op::kCopy)
          copies.push_back(task);
      }
    }
  }
  std::string text;
  for (const Task& copy : copies) {
    text += (text.empty() ? "" : " ") + std::to_string(copy.ipu) + ">" +
            std::to_string(copy.peer_ipu) + (copy.copy == CopyKind::kGradient ? "g" : "a");
  }
  return text;
}

}  // namespace

TEST_CASE(
    "a step's exchange: Grouped copies every slot, Interleaved alternate, Sequential as run") {
  const auto shape = one_per_ipu(2, 4);
  const auto grouped = build_schedule("grouped", shape);
  const auto interleaved = build_schedule("interleaved", shape);
  const auto sequential = build_schedule("sequential", shape);
  for (std::int64_t step = 0; step < grouped->as_steps()->steps(); ++step)
    CHECK(exchange_text(*grouped->as_steps(), step) == "0>1a 1>0g");
  // Stage 0's forward slot and stage 1's backward slot fall on even steps; the other two slots
  // copy past the pipeline's ends.
  for (std::int64_t step = 0; step < interleaved->as_steps()->steps(); ++step)
    CHECK(exchange_text(*interleaved->as_steps(), step) == (step % 2 == 0 ? "0>1a 1>0g" : ""));
  // S = 4 slots: F_0 (copies forward), F_1, B_1 (copies back), B_0.
  const char* sequential_steps[] = {"0>1a", "", "1>0g", ""};
  for (std::int64_t step = 0; step < sequential->as_steps()->steps(); ++step)
    CHECK(exchange_text(*sequential->as_steps(), step) == sequential_steps[step % 4]);
}
