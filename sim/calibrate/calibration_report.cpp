// The terminal report of a calibration and the preset it writes (sim/calibrate/calibrate.hpp).

#include <cmath>
#include <cstdio>

#include "sim/calibrate/calibrate.hpp"
#include "sim/calibrate/fit_model.hpp"
#include "sim/core/format.hpp"

namespace ipusim::sim {
namespace {

// Four significant digits: enough to compare a fit with the config's round figures.
std::string figure(double value) {
  if (std::isinf(value))
    return "infinite";
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

// "+1.25%", "-0.40%"; an error that rounds to nothing has no sign.
std::string signed_percent(double share) {
  const double hundredths = std::round(share * 10000);
  if (hundredths == 0)
    return "0.00%";
  char text[32];
  std::snprintf(text, sizeof text, "%+.2f%%", hundredths / 100);
  return text;
}

// "(as configured)", the overrides, or another config file and its overrides.
std::string variant_name(const Measurement& measurement) {
  std::string name = measurement.config;
  for (const auto& entry : measurement.set)
    name += (name.empty() ? "" : "; ") + entry;
  return name.empty() ? "(as configured)" : name;
}

double relative_error(double predicted, double measured) {
  return (predicted - measured) / measured;
}

std::string measurement_table(const Calibration& calibration) {
  std::vector<std::vector<std::string>> rows = {
      {"Variant", "Measurement", "Measured", "Before", "Error", "After", "Error"}};
  double before = 0;
  double after = 0;
  for (const auto& fit : calibration.measurements) {
    const double measured = fit.measurement.cycles;
    rows.push_back({variant_name(fit.measurement), describe(fit.measurement),
                    with_commas(std::llround(measured)), with_commas(std::llround(fit.before)),
                    signed_percent(relative_error(fit.before, measured)),
                    with_commas(std::llround(fit.after)),
                    signed_percent(relative_error(fit.after, measured))});
    before += std::pow(relative_error(fit.before, measured), 2);
    after += std::pow(relative_error(fit.after, measured), 2);
  }
  const double count = double(calibration.measurements.size());
  return render_table(rows, {false, false, true, true, true, true, true}) +
         "Root mean square error: " + fixed(100 * std::sqrt(before / count), 2) + "% before, " +
         fixed(100 * std::sqrt(after / count), 2) + "% after\n";
}

std::string status_note(const CalibratedParameter& parameter) {
  switch (parameter.status) {
    case FitStatus::kFitted:
      return "";
    case FitStatus::kClamped:
      return "at its bound (the fit asks for " + figure(parameter.wanted) + ")";
    case FitStatus::kUnconstrained:
      return "unconstrained";
    case FitStatus::kInseparable:
      return "not separable";
    case FitStatus::kNotChosen:
      return "not in --fit";
  }
  return "";
}

bool any(const Calibration& calibration, FitStatus status) {
  for (const auto& parameter : calibration.parameters) {
    if (parameter.status == status)
      return true;
  }
  return false;
}

std::string parameter_table(const Calibration& calibration) {
  std::vector<std::vector<std::string>> rows = {
      {"Parameter (hardware.operations)", "Config", "Fitted", "Note"}};
  for (const auto& parameter : calibration.parameters) {
    rows.push_back({parameter.name, figure(parameter.preset), figure(parameter.fitted),
                    status_note(parameter)});
  }
  std::string out = render_table(rows, {false, true, true, false});
  if (any(calibration, FitStatus::kClamped))
    out +=
        "At its bound: the best fit lies past what is physical (an efficiency above 1 or at "
        "most 0, negative cycles, an exchange faster than 1024 bytes per tile-cycle, a plan "
        "scale outside 0.01 to 100); the value stays at the bound.\n";
  if (any(calibration, FitStatus::kUnconstrained))
    out += "Unconstrained: no measured operation depends on it, so it keeps the config's value.\n";
  if (any(calibration, FitStatus::kNotChosen))
    out +=
        "Not in --fit: the command fits only the parameters --fit names; it keeps the config's "
        "value.\n";
  if (any(calibration, FitStatus::kInseparable))
    out +=
        "Not separable: the measurements fix only a combination of it with the others; it "
        "keeps the config's value. Measure variants that change the mix of operations (other "
        "micro-batch sizes, other models).\n";
  return out;
}

std::string kept_parameters(const Calibration& calibration) {
  return "Not fitted: exchange_cycles (" + figure(calibration.exchange_cycles) +
         ") is paid once per compute set, as compute_set_cycles is, so no measurement tells the "
         "two apart: it stays, and compute_set_cycles takes up both. min_work_per_tile changes "
         "tile counts in whole steps, which no derivative sees: each class keeps the config's. "
         "vector_elements_per_tile_cycle only ever multiplies an efficiency: it stays.\n";
}

}  // namespace

nlohmann::json calibrated_preset(const Calibration& calibration) {
  nlohmann::json operations = nlohmann::json::object();
  for (int p = 0; p < kParameterCount; ++p) {
    const auto& parameter = calibration.parameters[std::size_t(p)];
    if (parameter.status == FitStatus::kFitted || parameter.status == FitStatus::kClamped)
      operations[nlohmann::json::json_pointer(parameter_pointer(p))] = parameter.fitted;
  }
  return {{"hardware", {{"operations", operations}}}};
}

std::string render_calibration(const Calibration& calibration) {
  const std::string measured =
      calibration.measurements.empty() ? "" : calibration.measurements[0].measurement.source.file;
  return "ipusim calibrate: " + calibration.config_path + " against " + measured + ": " +
         std::to_string(calibration.measurements.size()) + " measurement(s) of " +
         std::to_string(calibration.variants) + " config variant(s), " +
         std::to_string(calibration.iterations) + " iteration(s)\n\n" +
         measurement_table(calibration) + "\n" + parameter_table(calibration) +
         kept_parameters(calibration);
}

}  // namespace ipusim::sim
