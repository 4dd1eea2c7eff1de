#include "sim/calibrate/fit_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/machine/cost_model.hpp"
#include "sim/machine/op_cost.hpp"
#include "sim/report/report.hpp"
#include "sim/run/replay_budget.hpp"

namespace ipusim::sim {
namespace {

// Each variant validates and builds a schedule; more would be a campaign, not a calibration.
constexpr std::size_t kMaxVariants = 1'000;

// A step's derivatives by forward differences of 1% of each unknown: large enough that the
// ceiling of every operation's cycles (at most one cycle each) is small beside the change.
constexpr double kRelativeDifference = 0.01;

double difference_step(int parameter, double unknown) {
  double floor = 1e-2;  // an efficiency's inverse
  if (parameter == kComputeSetParameter)
    floor = 1.0;
  else if (parameter == kExchangeParameter || parameter == kPlanScaleParameter)
    floor = 1e-3;
  return std::max(kRelativeDifference * std::abs(unknown), floor);
}

std::vector<core::Override> overrides_of(const std::vector<std::string>& set) {
  std::vector<core::Override> out;
  for (const auto& entry : set)
    out.push_back(core::parse_set_argument(entry));
  return out;
}

// An operation's pass adds its terms: a planned pass its plan's cycles (what plan_scale
// multiplies, past the syncs), a pass of the formula its OpPassTerms.
void add_pass_terms(const RunSpec& spec, const models::Operation& op, const OperationCost& cost,
                    Measured what, Eigen::RowVectorXd& terms) {
  if (!cost.plan.empty()) {
    const auto& planned = what == Measured::kForward ? cost.forward : cost.backward;
    terms[kPlanScaleParameter] +=
        (planned.exchange + planned.compute) / spec.hardware.operations.plan_scale;
    return;
  }
  const auto& pass = what == Measured::kForward ? op.forward : op.backward;
  const auto t = pass_terms(spec.hardware, spec.pipeline.dtype, op.op_class, pass,
                            spec.pipeline.micro_batch_size);
  terms[kComputeSetParameter] += t.compute_sets;
  terms[kExchangeParameter] += t.bytes_per_tile;
  terms[parameter_of(op.op_class)] += t.peak_cycles;
}

// The derivatives of a stage's pass: the sum of its operations' terms. Layers with profiled
// cycles add a constant.
Eigen::RowVectorXd stage_terms(const RunSpec& spec, int stage, Measured what) {
  Eigen::RowVectorXd terms = Eigen::RowVectorXd::Zero(kParameterCount);
  const auto& placed = spec.pipeline.stages[std::size_t(stage)];
  for (int layer : placed.substage_layers[0]) {
    if (spec.model.layers[std::size_t(layer)].cycles)
      continue;
    const auto& ops = spec.model.info[std::size_t(layer)].operations;
    const auto costs = layer_operations(spec, layer, 0, placed.ipus[0]);
    for (std::size_t i = 0; i < ops.size(); ++i)
      add_pass_terms(spec, ops[i], costs[i], what, terms);
  }
  return terms;
}

// A stage measurement names a stage of one IPU that runs the measured pass.
void check_stage(const Measurement& measured, const RunSpec& spec) {
  const int stages = int(spec.pipeline.stages.size());
  if (measured.stage >= stages) {
    measured.source.fail("stage", "stage " + std::to_string(measured.stage) +
                                      " does not exist: the config variant has " +
                                      std::to_string(stages) + " stage(s), 0 to " +
                                      std::to_string(stages - 1));
  }
  if (spec.pipeline.stages[std::size_t(measured.stage)].substage_layers.size() > 1) {
    measured.source.fail("stage", "stage " + std::to_string(measured.stage) +
                                      " is a concurrent stage (its sub-stages run on several "
                                      "IPUs at once): measure the step instead");
  }
  if (measured.what == Measured::kBackward && !spec.pipeline.training) {
    measured.source.fail("backward_cycles",
                         "the config variant does not train, so its stages run no backward pass");
  }
}

}  // namespace

int parameter_of(models::OpClass op_class) {
  return 2 + models::index(op_class);
}

std::string parameter_pointer(int parameter) {
  if (parameter == kComputeSetParameter)
    return "/compute_set_cycles";
  if (parameter == kExchangeParameter)
    return "/exchange_bytes_per_tile_cycle";
  if (parameter == kPlanScaleParameter)
    return "/plan_scale";
  return "/" + std::string(models::to_string(models::kOpClasses[std::size_t(parameter - 2)])) +
         "/efficiency";
}

std::string parameter_name(int parameter) {
  std::string name = parameter_pointer(parameter).substr(1);
  std::replace(name.begin(), name.end(), '/', '.');
  return name;
}

Eigen::VectorXd unknowns_of(const OperationCosts& costs) {
  Eigen::VectorXd unknowns(kParameterCount);
  unknowns[kComputeSetParameter] = costs.compute_set_cycles;
  // A free exchange (the ideal preset) is an infinite rate.
  const double rate = costs.exchange_bytes_per_tile_cycle;
  unknowns[kExchangeParameter] = rate > 0 ? 1 / rate : 0;
  for (auto op_class : models::kOpClasses)
    unknowns[parameter_of(op_class)] = 1 / costs.of(op_class).efficiency;
  unknowns[kPlanScaleParameter] = costs.plan_scale;
  return unknowns;
}

bool is_inverse(int parameter) {
  return parameter != kComputeSetParameter && parameter != kPlanScaleParameter;
}

double config_value(int parameter, double unknown) {
  return is_inverse(parameter) ? 1 / unknown : unknown;
}

double parameter_value(const OperationCosts& costs, int parameter) {
  if (parameter == kComputeSetParameter)
    return costs.compute_set_cycles;
  if (parameter == kExchangeParameter)
    return costs.exchange_bytes_per_tile_cycle;
  if (parameter == kPlanScaleParameter)
    return costs.plan_scale;
  return costs.of(models::kOpClasses[std::size_t(parameter - 2)]).efficiency;
}

void apply_unknowns(const Eigen::VectorXd& unknowns, const std::vector<bool>& which,
                    OperationCosts& costs) {
  if (which[kComputeSetParameter])
    costs.compute_set_cycles = unknowns[kComputeSetParameter];
  if (which[kExchangeParameter]) {
    const double inverse = unknowns[kExchangeParameter];
    costs.exchange_bytes_per_tile_cycle = inverse > 0 ? 1 / inverse : 0;
  }
  for (auto op_class : models::kOpClasses) {
    const int parameter = parameter_of(op_class);
    if (which[std::size_t(parameter)])
      costs.of(op_class).efficiency = config_value(parameter, unknowns[parameter]);
  }
  if (which[kPlanScaleParameter])
    costs.plan_scale = unknowns[kPlanScaleParameter];
}

namespace {

// The replays a fit makes at least, each of every variant with a measured step: the start of
// the rank check and its finite difference for each parameter, the fit's start, one trial step
// and the predictions as configured.
constexpr int kLeastFitReplays = 4 + kParameterCount;

// The field of an entry that chooses its variant: the overrides when there are any, else the
// other config file it names.
std::string variant_field(const Measurement& measurement) {
  return !measurement.config.empty() && measurement.set.empty() ? "config" : "set";
}

}  // namespace

MeasuredVariants::MeasuredVariants(const core::ConfigDocument& config,
                                   const std::vector<Measurement>& measured,
                                   const std::function<void(const std::string&)>& notify,
                                   ReplayProgress progress)
    : config_(build_run_spec(config)), progress_(std::move(progress)) {
  for (std::size_t i = 0; i < measured.size(); ++i) {
    const std::size_t count = variants_.size();
    const std::size_t variant = variant_of(measured[i], config);
    if (variants_.size() > count)
      first_measurement_.push_back(i);
    add_row(measured[i], variant);
  }
  check_replay_budget(notify);
  for (const auto& variant : variants_)
    step_variants_ += variant.steps ? 1 : 0;
  least_replays_ = variants_.size() + step_variants_ * std::size_t(kLeastFitReplays);
  for (std::size_t v = 0; v < variants_.size(); ++v)
    refuse_overflow(measured[first_measurement_[v]], variants_[v].spec);
}

namespace {

std::string tasks_text(double tasks) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2g", tasks);
  return text;
}

}  // namespace

