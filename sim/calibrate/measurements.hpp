#pragma once
// Cycles measured on IPUs, as `ipusim calibrate --measured FILE` reads them: a CSV or a JSON
// file, told apart by the extension (the README gives both formats, and a libpva snippet that
// writes the JSON one from a PopVision profile). Each measurement belongs to a config variant,
// the command's config or another config file, with a list of --set overrides, and is one
// stage's forward or backward pass per micro-batch or a whole weight-update step.
//
// Reading checks the file on its own: keys, numbers, the form of each override. Whether a
// variant validates and has the measured stage is checked when the fit builds the variants
// (sim/calibrate/calibrate.hpp), and MeasurementSource names the place in the file then too.

#include <cstddef>
#include <string>
#include <vector>

namespace ipusim::sim {

enum class Measured { kForward, kBackward, kStep };

// Where a measurement was read: an entry of the JSON list, or a CSV line.
struct MeasurementSource {
  std::string file;
  std::string pointer;   // JSON: the entry, "/measurements/3"
  std::size_t line = 0;  // CSV: the line, from 1

  // A core::ConfigError naming the file, and `field` (a JSON key, a CSV column) of this entry.
  [[noreturn]] void fail(const std::string& field, const std::string& message) const;
};

struct Measurement {
  std::vector<std::string> set;  // the variant's overrides, PATH=VALUE as --set takes them
  Measured what = Measured::kStep;
  int stage = -1;     // for a forward or backward pass
  double cycles = 0;  // per micro-batch for a stage's pass, per weight update for a step
  MeasurementSource source;
  // The variant's config file, resolved against the measurement file's folder; empty: the
  // command's config (with the command's overrides).
  std::string config;
};

// "stage 1 forward", "stage 0 backward", "step".
std::string describe(const Measurement& measurement);

// The measurements of a .csv or .json file; anything wrong in it is a core::ConfigError naming
// the file and the line or the JSON path.
std::vector<Measurement> read_measurements(const std::string& path);

}  // namespace ipusim::sim
