#pragma once
// "[=====>    ] 412/1000 runs", redrawn in place on standard error, for the commands that run
// long searches (sweep, plan). Only on a terminal, where '\r' means something.

#include <cstddef>
#include <iosfwd>
#include <string>

namespace ipusim::cli {

class ProgressBar {
 public:
  explicit ProgressBar(std::ostream& err) : err_(err) {}

  // Redraws when the percentage changes; a line break once done == total. A new `unit` starts a
  // new bar.
  void update(std::size_t done, std::size_t total, const std::string& unit);

 private:
  std::ostream& err_;
  std::string unit_;
  int shown_ = -1;
};

// Whether `stream` is standard error and standard error is a terminal.
bool is_terminal(const std::ostream& stream);

}  // namespace ipusim::cli
