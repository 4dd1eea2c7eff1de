#pragma once
// What the fit in sim/calibrate/calibrate.cpp solves for, and what it compares with the
// measurements: the cost model's parameters as one vector of unknowns, and each measurement's
// prediction at given unknowns with its derivatives.
//
// The unknowns are compute_set_cycles, 1 / exchange_bytes_per_tile_cycle, 1 / efficiency of
// each class (in models::kOpClasses order) and plan_scale: the inverses because, at the tile
// counts the operations keep, a pass's cycles before the ceiling are linear in them
// (OpPassTerms); a planned operation's are its syncs plus plan_scale times its plan's cycles. A
// stage's derivatives are therefore sums of its operations' terms. A step goes through the
// replay (sim::simulate), whose maxima over IPUs make it piecewise linear: its derivatives are
// finite differences.

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Dense>

#include "sim/calibrate/measurements.hpp"
#include "sim/core/config_file.hpp"
#include "sim/spec/spec.hpp"

namespace ipusim::sim {

inline constexpr int kComputeSetParameter = 0;
inline constexpr int kExchangeParameter = 1;
// After the classes: planned pricing's plan_scale, which multiplies the cycles Poplar's plans
// take besides their syncs.
inline constexpr int kPlanScaleParameter = 2 + int(models::kOpClasses.size());
inline constexpr int kParameterCount = kPlanScaleParameter + 1;

// Called after each replay of a fit: (replays done, the least the fit needs, which grows as the
// fit iterates).
using ReplayProgress = std::function<void(std::size_t, std::size_t)>;

int parameter_of(models::OpClass op_class);
// Where the parameter sits under hardware.operations: "/compute_set_cycles",
// "/exchange_bytes_per_tile_cycle", "/matmul/efficiency".
std::string parameter_pointer(int parameter);
// As the output names it: "compute_set_cycles", "matmul.efficiency".
std::string parameter_name(int parameter);

Eigen::VectorXd unknowns_of(const OperationCosts& costs);
// Whether the unknown is the inverse of the config's value (a rate or an efficiency).
bool is_inverse(int parameter);
// The value the config holds for an unknown: the unknown itself or its inverse.
double config_value(int parameter, double unknown);
// The value `costs` holds for a parameter (0 for a free exchange).
double parameter_value(const OperationCosts& costs, int parameter);
// Sets the parameters marked in `which` to `unknowns`.
void apply_unknowns(const Eigen::VectorXd& unknowns, const std::vector<bool>& which,
                    OperationCosts& costs);

// The config variants the measurements name, each validated once, and the predictions of the
// measurements, in the order given.
class MeasuredVariants {
 public:
  // Builds `config` and each variant (`config` with its measurements' overrides); a variant
  // that does not validate, a stage it lacks or a pass it does not run is a core::ConfigError
  // naming the measurement's place in its file.
  // The replays the fit needs are counted against the most one command replays
  // (kMaxReplayTasks): a fit whose least work is more is refused before any replay, one that
  // grows past it while it fits is stopped, and `notify` hears of a fit that will take a while.
  // `progress` hears (replays done, the least replays the fit needs) after each replay.
  MeasuredVariants(const core::ConfigDocument& config, const std::vector<Measurement>& measured,
                   const std::function<void(const std::string&)>& notify = {},
                   ReplayProgress progress = {});

  const RunSpec& config() const { return config_; }
  // The fit will evaluate the steps at least `passes` more times (a replay of each variant
  // with a measured step each time): the least replays progress counts toward grows to match.
  void expect_passes(int passes) const;

  std::size_t variant_count() const { return variants_.size(); }

  // Each measurement as its variant's config stands.
  Eigen::VectorXd predict_configured() const;
  // Each measurement with the parameters marked in `which` set to `unknowns`.
  Eigen::VectorXd predict(const Eigen::VectorXd& unknowns, const std::vector<bool>& which) const;
  // d prediction / d unknown, a row per measurement; columns outside `which` are zero.
  // `at` is predict(unknowns, which).
  Eigen::MatrixXd jacobian(const Eigen::VectorXd& unknowns, const std::vector<bool>& which,
                           const Eigen::VectorXd& at) const;

 private:
  struct Variant {
    RunSpec spec;
    std::vector<std::size_t> rows;  // its measurements
    bool steps = false;             // whether any of them needs the replay
  };
  struct Row {
    std::size_t variant = 0;
    Measured what = Measured::kStep;
    int stage = -1;
    Eigen::RowVectorXd terms;  // a stage's pass: its derivatives, which no unknown changes
  };

  std::size_t variant_of(const Measurement& measurement, const core::ConfigDocument& config);
  void add_row(const Measurement& measurement, std::size_t variant);
  // Refuses a variant that does not fit in memory, naming the entry that chose it.
  void refuse_overflow(const Measurement& measurement, const RunSpec& spec) const;
  // The tasks of the replays the fit makes at least; refuses them past kMaxReplayTasks.
  void check_replay_budget(const std::function<void(const std::string&)>& notify) const;
  // Counts a replay of `spec` against the budget, stopping the fit past it.
  void count_replay(const RunSpec& spec) const;
  // Tells progress of a replay done.
  void replayed() const;
  void fill(const Variant& variant, const RunSpec& spec, Eigen::VectorXd& out) const;
  // Every prediction, or only the steps' (the rest zero); at `unknowns` for the parameters in
  // `which`, or as configured when `unknowns` is null.
  Eigen::VectorXd evaluate(const Eigen::VectorXd* unknowns, const std::vector<bool>& which,
                           bool steps_only) const;

  RunSpec config_;
  // Per variant: its config file (empty: the command's) and overrides.
  std::vector<std::pair<std::string, std::vector<std::string>>> sets_;
  std::vector<Variant> variants_;
  std::vector<Row> rows_;
  std::vector<std::size_t> first_measurement_;  // per variant: the entry that named it first
  mutable double replayed_tasks_ = 0;
  ReplayProgress progress_;
  std::size_t step_variants_ = 0;
  mutable std::size_t replays_ = 0;
  mutable std::size_t least_replays_ = 0;
};

}  // namespace ipusim::sim