void MeasuredVariants::check_replay_budget(
    const std::function<void(const std::string&)>& notify) const {
  double every = 0;
  double steps = 0;
  for (const auto& variant : variants_) {
    const double tasks = replay_tasks(variant.spec, false);
    every += tasks;
    steps += variant.steps ? tasks : 0;
  }
  const double least = every + steps * kLeastFitReplays;
  const std::string what = "the fit replays at least about " + tasks_text(least) +
                           " tasks (each variant once to check it fits, and each variant with "
                           "a measured step " +
                           std::to_string(kLeastFitReplays) + " times more, " + tasks_text(steps) +
                           " tasks a time)";
  if (least > kMaxReplayTasks) {
    throw core::ConfigError("--measured", "",
                            what + ", more than the " + with_commas(std::int64_t(kMaxReplayTasks)) +
                                " tasks one command replays; measure steps of variants with a "
                                "lower gradient_accumulation_count");
  }
  if (least > kLongReplayTasks && notify)
    notify(what + ": " + replay_time_text(least) + " or more");
}

void MeasuredVariants::count_replay(const RunSpec& spec) const {
  replayed_tasks_ += replay_tasks(spec, false);
  if (replayed_tasks_ > kMaxReplayTasks) {
    throw core::ConfigError("--measured", "",
                            "the fit stopped unconverged: its replays reached " +
                                tasks_text(replayed_tasks_) + " tasks, more than the " +
                                with_commas(std::int64_t(kMaxReplayTasks)) +
                                " tasks one command replays; measure steps of variants with a "
                                "lower gradient_accumulation_count, or fit fewer parameters "
                                "(--fit)");
  }
}

