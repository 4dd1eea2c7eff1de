#pragma once
// `ipusim calibrate`: fits the per-operation cost model (sim/machine/op_cost.hpp) to cycles
// measured on IPUs, and gives the fitted values as a config file to include.
//
// Fitted: compute_set_cycles, exchange_bytes_per_tile_cycle, each operation class's efficiency
// and, under planned pricing, plan_scale, shared by every config variant measured. Under planned
// pricing the classes' efficiencies act only on the operations Poplar does not plan (gathers,
// copies, pooling windows); under fitted pricing plan_scale acts on none. Kept: exchange_cycles,
// which multiplies the same compute-set count as compute_set_cycles, so no measurement tells the
// two apart; and each class's min_work_per_tile, which changes tile counts in whole steps that no
// derivative sees. A parameter no measured operation depends on keeps the config's value, and so
// does one the measurements cannot separate from the others.
//
// The fit is Levenberg-Marquardt on the relative errors of the predictions (every measurement
// weighs alike whatever its size), with the unknowns of sim/calibrate/fit_model.hpp, a
// rank-revealing QR for each step, and bounds that keep the values physical: efficiencies in
// (0, 1], no negative cycles, an exchange rate the config accepts. A value the fit would take
// past a bound stays at the bound and is reported.

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/calibrate/measurements.hpp"
#include "sim/core/config_file.hpp"

namespace ipusim::sim {

enum class FitStatus {
  kFitted,
  kClamped,        // the fit asks for a value past a bound; it keeps the bound
  kUnconstrained,  // no measured operation depends on it; it keeps the config's value
  kInseparable,    // its effect is a combination of the others'; it keeps the config's value
  kNotChosen,      // left out of --fit; it keeps the config's value
};

struct CalibratedParameter {
  std::string name;   // under hardware.operations: "compute_set_cycles", "matmul.efficiency"
  double preset = 0;  // the config's value
  double fitted = 0;  // the preset when not fitted
  double wanted = 0;  // kClamped: what the fit asks for
  FitStatus status = FitStatus::kFitted;
};

struct MeasurementFit {
  Measurement measurement;
  double before = 0;  // predicted cycles with the config's parameters
  double after = 0;   // with the fitted ones
};

struct Calibration {
  std::string config_path;
  std::size_t variants = 0;
  std::vector<MeasurementFit> measurements;  // in the file's order
  std::vector<CalibratedParameter> parameters;
  double exchange_cycles = 0;  // kept
  int iterations = 0;          // the steps the fit took
};

// The parameters calibrate can fit, as --fit names them: "compute_set_cycles",
// "exchange_bytes_per_tile_cycle", "matmul.efficiency", ...
std::vector<std::string> fittable_parameters();

// Fits `config` (a loaded config with the command's overrides) to `measured`, moving only the
// parameters named in `chosen` (all when empty; a name that is none is a core::ConfigError).
// Errors in the variants the measurements name are core::ConfigErrors naming their place in
// the file. `progress` hears (replays done, the least replays the fit needs) after each replay.
Calibration calibrate(const core::ConfigDocument& config, const std::vector<Measurement>& measured,
                      const std::vector<std::string>& chosen = {},
                      const std::function<void(const std::string&)>& notify = {},
                      const std::function<void(std::size_t, std::size_t)>& progress = {});

// {"hardware": {"operations": {...}}} with the fitted and clamped values: included in the
// config, it gives the "after" predictions.
nlohmann::json calibrated_preset(const Calibration& calibration);

// The measurements before and after, the parameters beside the config's, and what was not
// fitted, as a terminal report.
std::string render_calibration(const Calibration& calibration);

}  // namespace ipusim::sim
