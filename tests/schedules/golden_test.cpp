// The step tables of /work/shared/spec/graphcore-schedules.md, cell for cell, the seed
// statement about when the first micro-batch finishes, and the orders of the GPU schedules.

#include <catch2/catch.hpp>

#include "schedules/build.hpp"
#include "schedules/render.hpp"
#include "schedules/step_schedule.hpp"
#include "shapes.hpp"

using namespace ipusim::schedules;
using namespace ipusim::schedules::testing;

namespace {

// N=2 Grouped, M = 8, copied from the spec.
constexpr const char* kGroupedN2 = R"(
| t | ph | IPU0 | IPU1 |
|---|---|---|---|
| 1 | U | F1 | · |
| 2 | U | F2 | F1 |
| 3 | U | F3 | B1 F2 |
| 4 | U | B1 F4 | B2 F3 |
| 5 | M | B2 F5 | B3 F4 |
| 6 | M | B3 F6 | B4 F5 |
| 7 | M | B4 F7 | B5 F6 |
| 8 | M | B5 F8 | B6 F7 |
| 9 | D | B6 | B7 F8 |
| 10 | D | B7 | B8 |
| 11 | D | B8 | · |
| 12 | D | · | · |
)";

// N=2 Interleaved, M = 8, copied from the spec.
constexpr const char* kInterleavedN2 = R"(
| t | ph | IPU0 | IPU1 |
|---|---|---|---|
| 1 | U | F1 | · |
| 2 | U | · | F1 |
| 3 | U | F2 | B1 |
| 4 | U | B1 | F2 |
| 5 | M | F3 | B2 |
| 6 | M | B2 | F3 |
| 7 | M | F4 | B3 |
| 8 | M | B3 | F4 |
| 9 | M | F5 | B4 |
| 10 | M | B4 | F5 |
| 11 | M | F6 | B5 |
| 12 | M | B5 | F6 |
| 13 | M | F7 | B6 |
| 14 | M | B6 | F7 |
| 15 | M | F8 | B7 |
| 16 | M | B7 | F8 |
| 17 | D | · | B8 |
| 18 | D | B8 | · |
| 19 | D | · | · |
| 20 | D | · | · |
)";

// N=3 Grouped, M = 8, copied from the spec.
constexpr const char* kGroupedN3 = R"(
| t | ph | IPU0 | IPU1 | IPU2 |
|---|---|---|---|---|
| 1 | U | F1 | · | · |
| 2 | U | F2 | F1 | · |
| 3 | U | F3 | F2 | F1 |
| 4 | U | F4 | F3 | B1 F2 |
| 5 | U | F5 | B1 F4 | B2 F3 |
| 6 | U | B1 F6 | B2 F5 | B3 F4 |
| 7 | M | B2 F7 | B3 F6 | B4 F5 |
| 8 | M | B3 F8 | B4 F7 | B5 F6 |
| 9 | D | B4 | B5 F8 | B6 F7 |
| 10 | D | B5 | B6 | B7 F8 |
| 11 | D | B6 | B7 | B8 |
| 12 | D | B7 | B8 | · |
| 13 | D | B8 | · | · |
| 14 | D | · | · | · |
)";

// N=3 Interleaved, M = 8, copied from the spec.
constexpr const char* kInterleavedN3 = R"(
| t | ph | IPU0 | IPU1 | IPU2 |
|---|---|---|---|---|
| 1 | U | F1 | · | · |
| 2 | U | · | F1 | · |
| 3 | U | F2 | · | F1 |
| 4 | U | · | F2 | B1 |
| 5 | U | F3 | B1 | F2 |
| 6 | U | B1 | F3 | B2 |
| 7 | M | F4 | B2 | F3 |
| 8 | M | B2 | F4 | B3 |
| 9 | M | F5 | B3 | F4 |
| 10 | M | B3 | F5 | B4 |
| 11 | M | F6 | B4 | F5 |
| 12 | M | B4 | F6 | B5 |
| 13 | M | F7 | B5 | F6 |
| 14 | M | B5 | F7 | B6 |
| 15 | M | F8 | B6 | F7 |
| 16 | M | B6 | F8 | B7 |
| 17 | D | · | B7 | F8 |
| 18 | D | B7 | · | B8 |
| 19 | D | · | B8 | · |
| 20 | D | B8 | · | · |
| 21 | D | · | · | · |
| 22 | D | · | · | · |
)";