void MeasuredVariants::expect_passes(int passes) const {
  least_replays_ = std::max(least_replays_, replays_ + std::size_t(passes) * step_variants_);
}

void MeasuredVariants::replayed() const {
  ++replays_;
  if (progress_)
    progress_(replays_, std::max(replays_, least_replays_));
}

std::size_t MeasuredVariants::variant_of(const Measurement& measurement,
                                         const core::ConfigDocument& config) {
  const auto key = std::make_pair(measurement.config, measurement.set);
  const auto found = std::find(sets_.begin(), sets_.end(), key);
  if (found != sets_.end())
    return std::size_t(found - sets_.begin());
  if (variants_.size() == kMaxVariants) {
    measurement.source.fail("set", "the measurements name more than " +
                                       with_commas(std::int64_t(kMaxVariants)) +
                                       " config variants, the most ipusim fits at once");
  }
  const auto overrides = overrides_of(measurement.set);
  try {
    variants_.push_back(
        {build_run_spec(measurement.config.empty()
                            ? config.with_overrides(overrides)
                            : core::ConfigDocument::load(measurement.config, overrides)),
         {},
         false});
  } catch (const core::ConfigError& error) {
    measurement.source.fail(variant_field(measurement),
                            std::string("its config variant is not valid: ") + error.what());
  }
  sets_.push_back(key);
  return variants_.size() - 1;
}

// A variant that does not fit in memory never ran, so it cannot have been measured: the
// replay's verdict (numerics off) names the IPU and its largest consumers.
void MeasuredVariants::refuse_overflow(const Measurement& measurement, const RunSpec& spec) const {
  count_replay(spec);
  SimulateOptions options;
  options.allow_oom = true;
  options.numeric = NumericMode::kOff;
  const auto report = simulate(spec, options);
  replayed();
  if (report.figures.fits_in_memory)
    return;
  measurement.source.fail(variant_field(measurement),
                          "its config variant does not fit in memory, so it cannot have run on "
                          "IPUs: " +
                              report.replay.out_of_memory->message() +
                              "; expected measurements of a variant that fits");
}

