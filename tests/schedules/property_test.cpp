// Invariants of every builder over many pipeline sizes (see audit.hpp for what is checked).

#include <catch2/catch.hpp>

#include "audit.hpp"
#include "schedules/build.hpp"
#include "shapes.hpp"

using namespace ipusim::schedules;
using namespace ipusim::schedules::testing;

namespace {

void check_audit(const std::string& name, const PipelineShape& shape) {
  const auto schedule = build_schedule(name, shape);
  const std::string failure = audit(*schedule);
  INFO(name << " N=" << shape.stages() << " IPUs=" << shape.ipus() << " M=" << shape.microbatches);
  CHECK(failure == "");
}

}  // namespace

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
  for (int n = 1; n <= 8; ++n) {
    for (int ipus = 1; ipus <= n; ++ipus) {
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
