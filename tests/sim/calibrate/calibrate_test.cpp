#include "sim/calibrate/calibrate.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "sim/core/error.hpp"
#include "sim/machine/cost_model.hpp"
#include "sim/report/report.hpp"
#include "tests/test_support.hpp"

namespace {

namespace fs = std::filesystem;
using namespace ipusim;
using sim::FitStatus;

const std::string kBert = "configs/bert_large_4ipu.json";
const std::string kTf1 = "configs/tf1_mnist_2ipu.json";

// Most cases fit the fitted formula's parameters: the chips' presets price as planned, where
// the classes' efficiencies act only on what Poplar does not plan.
const std::string kFittedPricing = "hardware.operations.pricing=\"fitted\"";

// The IPUs the synthetic measurements come from: parameters far from every preset's.
const std::map<std::string, double> kHidden = {
    {"compute_set_cycles", 173},     {"exchange_bytes_per_tile_cycle", 3.1},
    {"matmul.efficiency", 0.52},     {"elementwise.efficiency", 0.27},
    {"non_linear.efficiency", 0.15}, {"reduction.efficiency", 0.08},
    {"gather.efficiency", 0.05},     {"plan_scale", 1.7}};

std::vector<core::Override> overrides_of(const std::vector<std::string>& set) {
  std::vector<core::Override> out;
  for (const auto& entry : set)
    out.push_back(core::parse_set_argument(entry));
  return out;
}

std::vector<std::string> hidden_overrides() {
  std::vector<std::string> out;
  for (const auto& [name, value] : kHidden)
    out.push_back("hardware.operations." + name + "=" + std::to_string(value));
  return out;
}

// The cycles of each measurement of `spec`'s variant: a stage's pass from the cost model, a
// step from the replay.
std::vector<double> cycles_of(const sim::RunSpec& spec, const std::vector<sim::Measurement>& of) {
  const auto cost = sim::build_cost_model(spec);
  sim::SimulateOptions options;
  options.allow_oom = true;
  std::vector<double> out;
  for (const auto& measured : of) {
    if (measured.what == sim::Measured::kStep)
      out.push_back(double(sim::simulate(spec, options).replay.step_cycles));
    else if (measured.what == sim::Measured::kForward)
      out.push_back(double(cost.substage(measured.stage, 0).forward_cycles));
    else
      out.push_back(double(cost.substage(measured.stage, 0).backward_cycles));
  }
  return out;
}

// What IPUs with the hidden parameters measure for `config` with `set`: each stage's forward
// and backward pass, and the step when `step`.
void measure(const std::string& config, const std::vector<std::string>& set, bool step,
             std::vector<sim::Measurement>& out, bool fitted = true) {
  auto with_hidden = set;
  for (const auto& entry : hidden_overrides())
    with_hidden.push_back(entry);
  if (fitted)
    with_hidden.push_back(kFittedPricing);
  const auto spec = sim::load_run_spec(config, overrides_of(with_hidden));
  std::vector<sim::Measurement> made;
  const sim::MeasurementSource source{"synthetic.csv", "", out.size() + 2};
  for (int s = 0; s < int(spec.pipeline.stages.size()); ++s) {
    made.push_back({set, sim::Measured::kForward, s, 0, source, {}});
    made.push_back({set, sim::Measured::kBackward, s, 0, source, {}});
  }
  if (step)
    made.push_back({set, sim::Measured::kStep, -1, 0, source, {}});
  const auto cycles = cycles_of(spec, made);
  for (std::size_t i = 0; i < made.size(); ++i) {
    made[i].cycles = cycles[i];
    out.push_back(made[i]);
  }
}

// Recomputing whole stages (auto): with a checkpoint at every encoder, as the config runs, the
// fit leaves the classes 2% apart. A whole stage rebuilt at micro-batch 16 needs 1.25 GB, so
// these IPUs have room for it: the fit is of time.
std::vector<sim::Measurement> bert_measurements() {
  const std::vector<std::string> whole = {"pipeline.recomputation_mode=\"auto\"",
                                          "pipeline.recompute_checkpoint_every_layer=false",
                                          "hardware.memory_per_ipu=\"2GB\""};
  const auto with = [&](std::vector<std::string> sets) {
    sets.insert(sets.end(), whole.begin(), whole.end());
    return sets;
  };
  std::vector<sim::Measurement> out;
  measure(kBert, with({"pipeline.micro_batch_size=2"}), false, out);
  measure(kBert, with({"pipeline.micro_batch_size=4"}), false, out);
  measure(kBert, with({}), true, out);
  measure(kBert, with({"pipeline.micro_batch_size=16", "pipeline.gradient_accumulation_count=60"}),
          true, out);
  return out;
}

std::vector<sim::Measurement> tf1_measurements() {
  std::vector<sim::Measurement> out;
  measure(kTf1, {"pipeline.micro_batch_size=8"}, false, out);
  measure(kTf1, {}, true, out);
  measure(kTf1, {"pipeline.micro_batch_size=256"}, true, out);
  measure(kTf1, {"pipeline.micro_batch_size=2048"}, false, out);
  return out;
}

core::ConfigDocument fitted_config(const std::string& config) {
  return core::ConfigDocument::load(config, overrides_of({kFittedPricing}));
}

sim::Calibration calibrate(const std::string& config,
                           const std::vector<sim::Measurement>& measured) {
  return sim::calibrate(fitted_config(config), measured);
}

const sim::CalibratedParameter& parameter(const sim::Calibration& calibration,
                                          const std::string& name) {
  for (const auto& p : calibration.parameters) {
    if (p.name == name)
      return p;
  }
  FAIL("no parameter " << name);
  throw;
}

// Every parameter the measurements depend on comes back within 1%, and so does every
// measurement.
void check_recovered(const sim::Calibration& calibration, const std::vector<std::string>& names) {
  for (const auto& name : names) {
    const auto& p = parameter(calibration, name);
    INFO(name << ": fitted " << p.fitted);
    CHECK(p.status == FitStatus::kFitted);
    CHECK(std::abs(p.fitted / kHidden.at(name) - 1) < 0.01);
  }
  for (const auto& fit : calibration.measurements) {
    INFO(sim::describe(fit.measurement) << " of variant " << fit.measurement.set.size());
    CHECK(std::abs(fit.after / fit.measurement.cycles - 1) < 0.01);
  }
}

}  // namespace