void MeasuredVariants::add_row(const Measurement& measurement, std::size_t variant) {
  Variant& v = variants_[variant];
  Row row{variant, measurement.what, measurement.stage, Eigen::RowVectorXd::Zero(kParameterCount)};
  if (measurement.what == Measured::kStep) {
    v.steps = true;
  } else {
    check_stage(measurement, v.spec);
    row.terms = stage_terms(v.spec, measurement.stage, measurement.what);
  }
  v.rows.push_back(rows_.size());
  rows_.push_back(std::move(row));
}

// The predictions of `variant`'s measurements on `spec` (the variant with some parameters
// changed): a stage's pass from the cost model, a step from the replay.
void MeasuredVariants::fill(const Variant& variant, const RunSpec& spec,
                            Eigen::VectorXd& out) const {
  std::shared_ptr<const CostModel> cost;
  std::int64_t step = 0;
  if (variant.steps) {
    count_replay(spec);
    SimulateOptions options;
    options.allow_oom = true;  // measured on IPUs, so it ran; only the time matters here
    const auto report = simulate(spec, options);
    replayed();
    cost = report.cost;
    step = report.replay.step_cycles;
  } else {
    cost = std::make_shared<const CostModel>(build_cost_model(spec));
  }
  for (auto index : variant.rows) {
    const Row& row = rows_[index];
    double& prediction = out[Eigen::Index(index)];
    if (row.what == Measured::kStep) {
      prediction = double(step);
      continue;
    }
    const auto& stage = cost->substage(row.stage, 0);
    prediction =
        double(row.what == Measured::kForward ? stage.forward_cycles : stage.backward_cycles);
  }
}

Eigen::VectorXd MeasuredVariants::evaluate(const Eigen::VectorXd* unknowns,
                                           const std::vector<bool>& which, bool steps_only) const {
  Eigen::VectorXd out = Eigen::VectorXd::Zero(Eigen::Index(rows_.size()));
  for (const auto& variant : variants_) {
    if (steps_only && !variant.steps)
      continue;
    if (!unknowns) {
      fill(variant, variant.spec, out);
      continue;
    }
    RunSpec spec = variant.spec;
    apply_unknowns(*unknowns, which, spec.hardware.operations);
    fill(variant, spec, out);
  }
  return out;
}

Eigen::VectorXd MeasuredVariants::predict_configured() const {
  return evaluate(nullptr, {}, false);
}

Eigen::VectorXd MeasuredVariants::predict(const Eigen::VectorXd& unknowns,
                                          const std::vector<bool>& which) const {
  return evaluate(&unknowns, which, false);
}

Eigen::MatrixXd MeasuredVariants::jacobian(const Eigen::VectorXd& unknowns,
                                           const std::vector<bool>& which,
                                           const Eigen::VectorXd& at) const {
  const auto rows = Eigen::Index(rows_.size());
  Eigen::MatrixXd out = Eigen::MatrixXd::Zero(rows, kParameterCount);
  for (Eigen::Index i = 0; i < rows; ++i)
    out.row(i) = rows_[std::size_t(i)].terms;
  const bool any_step = std::any_of(variants_.begin(), variants_.end(),
                                    [](const Variant& variant) { return variant.steps; });
  for (int p = 0; p < kParameterCount; ++p) {
    if (!which[std::size_t(p)]) {
      out.col(p).setZero();
      continue;
    }
    if (!any_step)
      continue;
    Eigen::VectorXd moved = unknowns;
    const double h = difference_step(p, unknowns[p]);
    moved[p] += h;
    const Eigen::VectorXd shifted = evaluate(&moved, which, true);
    for (Eigen::Index i = 0; i < rows; ++i) {
      if (rows_[std::size_t(i)].what == Measured::kStep)
        out(i, p) = (shifted[i] - at[i]) / h;
    }
  }
  return out;
}

}  // namespace ipusim::sim