// N=4 Grouped, M = 8, copied from the spec.
constexpr const char* kGroupedN4 = R"(
| t | ph | IPU0 | IPU1 | IPU2 | IPU3 |
|---|---|---|---|---|---|
| 1 | U | F1 | · | · | · |
| 2 | U | F2 | F1 | · | · |
| 3 | U | F3 | F2 | F1 | · |
| 4 | U | F4 | F3 | F2 | F1 |
| 5 | U | F5 | F4 | F3 | B1 F2 |
| 6 | U | F6 | F5 | B1 F4 | B2 F3 |
| 7 | U | F7 | B1 F6 | B2 F5 | B3 F4 |
| 8 | U | B1 F8 | B2 F7 | B3 F6 | B4 F5 |
| 9 | D | B2 | B3 F8 | B4 F7 | B5 F6 |
| 10 | D | B3 | B4 | B5 F8 | B6 F7 |
| 11 | D | B4 | B5 | B6 | B7 F8 |
| 12 | D | B5 | B6 | B7 | B8 |
| 13 | D | B6 | B7 | B8 | · |
| 14 | D | B7 | B8 | · | · |
| 15 | D | B8 | · | · | · |
| 16 | D | · | · | · | · |
)";

// N=4 Interleaved, M = 8, copied from the spec.
constexpr const char* kInterleavedN4 = R"(
| t | ph | IPU0 | IPU1 | IPU2 | IPU3 |
|---|---|---|---|---|---|
| 1 | U | F1 | · | · | · |
| 2 | U | · | F1 | · | · |
| 3 | U | F2 | · | F1 | · |
| 4 | U | · | F2 | · | F1 |
| 5 | U | F3 | · | F2 | B1 |
| 6 | U | · | F3 | B1 | F2 |
| 7 | U | F4 | B1 | F3 | B2 |
| 8 | U | B1 | F4 | B2 | F3 |
| 9 | M | F5 | B2 | F4 | B3 |
| 10 | M | B2 | F5 | B3 | F4 |
| 11 | M | F6 | B3 | F5 | B4 |
| 12 | M | B3 | F6 | B4 | F5 |
| 13 | M | F7 | B4 | F6 | B5 |
| 14 | M | B4 | F7 | B5 | F6 |
| 15 | M | F8 | B5 | F7 | B6 |
| 16 | M | B5 | F8 | B6 | F7 |
| 17 | D | · | B6 | F8 | B7 |
| 18 | D | B6 | · | B7 | F8 |
| 19 | D | · | B7 | · | B8 |
| 20 | D | B7 | · | B8 | · |
| 21 | D | · | B8 | · | · |
| 22 | D | B8 | · | · | · |
| 23 | D | · | · | · | · |
| 24 | D | · | · | · | · |
)";

// The table part of render_step_table, with a leading newline like the raw strings above.
std::string table(const std::string& name, const PipelineShape& shape) {
  return "\n" + lines_starting(render_step_table(*build_schedule(name, shape)), "|");
}

std::string orders(const std::string& name, const PipelineShape& shape) {
  return lines_starting(render_step_table(*build_schedule(name, shape)), "IPU");
}

// The 1-based step in which the backward of stage 0 finishes micro-batch 0.
std::int64_t first_backward_end(const Schedule& schedule) {
  std::vector<Task> tasks;
  for (std::int64_t step = 0; step < schedule.as_steps()->steps(); ++step) {
    schedule.as_steps()->tasks_in_step(step, 0, tasks);
    for (const Task& task : tasks) {
      if (task.op == Op::kBackward && task.stage == 0 && task.microbatch == 0)
        return step + 1;
    }
  }
  return -1;
}