TEST_CASE("a fit to BERT-Large at four micro-batch sizes recovers the parameters it hides") {
  const auto calibration = calibrate(kBert, bert_measurements());
  check_recovered(calibration,
                  {"compute_set_cycles", "exchange_bytes_per_tile_cycle", "matmul.efficiency",
                   "elementwise.efficiency", "non_linear.efficiency", "reduction.efficiency",
                   "gather.efficiency"});
  CHECK(parameter(calibration, "conv.efficiency").status == FitStatus::kUnconstrained);
  CHECK(parameter(calibration, "copy.efficiency").status == FitStatus::kUnconstrained);
  CHECK(calibration.variants == 4);
}

TEST_CASE("under planned pricing a fit recovers plan_scale and what Poplar does not plan") {
  std::vector<sim::Measurement> measured;
  measure(kBert, {"pipeline.micro_batch_size=2"}, false, measured, false);
  measure(kBert, {}, true, measured, false);
  const auto calibration = sim::calibrate(core::ConfigDocument::load(kBert, {}), measured);
  check_recovered(calibration, {"plan_scale"});
  // Every product and norm is planned: the classes' efficiencies act on none of them.
  CHECK(parameter(calibration, "matmul.efficiency").status == FitStatus::kUnconstrained);
}

TEST_CASE("a fit to the TF1 MLP recovers its parameters and leaves the classes it lacks alone") {
  const auto calibration = calibrate(kTf1, tf1_measurements());
  check_recovered(calibration,
                  {"compute_set_cycles", "exchange_bytes_per_tile_cycle", "matmul.efficiency",
                   "elementwise.efficiency", "reduction.efficiency"});
  for (const char* name :
       {"conv.efficiency", "gather.efficiency", "non_linear.efficiency", "copy.efficiency"}) {
    const auto& p = parameter(calibration, name);
    INFO(name);
    CHECK(p.status == FitStatus::kUnconstrained);
    CHECK(p.fitted == p.preset);
  }
  CHECK(parameter(calibration, "conv.efficiency").preset == 0.3441);
}

