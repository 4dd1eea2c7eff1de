// Invariants of every builder over many pipeline sizes (see audit.hpp for what is checked), and
// the phases of the dependency-ordered builders against a unit-time simulation of the whole
// program (see unit_time.hpp).

#include <catch2/catch.hpp>

#include "audit.hpp"
#include "schedules/build.hpp"
#include "schedules/schedule_error.hpp"
#include "shapes.hpp"
#include "unit_time.hpp"

using namespace ipusim::schedules;
using namespace ipusim::schedules::testing;

namespace {

void check_audit(const std::string& name, const PipelineShape& shape) {
  const auto schedule = build_schedule(name, shape);
  const std::string failure = audit(*schedule);
  INFO(name << " N=" << shape.stages() << " IPUs=" << shape.ipus() << " M=" << shape.microbatches);
  CHECK(failure == "");
}

// The shape as given, with recompute_and_backpropagate_interleaved, and in inference.
std::vector<PipelineShape> variants(const PipelineShape& shape) {
  PipelineShape recomputing = shape;
  recomputing.recomputation = RecomputationMode::kRecomputeAndBackpropagateInterleaved;
  PipelineShape inference = shape;
  inference.training = false;
  return {shape, recomputing, inference};
}

void check_phases(const std::string& name, const PipelineShape& shape) {
  for (const PipelineShape& variant : variants(shape)) {
    const auto schedule = build_schedule(name, variant);
    INFO(name << " N=" << shape.stages() << " IPUs=" << shape.ipus() << " M=" << shape.microbatches
              << " training=" << variant.training
              << " recomputation=" << (variant.recomputation != RecomputationMode::kNone));
    CHECK(compare_with_unit_time(*schedule) == "");
  }
}

// The first run read with program_tasks (from every start, in runs of a few lengths) that
// differs from program_task's tasks, or "".
std::string compare_runs(const Schedule& schedule) {
  for (int ipu = 0; ipu < schedule.layout().ipus(); ++ipu) {
    const std::int64_t length = schedule.program_length(ipu);
    for (std::int64_t first = 0; first <= length; ++first) {
      for (std::size_t run : {1, 5, 64}) {
        std::vector<Task> tasks(run);
        const std::size_t read = schedule.program_tasks(ipu, first, tasks);
        const auto expected = static_cast<std::size_t>(
            std::min<std::int64_t>(static_cast<std::int64_t>(run), length - first));
        bool same = read == expected;
        for (std::size_t i = 0; same && i < read; ++i)
          same = tasks[i] == schedule.program_task(ipu, first + static_cast<std::int64_t>(i));
        if (!same)
          return "IPU" + std::to_string(ipu) + " from " + std::to_string(first) + " in runs of " +
                 std::to_string(run);
      }
    }
  }
  return "";
}

}  // namespace

TEST_CASE("a program read in runs holds the tasks read one by one, for every builder") {
  std::vector<PipelineShape> shapes;
  for (int m : {1, 3, 8, 13}) {
    for (const PipelineShape& variant : variants(relaxed(one_per_ipu(4, m))))
      shapes.push_back(variant);
    shapes.push_back(relaxed(round_robin(8, 4, 4 * m)));
    PipelineShape concurrent = relaxed(one_per_ipu(3, m));
    concurrent.device_mapping = {{0}, {1, 2}, {3}};
    shapes.push_back(concurrent);
  }
  for (const auto& info : schedule_catalogue()) {
    for (const PipelineShape& shape : shapes) {
      std::unique_ptr<Schedule> schedule;
      try {
        schedule = build_schedule(info.name, shape);
      } catch (const ScheduleError&) {
        continue;  // a shape this schedule refuses
      }
      INFO(info.name << " N=" << shape.stages() << " IPUs=" << shape.ipus()
                     << " M=" << shape.microbatches);
      CHECK(compare_runs(*schedule) == "");
    }
  }
}

TEST_CASE("every graphcore schedule keeps its invariants for N up to 8 and M up to 64") {
  for (const std::string name : {"grouped", "interleaved", "sequential"}) {
    for (int n = 1; n <= 8; ++n) {
      for (int m = 1; m <= 64; ++m)
        check_audit(name, relaxed(one_per_ipu(n, m)));
    }
  }
}

TEST_CASE("every gpu schedule keeps its invariants for N up to 8 and M up to 64") {
  for (const std::string name : {"gpipe", "1f1b", "zero_bubble_h1"}) {
    for (int n = 1; n <= 8; ++n) {
      for (int m = 1; m <= 64; ++m)
        check_audit(name, one_per_ipu(n, m));
    }
  }
}

