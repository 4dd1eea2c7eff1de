#include "sim/calibrate/calibrate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include <Eigen/QR>

#include "models/kernels/eigen_blocking.hpp"
#include "sim/calibrate/fit_model.hpp"
#include "sim/core/checked.hpp"
#include "sim/core/error.hpp"
#include "sim/core/suggest.hpp"

namespace ipusim::sim {
namespace {

constexpr int kMaxIterations = 50;
// Each damping multiplies Levenberg-Marquardt's lambda by 10.
constexpr int kMaxDampings = 12;
// The fit stops once an iteration removes less than this share of the squared error.
constexpr double kTolerance = 1e-12;
// A pivot of the scaled Jacobian below this share of the largest: its column is a combination
// of the others.
constexpr double kRankThreshold = 1e-9;

// The unknowns' bounds: no negative cycles; an exchange no faster than the 1024 bytes per
// tile-cycle the config accepts; efficiencies from 1e-6 to 1 (the unit's peak); a plan scale
// from 0.01 to the 100 the config accepts.
double lower_bound(int parameter) {
  if (parameter == kComputeSetParameter)
    return 0;
  if (parameter == kPlanScaleParameter)
    return 0.01;
  return parameter == kExchangeParameter ? 1.0 / 1024 : 1;
}

double upper_bound(int parameter) {
  if (parameter == kComputeSetParameter)
    return double(std::int64_t{1} << 40);
  if (parameter == kPlanScaleParameter)
    return 100;
  return parameter == kExchangeParameter ? 1e9 : 1e6;
}

Eigen::VectorXd within_bounds(Eigen::VectorXd unknowns) {
  for (int p = 0; p < kParameterCount; ++p)
    unknowns[p] = std::clamp(unknowns[p], lower_bound(p), upper_bound(p));
  return unknowns;
}

// The measurements and their model. Residuals are relative, so a stage of a thousand cycles
// weighs as much as a step of a billion.
struct Problem {
  const MeasuredVariants& model;
  Eigen::VectorXd measured;