TEST_CASE("the preset holds the fitted values only, where the config reads them") {
  const auto calibration = calibrate(kTf1, tf1_measurements());
  const auto operations = sim::calibrated_preset(calibration)["hardware"]["operations"];
  std::vector<std::string> keys;
  for (const auto& [key, value] : operations.items())
    keys.push_back(key);
  CHECK(keys == std::vector<std::string>{"compute_set_cycles", "elementwise",
                                         "exchange_bytes_per_tile_cycle", "matmul", "reduction"});
  CHECK(operations["matmul"].size() == 1);
  CHECK(operations["matmul"]["efficiency"] == parameter(calibration, "matmul.efficiency").fitted);
  CHECK(operations["compute_set_cycles"] == parameter(calibration, "compute_set_cycles").fitted);
}

TEST_CASE("the written preset, included after the config, reproduces the fit's predictions") {
  const auto measured = tf1_measurements();
  const auto calibration = calibrate(kTf1, measured);
  std::ofstream(testing::scratch_path("calibrate_tests", "calibrated.json"))
      << sim::calibrated_preset(calibration).dump(2);
  const nlohmann::json wrapper = {{"include", {fs::absolute(kTf1).string(), "calibrated.json"}}};
  std::ofstream(testing::scratch_path("calibrate_tests", "tf1_calibrated.json")) << wrapper.dump();
  for (const auto& fit : calibration.measurements) {
    auto sets = fit.measurement.set;
    sets.push_back(kFittedPricing);
    const auto spec = sim::load_run_spec(
        testing::scratch_path("calibrate_tests", "tf1_calibrated.json"), overrides_of(sets));
    INFO(sim::describe(fit.measurement));
    CHECK(cycles_of(spec, {fit.measurement})[0] == fit.after);
  }
}

TEST_CASE("the predictions before the fit are the config's own") {
  const auto measured = tf1_measurements();
  const auto calibration = calibrate(kTf1, measured);
  for (const auto& fit : calibration.measurements) {
    auto sets = fit.measurement.set;
    sets.push_back(kFittedPricing);
    const auto spec = sim::load_run_spec(kTf1, overrides_of(sets));
    CHECK(cycles_of(spec, {fit.measurement})[0] == fit.before);
  }
}

TEST_CASE("measurements faster than any physical parameters keep each parameter at its bound") {
  auto measured = tf1_measurements();
  // Without the host call's 450 µs a weight tensor, which no fitted parameter moves: it alone
  // holds each step near 600,000 cycles, and the unbounded step, which wants the efficiencies
  // past infinity to make up for it, would then not ask the compute sets for fewer cycles.
  for (auto& m : measured) {
    m.cycles = 10;
    m.set.push_back("hardware.host_call.per_tensor=0s");
  }
  const auto calibration = calibrate(kTf1, measured);
  const auto& compute_set = parameter(calibration, "compute_set_cycles");
  CHECK(compute_set.status == FitStatus::kClamped);
  CHECK(compute_set.fitted == 0);
  CHECK(compute_set.wanted < 0);
  const auto& matmul = parameter(calibration, "matmul.efficiency");
  CHECK(matmul.status == FitStatus::kClamped);
  CHECK(matmul.fitted == 1);
  CHECK(parameter(calibration, "exchange_bytes_per_tile_cycle").fitted == 1024);
}

