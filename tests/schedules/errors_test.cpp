// User mistakes in a pipeline shape: each is a ScheduleError naming the option at fault, with
// Graphcore's (or Megatron-LM's) wording where those tools have one.

#include <catch2/catch.hpp>

#include "schedules/build.hpp"
#include "schedules/step_schedule.hpp"
#include "shapes.hpp"

using namespace ipusim::schedules;
using namespace ipusim::schedules::testing;

namespace {

// The error that building throws, or a default one whose message says nothing was thrown.
ScheduleError error_of(const std::string& name, const PipelineShape& shape) {
  try {
    build_schedule(name, shape);
  } catch (const ScheduleError& error) {
    return error;
  }
  return ScheduleError(ScheduleOption::kPipelineSchedule, "no error");
}

std::string divisibility_message(const std::string& name, int n, std::int64_t m,
                                 std::int64_t lanes) {
  const char* rule = m % lanes != 0 ? "a multiple of " : "at least ";
  return "The number of iterations of the pipeline must be " + std::string(rule) +
         std::to_string(lanes) + ", but it is " + std::to_string(m) +
         ". This number is gradient_accumulation_count; the " + name + " schedule with " +
         std::to_string(n) + (n == 1 ? " stage" : " stages") + " runs " + std::to_string(lanes) +
         (lanes == 1 ? " micro-batch" : " micro-batches") +
         " at once (set pipeline.relaxed_divisibility to explore it anyway)";
}

}  // namespace

TEST_CASE("an illegal M is rejected with Graphcore's message") {
  const ScheduleError grouped = error_of("grouped", one_per_ipu(3, 8));
  CHECK(grouped.option() == ScheduleOption::kGradientAccumulationCount);
  CHECK(std::string(grouped.what()) ==
        "The number of iterations of the pipeline must be a multiple of 6, but it is 8. This "
        "number is gradient_accumulation_count; the grouped schedule with 3 stages runs 6 "
        "micro-batches at once (set pipeline.relaxed_divisibility to explore it anyway)");
  CHECK(std::string(error_of("interleaved", one_per_ipu(3, 8)).what()) ==
        "The number of iterations of the pipeline must be a multiple of 3, but it is 8. This "
        "number is gradient_accumulation_count; the interleaved schedule with 3 stages runs 3 "
        "micro-batches at once (set pipeline.relaxed_divisibility to explore it anyway)");
}

TEST_CASE("M = 0 fails Graphcore's second rule, as TF checks the multiple first") {
  CHECK(std::string(error_of("grouped", one_per_ipu(2, 0)).what()) ==
        "The number of iterations of the pipeline must be at least 4, but it is 0. This "
        "number is gradient_accumulation_count; the grouped schedule with 2 stages runs 4 "
        "micro-batches at once (set pipeline.relaxed_divisibility to explore it anyway)");
}

TEST_CASE("inference pipelines need M to be a multiple of the number of stages") {
  PipelineShape shape = one_per_ipu(3, 4);
  shape.training = false;
  CHECK(std::string(error_of("grouped", shape).what()) ==
        "The number of iterations of the pipeline must be a multiple of 3, but it is 4. This "
        "number is gradient_accumulation_count; the grouped schedule with 3 stages runs 3 "
        "micro-batches at once in inference (set pipeline.relaxed_divisibility to explore it "
        "anyway)");
}

TEST_CASE("every illegal M up to 64 is rejected and every legal one accepted") {
  for (int n = 1; n <= 8; ++n) {
    for (int m = 0; m <= 64; ++m) {
      for (const auto& [name, lanes] :
           {std::pair<std::string, int>{"grouped", 2 * n}, {"interleaved", n}, {"sequential", 1}}) {
        INFO(name << " N=" << n << " M=" << m);
        if (m % lanes == 0 && m >= lanes) {
          CHECK_FALSE(build_schedule(name, one_per_ipu(n, m))->relaxed());
          continue;
        }
        const ScheduleError error = error_of(name, one_per_ipu(n, m));
        CHECK(std::string(error.what()) == divisibility_message(name, n, m, lanes));
        CHECK(error.option() == ScheduleOption::kGradientAccumulationCount);
        if (m >= 1)
          CHECK(build_schedule(name, relaxed(one_per_ipu(n, m)))->relaxed());
      }
    }
  }
}