// The column where the grouped figure draws that backward: steps without any backward are
// drawn as one column, later steps as two (the backward column, then the forward column).
std::int64_t drawn_column(const Schedule& schedule) {
  std::vector<Task> tasks;
  std::int64_t column = 0;
  for (std::int64_t step = 0; step < schedule.as_steps()->steps(); ++step) {
    bool any_backward = false;
    bool first_ends = false;
    for (int ipu = 0; ipu < schedule.layout().ipus(); ++ipu) {
      schedule.as_steps()->tasks_in_step(step, ipu, tasks);
      for (const Task& task : tasks) {
        any_backward = any_backward || task.op == Op::kBackward;
        first_ends =
            first_ends || (task.op == Op::kBackward && task.stage == 0 && task.microbatch == 0);
      }
    }
    if (first_ends)
      return column + 1;
    column += any_backward ? 2 : 1;
  }
  return -1;
}

}  // namespace

TEST_CASE("grouped and interleaved with 2 and 4 stages reproduce the spec tables for M = 8") {
  CHECK(table("grouped", one_per_ipu(2, 8)) == kGroupedN2);
  CHECK(table("interleaved", one_per_ipu(2, 8)) == kInterleavedN2);
  CHECK(table("grouped", one_per_ipu(4, 8)) == kGroupedN4);
  CHECK(table("interleaved", one_per_ipu(4, 8)) == kInterleavedN4);
}

TEST_CASE("with relaxed divisibility 3 stages and 8 micro-batches follow the closed forms") {
  const auto grouped = build_schedule("grouped", relaxed(one_per_ipu(3, 8)));
  const auto interleaved = build_schedule("interleaved", relaxed(one_per_ipu(3, 8)));
  CHECK(table("grouped", relaxed(one_per_ipu(3, 8))) == kGroupedN3);
  CHECK(table("interleaved", relaxed(one_per_ipu(3, 8))) == kInterleavedN3);
  CHECK(grouped->relaxed());
  CHECK(interleaved->relaxed());
  CHECK(lines_starting(render_step_table(*grouped), "relaxed") ==
        "relaxed divisibility: Graphcore would reject M=8 (the grouped schedule with 3 stages "
        "needs a multiple of 6)\n");
  CHECK(lines_starting(render_step_table(*interleaved), "relaxed") ==
        "relaxed divisibility: Graphcore would reject M=8 (the interleaved schedule with 3 "
        "stages needs a multiple of 3)\n");
}

TEST_CASE("relaxed divisibility is not reported when Graphcore accepts M") {
  CHECK_FALSE(build_schedule("grouped", relaxed(one_per_ipu(3, 12)))->relaxed());
  CHECK(lines_starting(render_step_table(*build_schedule("grouped", relaxed(one_per_ipu(3, 12)))),
                       "relaxed") == "");
}

TEST_CASE("with 4 IPUs the first micro-batch finishes its backward at step 8 in both schedules") {
  CHECK(first_backward_end(*build_schedule("grouped", one_per_ipu(4, 8))) == 8);
  CHECK(first_backward_end(*build_schedule("interleaved", one_per_ipu(4, 8))) == 8);
}

TEST_CASE("the grouped figure draws the end of the first backward at column 11") {
  CHECK(drawn_column(*build_schedule("grouped", one_per_ipu(4, 8))) == 11);
}

TEST_CASE("the rendered summary gives phase counts, stash depths and stash kinds") {
  const std::string text = render_step_table(*build_schedule("grouped", one_per_ipu(2, 8)));
  CHECK(text.substr(text.find("code phases")) ==
        "code phases (steps): ramp-up 4, main 4, ramp-down 4\n"
        "utilisation phases (steps): ramp-up 3, main 5, ramp-down 4 (5 full, 1 trailing "
        "without compute)\n"
        "stash depth per stage: 2 0\n"
        "stash kind per stage: activations activations\n");
}

