// One account of what a stage holds (README, Memory): less recomputation never needs less
// memory, and no task holds more than its stage's entries, one micro-batch's whole saved state
// and its temporaries, whatever the mode.

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "sim/core/config_file.hpp"
#include "sim/machine/cost_model.hpp"
#include "sim/run/run.hpp"

using namespace ipusim;

namespace {

sim::RunSpec load_with(const std::string& path, const std::vector<std::string>& sets) {
  std::vector<core::Override> overrides;
  for (const auto& set : sets)
    overrides.push_back(core::parse_set_argument(set));
  return sim::load_run_spec(path, overrides);
}

std::vector<std::string> mode_sets(const std::string& mode, bool checkpoints) {
  return {
      "pipeline.recomputation_mode=\"" + mode + "\"",
      "pipeline.recompute_checkpoint_every_layer=" + std::string(checkpoints ? "true" : "false")};
}

sim::RunReport run_allowing_oom(const std::string& config, const std::vector<std::string>& sets) {
  sim::SimulateOptions options;
  options.allow_oom = true;
  options.numeric = sim::NumericMode::kOff;
  return sim::simulate(load_with(config, sets), options);
}

// The most a task of `ipu` may hold beside the entries: its temporaries and the larger of its
// layers' outputs and their whole saved state, for one micro-batch.
std::int64_t running_bound(const sim::RunSpec& spec, const sim::CostModel& cost, int ipu) {
  std::int64_t bound = 0;
  for (std::size_t s = 0; s < spec.pipeline.stages.size(); ++s) {
    const auto& stage = spec.pipeline.stages[s];
    for (std::size_t j = 0; j < stage.ipus.size(); ++j) {
      if (stage.ipus[j] != ipu)
        continue;
      std::int64_t outputs = 0, saved = 0;
      for (int layer : stage.substage_layers[j]) {
        outputs += spec.model.info[layer].live_bytes;
        saved += spec.model.info[layer].saved_bytes;
      }
      const std::int64_t batch = spec.pipeline.micro_batch_size;
      bound = std::max(bound, cost.stages[s][j].temporary_bytes + std::max(outputs, saved) * batch);
    }
  }
  return bound;
}

const std::vector<std::string> kTransformers = {"configs/bert_large_4ipu.json",
                                                "configs/examples/gpt2_small_pod16.json"};

}  // namespace

TEST_CASE("on the shipped transformers, less recomputation never needs less memory") {
  for (const auto& config : kTransformers) {
    const auto none = run_allowing_oom(config, mode_sets("none", false));
    const auto then = run_allowing_oom(config, mode_sets("recompute_then_backpropagate", false));
    const auto interleaved =
        run_allowing_oom(config, mode_sets("recompute_and_backpropagate_interleaved", false));
    for (std::size_t ipu = 0; ipu < none.replay.ipus.size(); ++ipu) {
      INFO(config << " IPU" << ipu);
      // Recomputation adds its compute sets' code (always live), so the peaks compare without it.
      const auto peak = [&](const sim::RunReport& r) {
        const auto& at = r.replay.ipus[ipu];
        return at.peak_memory_bytes -
               sim::bytes_of(at.memory_at_peak, sim::MemoryCategory::kAlwaysLive);
      };
      CHECK(peak(none) > peak(then));
      CHECK(peak(none) > peak(interleaved));
    }
  }
}

TEST_CASE("no task holds more than one micro-batch's whole saved state beside the entries") {
  for (const auto& config : kTransformers) {
    for (const auto& [mode, checkpoints] : std::vector<std::pair<std::string, bool>>{
             {"none", false},
             {"recompute_then_backpropagate", false},
             {"recompute_and_backpropagate_interleaved", false},
             {"recompute_and_backpropagate_interleaved", true}}) {
      const auto spec = load_with(config, mode_sets(mode, checkpoints));
      const auto cost = sim::build_cost_model(spec);
      const auto report = run_allowing_oom(config, mode_sets(mode, checkpoints));
      for (int ipu = 0; ipu < int(report.replay.ipus.size()); ++ipu) {
        INFO(config << " " << mode << (checkpoints ? " with checkpoints" : "") << " IPU" << ipu);
        const auto& at_peak = report.replay.ipus[ipu].memory_at_peak;
        const auto activations = sim::bytes_of(at_peak, sim::MemoryCategory::kActivations);
        CHECK(activations <= running_bound(spec, cost, ipu));
        // The recomputing modes hold the whole rebuilt state somewhere in the step: at the
        // peak, with the entries, it is more than the entries alone.
        CHECK(report.replay.ipus[ipu].peak_memory_bytes > report.replay.ipus[ipu].peak_stash_bytes);
      }
    }
  }
}