TEST_CASE(
    "an M that makes more than 2^60 tasks in a repeat is refused with the largest M that fits") {
  // 2 stages: infeed, F, copy and B on IPU0; F, outfeed, B and copy on IPU1.
  const std::int64_t largest = (std::int64_t{1} << 60) / 8;
  CHECK(build_schedule("grouped", one_per_ipu(2, largest))->as_steps()->steps() == largest + 4);
  const ScheduleError error = error_of("grouped", one_per_ipu(2, largest + 4));
  CHECK(error.option() == ScheduleOption::kGradientAccumulationCount);
  CHECK(std::string(error.what()) ==
        "gradient_accumulation_count is 144115188075855876, but each micro-batch gives this "
        "pipeline 8 tasks and ipusim counts at most 2^60 tasks in one repeat, so it can be at "
        "most 144115188075855872");
}

TEST_CASE("a config-sized M is refused when concurrent stages multiply the copies") {
  // Two stages on the same 1024 IPUs: each IPU runs F and B of both stages, the infeed, the
  // outfeed and 1023 copies each way: 2 * 1024 * 1026 tasks per micro-batch.
  PipelineShape shape = one_per_ipu(2, std::int64_t{1} << 40);
  shape.device_mapping.assign(2, {});
  for (int ipu = 0; ipu < 1024; ++ipu) {
    shape.device_mapping[0].push_back(ipu);
    shape.device_mapping[1].push_back(ipu);
  }
  CHECK(std::string(error_of("grouped", shape).what()) ==
        "gradient_accumulation_count is 1099511627776, but each micro-batch gives this "
        "pipeline 2101248 tasks and ipusim counts at most 2^60 tasks in one repeat, so it can be "
        "at most 548684165127");
}

TEST_CASE("relaxed divisibility still needs at least one micro-batch") {
  CHECK(std::string(error_of("grouped", relaxed(one_per_ipu(2, 0))).what()) ==
        "gradient_accumulation_count must be at least 1, but it is 0");
  CHECK(std::string(error_of("1f1b", one_per_ipu(2, 0)).what()) ==
        "gradient_accumulation_count must be at least 1, but it is 0");
}

TEST_CASE("an unknown schedule lists the known ones and suggests the closest") {
  const ScheduleError error = error_of("groupd", one_per_ipu(2, 4));
  CHECK(error.option() == ScheduleOption::kPipelineSchedule);
  CHECK(std::string(error.what()) ==
        "unknown pipeline schedule 'groupd'; expected 'grouped', 'interleaved', 'sequential', "
        "'gpipe', '1f1b', 'interleaved_1f1b' or 'zero_bubble_h1'; did you mean 'grouped'?");
}

TEST_CASE("interleaved refuses two training stages on one IPU with TF's message") {
  PipelineShape shape = one_per_ipu(3, 6);
  shape.device_mapping = {{0}, {1}, {0}};
  const ScheduleError error = error_of("interleaved", shape);
  CHECK(error.option() == ScheduleOption::kDeviceMapping);
  CHECK(std::string(error.what()) ==
        "The pipelining schedule 'Interleaved' does not currently support multiple pipeline "
        "stages on the same device for training graphs. Please use a different pipeline "
        "schedule. (stages 0 and 2 are both on IPU 0)");
  shape.training = false;
  CHECK(build_schedule("interleaved", shape)->name() == "interleaved");
  CHECK(build_schedule("grouped", one_per_ipu(3, 6))->name() == "grouped");
}