TEST_CASE("interleaved_1f1b keeps its invariants for every even split of stages over IPUs") {
  for (int n = 2; n <= 8; ++n) {
    for (int ipus = 1; 2 * ipus <= n; ++ipus) {
      if (n % ipus != 0)
        continue;
      for (int m = ipus; m <= 64; m += ipus)
        check_audit("interleaved_1f1b", round_robin(n, ipus, m));
    }
  }
}

TEST_CASE("recomputation, inference, replicas and odd mappings keep the invariants") {
  for (int m : {1, 2, 3, 5, 8, 12, 24, 40}) {
    PipelineShape shape = relaxed(one_per_ipu(4, m));
    shape.replicas = 2;
    for (auto mode : {RecomputationMode::kRecomputeThenBackpropagate,
                      RecomputationMode::kRecomputeAndBackpropagateInterleaved}) {
      shape.recomputation = mode;
      for (const std::string name :
           {"grouped", "interleaved", "sequential", "gpipe", "1f1b", "zero_bubble_h1"}) {
        const bool valid = mode == RecomputationMode::kRecomputeThenBackpropagate
                               ? name == "grouped" || name == "interleaved"
                               : name != "interleaved";
        if (valid)
          check_audit(name, shape);
      }
    }
    PipelineShape inference = relaxed(one_per_ipu(3, m));
    inference.training = false;
    for (const std::string name :
         {"grouped", "interleaved", "sequential", "gpipe", "1f1b", "zero_bubble_h1"})
      check_audit(name, inference);
    PipelineShape concurrent = relaxed(one_per_ipu(3, m));
    concurrent.device_mapping = {{0}, {1, 2}, {2, 3}, {0}};
    check_audit("grouped", concurrent);
    check_audit("sequential", concurrent);
    concurrent.device_mapping = {{0}, {1, 2}, {3}};
    for (const std::string name : {"interleaved", "gpipe", "1f1b", "zero_bubble_h1"})
      check_audit(name, concurrent);
    PipelineShape shared = relaxed(round_robin(5, 2, m));
    check_audit("grouped", shared);
    check_audit("sequential", shared);
  }
}

TEST_CASE("gpu schedule phases match the unit-time simulation for N up to 8 and M up to 64") {
  for (const std::string name : {"gpipe", "1f1b", "zero_bubble_h1"}) {
    for (int n = 1; n <= 8; ++n) {
      for (int m = 1; m <= 64; ++m)
        check_phases(name, one_per_ipu(n, m));
    }
  }
}

TEST_CASE("interleaved_1f1b phases match the unit-time simulation for every even split") {
  for (int n = 2; n <= 8; ++n) {
    for (int ipus = 1; 2 * ipus <= n; ++ipus) {
      if (n % ipus != 0)
        continue;
      for (int m = ipus; m <= 64; m += ipus)
        check_phases("interleaved_1f1b", round_robin(n, ipus, m));
    }
  }
}

TEST_CASE("gpu schedule phases match the unit-time simulation for longer pipelines") {
  for (int n : {12, 16, 24}) {
    for (int m = 1; m <= 3 * n + 8; ++m) {
      for (const std::string name : {"gpipe", "1f1b", "zero_bubble_h1"})
        check_phases(name, one_per_ipu(n, m));
    }
    for (int ipus : {n / 4, n / 2}) {
      for (int m = ipus; m <= n + 6 * ipus; m += ipus)
        check_phases("interleaved_1f1b", round_robin(n, ipus, m));
    }
  }
  for (int ipus : {2, 3}) {
    for (int chunks : {16, 32}) {
      for (int m = ipus; m <= 6 * ipus; m += ipus)
        check_phases("interleaved_1f1b", round_robin(ipus * chunks, ipus, m));
    }
  }
}

TEST_CASE("gpu schedule phases match the unit-time simulation with concurrent and skipped IPUs") {
  for (int m = 1; m <= 32; ++m) {
    for (const auto& mapping : {std::vector<std::vector<int>>{{0}, {1, 2}, {3}},
                                std::vector<std::vector<int>>{{0}, {2}, {3, 5}, {4}}}) {
      PipelineShape shape = one_per_ipu(1, m);
      shape.device_mapping = mapping;
      for (const std::string name : {"gpipe", "1f1b", "zero_bubble_h1"})
        check_phases(name, shape);
    }
  }
}