TEST_CASE("one measurement fixes one parameter and leaves the others it depends on inseparable") {
  std::vector<sim::Measurement> measured;
  measure(kTf1, {}, false, measured);
  measured.resize(1);
  const auto calibration = calibrate(kTf1, measured);
  int fitted = 0;
  int inseparable = 0;
  for (const auto& p : calibration.parameters) {
    fitted += p.status == FitStatus::kFitted;
    inseparable += p.status == FitStatus::kInseparable;
  }
  CHECK(fitted == 1);
  CHECK(inseparable == 3);
  CHECK(calibration.measurements[0].after == Approx(measured[0].cycles).epsilon(0.001));
}

TEST_CASE("calibrate --fit moves only the parameters it names, the others keep the config values") {
  std::vector<sim::Measurement> measured;
  measure(kTf1, {}, true, measured);
  const auto step = measured.back();
  const auto calibration = sim::calibrate(fitted_config(kTf1), {step}, {"matmul.efficiency"});
  for (const auto& p : calibration.parameters) {
    INFO(p.name);
    CHECK(p.status == (p.name == "matmul.efficiency" ? FitStatus::kFitted : FitStatus::kNotChosen));
    if (p.name != "matmul.efficiency")
      CHECK(p.fitted == p.preset);
  }
  CHECK(calibration.measurements[0].after == Approx(step.cycles).epsilon(0.001));
  CHECK(testing::error_of<core::ConfigError>(
            [&] { sim::calibrate(fitted_config(kTf1), {step}, {"matmul.eficiency"}); }) ==
        "--fit: 'matmul.eficiency' is not a parameter calibrate fits; did you mean "
        "'matmul.efficiency'? (it fits 'compute_set_cycles', "
        "'exchange_bytes_per_tile_cycle', 'matmul.efficiency', 'conv.efficiency', "
        "'elementwise.efficiency', 'non_linear.efficiency', 'reduction.efficiency', "
        "'gather.efficiency', 'copy.efficiency' or 'plan_scale')");
}

TEST_CASE("measurements of other config files are fitted together with the command's config") {
  // A step of the TF1 MLP and one of BERT-Large, both measured on the hidden parameters, fitted
  // from the TF1 config: the BERT variant comes from its own file.
  std::vector<sim::Measurement> tf1;
  std::vector<sim::Measurement> bert;
  measure(kTf1, {}, true, tf1);
  measure(kBert, {}, true, bert);
  std::vector<sim::Measurement> steps = {tf1.back(), bert.back()};
  steps[1].config = kBert;
  steps[1].set.push_back(kFittedPricing);
  const auto calibration =
      sim::calibrate(fitted_config(kTf1), steps, {"matmul.efficiency", "compute_set_cycles"});
  CHECK(calibration.variants == 2);
  for (const auto& fit : calibration.measurements)
    CHECK(fit.after == Approx(fit.measurement.cycles).epsilon(0.01));
}

TEST_CASE("a variant that does not validate or lacks the measured stage is named by its entry") {
  std::vector<sim::Measurement> measured;
  measure(kTf1, {}, false, measured);
  measured[1].source = {"m.json", "/measurements/1", 0};
  measured[1].set = {"pipeline.micro_batch_size=0"};
  CHECK_THROWS_WITH(calibrate(kTf1, measured),
                    "m.json: at /measurements/1/set: its config variant is not valid: --set "
                    "pipeline.micro_batch_size=0: at /pipeline/micro_batch_size: expected an "
                    "integer from 1 to 16777216, found 0");
  measured[1].set = {};
  measured[1].stage = 2;
  CHECK_THROWS_WITH(calibrate(kTf1, measured),
                    "m.json: at /measurements/1/stage: stage 2 does not exist: the config variant "
                    "has 2 stage(s), 0 to 1");
  measured[1].set = {"pipeline.training=false"};
  measured[1].stage = 1;
  CHECK_THROWS_WITH(calibrate(kTf1, measured),
                    "m.json: at /measurements/1/backward_cycles: the config variant does not "
                    "train, so its stages run no backward pass");
}