TEST_CASE("gpu schedules other than interleaved_1f1b run one stage per IPU") {
  const ScheduleError error = error_of("1f1b", round_robin(4, 2, 8));
  CHECK(error.option() == ScheduleOption::kDeviceMapping);
  CHECK(std::string(error.what()) ==
        "the 1f1b schedule runs one stage per IPU, but stages 0 and 2 are both on IPU 0 "
        "(grouped and sequential run several stages on one IPU, and so does interleaved_1f1b with "
        "stage k on IPU k mod the IPU count)");
}

TEST_CASE("interleaved_1f1b needs stage k on IPU k mod P and M a multiple of P") {
  PipelineShape shape = round_robin(4, 2, 8);
  shape.device_mapping = {{0}, {1}, {1}, {0}};
  CHECK(std::string(error_of("interleaved_1f1b", shape).what()) ==
        "the interleaved_1f1b schedule places stage k on IPU k mod 2 (Megatron-LM's virtual "
        "stages), but stage 2 is on IPU 1");
  CHECK(std::string(error_of("interleaved_1f1b", round_robin(3, 2, 8)).what()) ==
        "the interleaved_1f1b schedule needs the same number of stages on every IPU, but 3 "
        "stages do not divide evenly over 2 IPUs");
  const ScheduleError count = error_of("interleaved_1f1b", round_robin(4, 2, 5));
  CHECK(count.option() == ScheduleOption::kGradientAccumulationCount);
  CHECK(std::string(count.what()) ==
        "number of microbatches (5) is not divisible by pipeline-model-parallel-size (2) when "
        "using interleaved schedule (Megatron-LM's rule for interleaved_1f1b)");
}

TEST_CASE("interleaved_1f1b with one stage per IPU is refused: there is nothing to interleave") {
  for (const auto& shape : {one_per_ipu(4, 8), one_per_ipu(1, 8)}) {
    const ScheduleError error = error_of("interleaved_1f1b", shape);
    CHECK(error.option() == ScheduleOption::kDeviceMapping);
  }
  CHECK(std::string(error_of("interleaved_1f1b", one_per_ipu(4, 8)).what()) ==
        "the interleaved_1f1b schedule interleaves two or more stages on each IPU (Megatron-LM's "
        "virtual stages), but these 4 stages are one per IPU: split the model into 8 stages or "
        "more, stage k on IPU k mod 4, or run 1f1b");
}

TEST_CASE("device mapping mistakes name the stage") {
  PipelineShape shape = one_per_ipu(2, 4);
  shape.device_mapping = {{0}, {}};
  CHECK(std::string(error_of("grouped", shape).what()) == "stage 1 has no IPU");
  shape.device_mapping = {{0}, {-1}};
  CHECK(std::string(error_of("grouped", shape).what()) ==
        "stage 1 is mapped to IPU -1; IPU ids start at 0");
  shape.device_mapping = {{0}, {1, 1}};
  CHECK(std::string(error_of("grouped", shape).what()) == "stage 1 lists IPU 1 twice");
  shape.device_mapping = {};
  const ScheduleError empty = error_of("grouped", shape);
  CHECK(empty.option() == ScheduleOption::kDeviceMapping);
  CHECK(std::string(empty.what()) ==
        "the pipeline needs at least one stage, but device_mapping is empty");
}

TEST_CASE("repeat_count and replicas must be positive") {
  PipelineShape shape = one_per_ipu(2, 4);
  shape.repeat_count = 0;
  CHECK(error_of("grouped", shape).option() == ScheduleOption::kRepeatCount);
  CHECK(std::string(error_of("grouped", shape).what()) ==
        "repeat_count must be at least 1, but it is 0");
  shape.repeat_count = 1;
  shape.replicas = 0;
  CHECK(std::string(error_of("grouped", shape).what()) ==
        "replicas must be at least 1, but it is 0");
}