  Eigen::VectorXd residuals(const Eigen::VectorXd& predicted) const {
    return (measured - predicted).cwiseQuotient(measured);
  }
  // The Jacobian of the predictions scaled as the residuals are: a step d of the unknowns lowers
  // the residuals by scaled(J) d.
  Eigen::MatrixXd scaled(const Eigen::MatrixXd& jacobian) const {
    return measured.cwiseInverse().asDiagonal() * jacobian;
  }
};

struct Iterate {
  Eigen::VectorXd unknowns;
  Eigen::VectorXd predicted;
  double error = 0;  // the sum of squared relative residuals
};

Iterate evaluate(const Problem& problem, const Eigen::VectorXd& unknowns,
                 const std::vector<bool>& fitted) {
  Iterate at{unknowns, problem.model.predict(unknowns, fitted), 0};
  at.error = problem.residuals(at.predicted).squaredNorm();
  return at;
}

// A trial point whose cycles overflow what the replay can time counts as worse than any.
std::optional<Iterate> try_evaluate(const Problem& problem, const Eigen::VectorXd& unknowns,
                                    const std::vector<bool>& fitted) {
  try {
    return evaluate(problem, unknowns, fitted);
  } catch (const core::Overflow&) {
    return std::nullopt;
  } catch (const core::ConfigError&) {
    return std::nullopt;
  }
}

std::vector<int> nonzero_columns(const Eigen::MatrixXd& a, const std::vector<bool>& open) {
  std::vector<int> columns;
  for (int p = 0; p < kParameterCount; ++p) {
    if (open[std::size_t(p)] && a.col(p).norm() > 0)
      columns.push_back(p);
  }
  return columns;
}

// Minimises |A d - r|^2 + lambda |D d|^2 over the columns in `open`, D the columns' norms, by
// a column-pivoting QR that leaves out the columns past its rank (they do not move).
Eigen::VectorXd damped_step(const Eigen::MatrixXd& a, const Eigen::VectorXd& r,
                            const std::vector<bool>& open, double lambda) {
  models::pin_eigen_blocking();
  Eigen::VectorXd step = Eigen::VectorXd::Zero(kParameterCount);
  const auto columns = nonzero_columns(a, open);
  if (columns.empty())
    return step;
  const Eigen::Index m = a.rows();
  const auto n = Eigen::Index(columns.size());
  Eigen::MatrixXd system = Eigen::MatrixXd::Zero(m + n, n);
  Eigen::VectorXd rhs = Eigen::VectorXd::Zero(m + n);
  rhs.head(m) = r;
  Eigen::VectorXd norms(n);
  for (Eigen::Index k = 0; k < n; ++k) {
    norms[k] = a.col(columns[std::size_t(k)]).norm();
    system.col(k).head(m) = a.col(columns[std::size_t(k)]) / norms[k];
    system(m + k, k) = std::sqrt(lambda);
  }
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(system);
  qr.setThreshold(kRankThreshold);
  const Eigen::Index rank = qr.rank();
  Eigen::VectorXd qtb = rhs;
  qtb.applyOnTheLeft(qr.householderQ().adjoint());
  Eigen::VectorXd pivoted = Eigen::VectorXd::Zero(n);
  pivoted.head(rank) =
      qr.matrixR().topLeftCorner(rank, rank).triangularView<Eigen::Upper>().solve(qtb.head(rank));
  const Eigen::VectorXd z = qr.colsPermutation() * pivoted;
  for (Eigen::Index k = 0; k < n; ++k)
    step[columns[std::size_t(k)]] = z[k] / norms[k];
  return step;
}

// The damped step from `unknowns` kept within the bounds: a parameter it would take past a
// bound stops at the bound, and the step is solved again for the others, with the residuals
// that stop moves.
Eigen::VectorXd bounded_step(const Eigen::MatrixXd& a, const Eigen::VectorXd& r,
                             const Eigen::VectorXd& unknowns, const std::vector<bool>& fitted,
                             double lambda) {
  std::vector<bool> open = fitted;
  Eigen::VectorXd at = unknowns;
  Eigen::VectorXd rest = r;
  for (int round = 0; round <= kParameterCount; ++round) {
    const Eigen::VectorXd step = damped_step(a, rest, open, lambda);
    bool stopped = false;
    for (int p = 0; p < kParameterCount; ++p) {
      const double target = at[p] + step[p];
      const double kept = std::clamp(target, lower_bound(p), upper_bound(p));
      if (!open[std::size_t(p)] || kept == target)
        continue;
      open[std::size_t(p)] = false;
      stopped = true;
      rest -= a.col(p) * (kept - at[p]);
      at[p] = kept;
    }
    if (!stopped)
      return at + step;
  }
  return at;
}

// Levenberg-Marquardt from `current`: Gauss-Newton steps while they lower the error, damped
// until one does. It stops when no step lowers the error by more than the tolerance, and counts
// the steps it takes in `iterations`.
Iterate fit(const Problem& problem, Iterate current, const std::vector<bool>& fitted,
            int& iterations) {
  double lambda = 0;
  iterations = 0;
  // An iteration replays a finite difference per fitted parameter and at least one trial step;
  // after the fit, the end point's differences and the configured predictions follow.
  const int differences = int(std::count(fitted.begin(), fitted.end(), true));
  while (iterations < kMaxIterations) {
    problem.model.expect_passes(2 * differences + 2);
    const Eigen::MatrixXd a =
        problem.scaled(problem.model.jacobian(current.unknowns, fitted, current.predicted));
    const Eigen::VectorXd r = problem.residuals(current.predicted);
    std::optional<Iterate> better;
    for (int damping = 0; damping < kMaxDampings && !better; ++damping) {
      problem.model.expect_passes(differences + 2);
      auto trial =
          try_evaluate(problem, bounded_step(a, r, current.unknowns, fitted, lambda), fitted);
      if (trial && trial->error < current.error)
        better = std::move(trial);
      else
        lambda = lambda == 0 ? 1e-4 : lambda * 10;
    }
    if (!better)
      break;
    ++iterations;
    const bool converged = current.error - better->error <= kTolerance * current.error;
    current = std::move(*better);
    lambda = lambda < 1e-6 ? 0 : lambda / 10;
    if (converged)
      break;
  }
  return current;
}

// Parameters no measurement depends on, and those whose effect the others' can make up: the
// columns of the scaled Jacobian that are zero, or past the rank of its pivoting QR.
std::vector<FitStatus> classify(const Eigen::MatrixXd& a, const std::vector<bool>& chosen) {
  models::pin_eigen_blocking();
  std::vector<FitStatus> status(kParameterCount, FitStatus::kFitted);
  const auto columns = nonzero_columns(a, chosen);
  for (int p = 0; p < kParameterCount; ++p) {
    if (!chosen[std::size_t(p)])
      status[std::size_t(p)] = FitStatus::kNotChosen;
    else if (std::find(columns.begin(), columns.end(), p) == columns.end())
      status[std::size_t(p)] = FitStatus::kUnconstrained;
  }
  if (columns.empty())
    return status;
  Eigen::MatrixXd scaled(a.rows(), Eigen::Index(columns.size()));
  for (std::size_t k = 0; k < columns.size(); ++k)
    scaled.col(Eigen::Index(k)) = a.col(columns[k]).normalized();
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(scaled);
  qr.setThreshold(kRankThreshold);
  for (Eigen::Index k = qr.rank(); k < scaled.cols(); ++k)
    status[std::size_t(columns[std::size_t(qr.colsPermutation().indices()[k])])] =
        FitStatus::kInseparable;
  return status;
}

// The fitted parameters resting on a bound that the unbounded step from the end point would
// take further: they keep the bound, and the report says what the fit asks for.
void mark_clamped(const Problem& problem, const Iterate& end, const std::vector<bool>& fitted,
                  std::vector<CalibratedParameter>& parameters) {
  const Eigen::MatrixXd a =
      problem.scaled(problem.model.jacobian(end.unknowns, fitted, end.predicted));
  const Eigen::VectorXd wanted =
      end.unknowns + damped_step(a, problem.residuals(end.predicted), fitted, 0);
  for (int p = 0; p < kParameterCount; ++p) {
    const double at = end.unknowns[p];
    const bool pushed =
        (at == lower_bound(p) && wanted[p] < at) || (at == upper_bound(p) && wanted[p] > at);
    if (!fitted[std::size_t(p)] || !pushed)
      continue;
    auto& parameter = parameters[std::size_t(p)];
    parameter.status = FitStatus::kClamped;
    // An inverse at or below zero asks for operations that take no time, or less.
    parameter.wanted = is_inverse(p) && wanted[p] <= 0 ? std::numeric_limits<double>::infinity()
                                                       : config_value(p, wanted[p]);
  }
}

// Which parameters --fit names: all of them when it names none.
std::vector<bool> chosen_parameters(const std::vector<std::string>& names) {
  std::vector<bool> chosen(kParameterCount, names.empty());
  const auto known = fittable_parameters();
  for (const auto& name : names) {
    const auto found = std::find(known.begin(), known.end(), name);
    if (found == known.end()) {
      throw core::ConfigError("--fit", "",
                              "'" + name + "' is not a parameter calibrate fits" +
                                  core::did_you_mean(name, known) + " (it fits " +
                                  core::quoted_list(known) + ")");
    }
    chosen[std::size_t(found - known.begin())] = true;
  }
  return chosen;
}

}  // namespace

std::vector<std::string> fittable_parameters() {
  std::vector<std::string> names;
  for (int p = 0; p < kParameterCount; ++p)
    names.push_back(parameter_name(p));
  return names;
}

Calibration calibrate(const core::ConfigDocument& config, const std::vector<Measurement>& measured,
                      const std::vector<std::string>& chosen_names,
                      const std::function<void(const std::string&)>& notify,
                      const std::function<void(std::size_t, std::size_t)>& progress) {
  const std::vector<bool> chosen = chosen_parameters(chosen_names);
  const MeasuredVariants model(config, measured, notify, progress);
  Problem problem{model, Eigen::VectorXd(Eigen::Index(measured.size()))};
  for (std::size_t i = 0; i < measured.size(); ++i)
    problem.measured[Eigen::Index(i)] = measured[i].cycles;
  const OperationCosts& preset = model.config().hardware.operations;
  const Eigen::VectorXd start = within_bounds(unknowns_of(preset));
  const std::vector<bool> all(kParameterCount, true);
  const auto status = classify(
      problem.scaled(model.jacobian(start, all, evaluate(problem, start, all).predicted)), chosen);
  std::vector<bool> fitted(kParameterCount);
  for (int p = 0; p < kParameterCount; ++p)
    fitted[std::size_t(p)] = status[std::size_t(p)] == FitStatus::kFitted;
  // The fit's start, then its first iteration and what follows the fit (as fit() counts them).
  model.expect_passes(1 + 2 * int(std::count(fitted.begin(), fitted.end(), true)) + 2);

  Calibration out;
  out.config_path = model.config().config_path;
  out.variants = model.variant_count();
  out.exchange_cycles = double(preset.exchange_cycles);
  const Iterate end = fit(problem, evaluate(problem, start, fitted), fitted, out.iterations);
  for (int p = 0; p < kParameterCount; ++p) {
    const double value = parameter_value(preset, p);
    const bool moved = fitted[std::size_t(p)];
    out.parameters.push_back({parameter_name(p), value,
                              moved ? config_value(p, end.unknowns[p]) : value, 0,
                              status[std::size_t(p)]});
  }
  mark_clamped(problem, end, fitted, out.parameters);
  const Eigen::VectorXd before = model.predict_configured();
  for (std::size_t i = 0; i < measured.size(); ++i)
    out.measurements.push_back(
        {measured[i], before[Eigen::Index(i)], end.predicted[Eigen::Index(i)]});
  return out;
}

}  // namespace ipusim::sim
