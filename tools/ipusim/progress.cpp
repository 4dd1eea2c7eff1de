#include "tools/ipusim/progress_bar.hpp"

#include <unistd.h>

#include <iostream>

namespace ipusim::cli {

void ProgressBar::update(std::size_t done, std::size_t total, const std::string& unit) {
  if (unit != unit_) {
    unit_ = unit;
    shown_ = -1;
  }
  const int percent = total ? int(done * 100 / total) : 100;
  if (percent == shown_ && done != total)
    return;
  shown_ = percent;
  constexpr int kWidth = 30;
  const int filled = total ? int(done * kWidth / total) : kWidth;
  std::string bar(std::size_t(filled), '=');
  if (filled < kWidth)
    bar += '>' + std::string(std::size_t(kWidth - filled - 1), ' ');
  err_ << "\r[" << bar << "] " << done << "/" << total << " " << unit << std::flush;
  if (done == total)
    err_ << "\n";
}

bool is_terminal(const std::ostream& stream) {
  return &stream == &std::cerr && ::isatty(STDERR_FILENO);
}

}  // namespace ipusim::cli