TEST_CASE("measurements of more than 1,000 config variants are refused at the first past it") {
  std::vector<sim::Measurement> measured;
  for (int i = 0; i <= 1000; ++i) {
    const sim::MeasurementSource source{"m.csv", "", std::size_t(i) + 2};
    measured.push_back({{"pipeline.repeat_count=" + std::to_string(i + 1)},
                        sim::Measured::kStep,
                        -1,
                        1000,
                        source,
                        {}});
  }
  CHECK_THROWS_WITH(calibrate(kTf1, measured),
                    "m.csv: line 1002, column set: the measurements name more than 1,000 config "
                    "variants, the most ipusim fits at once");
}

TEST_CASE("a concurrent stage's passes are refused, and its pipeline is fitted by the step") {
  // Stem on IPU0, two branches concurrently on IPU1 and IPU2, the join and loss on IPU3.
  const auto config = core::ConfigDocument::from_json(nlohmann::json::parse(R"({
    "model": {"name": "branches", "input": {"shape": [16]}, "classes": 4, "layers": [
      {"id": "stem", "type": "dense", "units": 8},
      {"id": "left", "type": "dense", "units": 8, "inputs": ["stem"]},
      {"id": "right", "type": "dense", "units": 8, "inputs": ["stem"]},
      {"id": "join", "type": "add", "inputs": ["left", "right"]},
      {"id": "head", "type": "dense", "units": 4},
      {"id": "loss", "type": "softmax_cross_entropy"}]},
    "pipeline": {"stages": [["stem"], [["left"], ["right"]], ["join", "head", "loss"]],
                 "device_mapping": [0, [1, 2], 3], "gradient_accumulation_count": 12}})"),
                                                      "branches.json");
  const sim::MeasurementSource source{"m.json", "/measurements/0", 0};
  CHECK_THROWS_WITH(sim::calibrate(config, {{{}, sim::Measured::kForward, 1, 5000, source, {}}}),
                    "m.json: at /measurements/0/stage: stage 1 is a concurrent stage (its "
                    "sub-stages run on several IPUs at once): measure the step instead");
  const auto step = sim::simulate(sim::build_run_spec(config), {}).replay.step_cycles;
  const auto calibration =
      sim::calibrate(config, {{{}, sim::Measured::kStep, -1, 1.2 * double(step), source, {}}});
  CHECK(calibration.measurements[0].after == Approx(1.2 * double(step)).epsilon(0.001));
}

TEST_CASE("a variant that does not fit in memory is refused: it cannot have been measured") {
  std::vector<sim::Measurement> measured;
  measure(kTf1, {}, false, measured);
  measured[1].source = {"m.json", "/measurements/1", 0};
  measured[1].set = {"hardware.memory_per_ipu=\"4MB\""};
  // What run says of the same variant: its out-of-memory outcome.
  const auto spec = sim::load_run_spec(kTf1, overrides_of({measured[1].set[0], kFittedPricing}));
  sim::SimulateOptions options;
  options.numeric = sim::NumericMode::kOff;
  std::string outcome =
      testing::error_of<core::SimulationOutcome>([&] { sim::simulate(spec, options); });
  // Run's advice is for a run to be changed; a measured variant is refused without it.
  outcome = outcome.substr(0, outcome.find("\nWhat would help: "));
  CHECK(outcome.rfind("out of memory on 2 IPUs, the worst first: IPU0 (physical IPU0) needs ", 0) ==
        0);
  CHECK_THROWS_WITH(calibrate(kTf1, measured),
                    "m.json: at /measurements/1/set: its config variant does not fit in memory, "
                    "so it cannot have run on IPUs: " +
                        outcome + "; expected measurements of a variant that fits");
}