TEST_CASE("recomputation modes are checked against the schedule") {
  const auto message = [](const std::string& name, RecomputationMode mode) {
    try {
      resolve_recomputation(name, mode);
    } catch (const ScheduleError& error) {
      CHECK(error.option() == ScheduleOption::kRecomputationMode);
      return std::string(error.what());
    }
    return std::string("accepted");
  };
  const auto then = RecomputationMode::kRecomputeThenBackpropagate;
  const auto interleaved = RecomputationMode::kRecomputeAndBackpropagateInterleaved;
  CHECK(message("sequential", then) ==
        "recomputation mode recompute_then_backpropagate is supported only by the grouped and "
        "interleaved schedules, not by sequential");
  CHECK(message("1f1b", then) ==
        "recomputation mode recompute_then_backpropagate is supported only by the grouped and "
        "interleaved schedules, not by 1f1b");
  CHECK(message("interleaved", interleaved) ==
        "recomputation mode recompute_and_backpropagate_interleaved is supported only by the "
        "grouped and sequential schedules (and the GPU schedules), not by interleaved");
  CHECK(message("grouped", then) == "accepted");
  CHECK(message("grouped", interleaved) == "accepted");
  CHECK(message("zero_bubble_h1", interleaved) == "accepted");
}

TEST_CASE("auto recomputation resolves as Graphcore does") {
  const auto auto_mode = RecomputationMode::kAuto;
  CHECK(resolve_recomputation("grouped", auto_mode) ==
        RecomputationMode::kRecomputeThenBackpropagate);
  CHECK(resolve_recomputation("interleaved", auto_mode) ==
        RecomputationMode::kRecomputeThenBackpropagate);
  CHECK(resolve_recomputation("sequential", auto_mode) ==
        RecomputationMode::kRecomputeAndBackpropagateInterleaved);
  CHECK(resolve_recomputation("1f1b", auto_mode) ==
        RecomputationMode::kRecomputeAndBackpropagateInterleaved);
  CHECK(resolve_recomputation("grouped", RecomputationMode::kNone) == RecomputationMode::kNone);
}

TEST_CASE("schedule options map to their config keys") {
  CHECK(option_key(ScheduleOption::kGradientAccumulationCount) == "gradient_accumulation_count");
  CHECK(option_key(ScheduleOption::kDeviceMapping) == "device_mapping");
  CHECK(option_key(ScheduleOption::kRecomputationMode) == "recomputation_mode");
  CHECK(option_key(ScheduleOption::kPipelineSchedule) == "pipeline_schedule");
}

TEST_CASE("a schedule that refuses a layout names the one it runs on the same IPUs") {
  const auto head_back = round_robin(5, 4, 8);  // stages 0..3 on IPUs 0..3, stage 4 on IPU0
  for (const std::string name : {"interleaved", "gpipe", "1f1b", "zero_bubble_h1"})
    CHECK(relayout_mapping(name, head_back) == std::vector<int>{0, 1, 2, 3});
  CHECK(relayout_mapping("interleaved_1f1b", head_back) ==
        std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3});
  // One stage per IPU is not interleaving either.
  CHECK(relayout_mapping("interleaved_1f1b", one_per_ipu(4, 8)) ==
        std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3});
}

TEST_CASE("a layout the schedule takes, or a refusal for another reason, is not relaid out") {
  CHECK(relayout_mapping("grouped", round_robin(5, 4, 8)).empty());
  CHECK(relayout_mapping("sequential", round_robin(5, 4, 8)).empty());
  CHECK(relayout_mapping("1f1b", one_per_ipu(4, 8)).empty());
  CHECK(relayout_mapping("interleaved_1f1b", round_robin(8, 4, 8)).empty());
  // Megatron-LM's M rule, not the layout: M 6 is no multiple of 4 IPUs.
  CHECK(relayout_mapping("interleaved_1f1b", round_robin(8, 4, 6)).empty());
  // An unknown name is the spec's to refuse, with did-you-mean.
  CHECK(relayout_mapping("1fb1", round_robin(5, 4, 8)).empty());
}