TEST_CASE("gpipe runs every forward, then every backward in the same micro-batch order") {
  CHECK(orders("gpipe", one_per_ipu(2, 4)) ==
        "IPU0: F1 F2 F3 F4 B1 B2 B3 B4\n"
        "IPU1: F1 F2 F3 F4 B1 B2 B3 B4\n");
}

TEST_CASE("1f1b warms up with N-1-k forwards, alternates, then cools down") {
  CHECK(orders("1f1b", one_per_ipu(4, 8)) ==
        "IPU0: F1 F2 F3 F4 B1 F5 B2 F6 B3 F7 B4 F8 B5 B6 B7 B8\n"
        "IPU1: F1 F2 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 F8 B6 B7 B8\n"
        "IPU2: F1 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 F8 B7 B8\n"
        "IPU3: F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7 F8 B8\n");
}

TEST_CASE("zero_bubble_h1 defers the weight gradients of stage k by k micro-batches") {
  CHECK(orders("zero_bubble_h1", one_per_ipu(4, 8)) ==
        "IPU0: F1 F2 F3 F4 B1 W1 F5 B2 W2 F6 B3 W3 F7 B4 W4 F8 B5 W5 B6 W6 B7 W7 B8 W8\n"
        "IPU1: F1 F2 F3 B1 F4 B2 W1 F5 B3 W2 F6 B4 W3 F7 B5 W4 F8 B6 W5 B7 W6 B8 W7 W8\n"
        "IPU2: F1 F2 B1 F3 B2 F4 B3 W1 F5 B4 W2 F6 B5 W3 F7 B6 W4 F8 B7 W5 B8 W6 W7 W8\n"
        "IPU3: F1 B1 F2 B2 F3 B3 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 W4 F8 B8 W5 W6 W7 W8\n");
}

TEST_CASE("zero_bubble_h1 cuts the unit-time bubble of 1f1b from 3(N-1) to N-1") {
  // F = 1 and B + W = 2 per micro-batch and stage: 3M of work on each IPU.
  CHECK(build_schedule("1f1b", one_per_ipu(4, 8))->phase_counts().makespan == 24 + 9);
  CHECK(build_schedule("zero_bubble_h1", one_per_ipu(4, 8))->phase_counts().makespan == 24 + 3);
}

TEST_CASE("interleaved_1f1b runs Megatron-LM's order for 4 stages on 2 IPUs") {
  CHECK(orders("interleaved_1f1b", round_robin(4, 2, 4)) ==
        "IPU0: F1@0 F2@0 F1@2 F2@2 F3@0 B1@2 F4@0 B2@2 F3@2 B1@0 F4@2 B2@0 B3@2 B4@2 B3@0 "
        "B4@0\n"
        "IPU1: F1@1 F2@1 F1@3 B1@3 F2@3 B2@3 F3@1 B1@1 F4@1 B2@1 F3@3 B3@3 F4@3 B4@3 B3@1 "
        "B4@1\n");
}

// Current Megatron-LM and PyTorch: IPU0 warms up (2 - 1 - 0) x 2 + (2 - 1) x 2 = 4 units, all of
// them; the last IPU only (2 - 1) x 2 = 2, so its 1F1B phase starts at its second chunk, where
// Megatron-LM before November 2024 ran every forward first (F1@3 F2@3 B1@3 B2@3).
TEST_CASE(
    "interleaved_1f1b with M equal to the IPUs starts 1F1B on the last IPU, as Megatron-LM does") {
  CHECK(orders("interleaved_1f1b", round_robin(4, 2, 2)) ==
        "IPU0: F1@0 F2@0 F1@2 F2@2 B1@2 B2@2 B1@0 B2@0\n"
        "IPU1: F1@1 F2@1 F1@3 B1@3 F2@3 B2@3 B1@1 B2@1\n");
}
