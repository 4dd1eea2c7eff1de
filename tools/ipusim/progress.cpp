#include "tools/ipusim/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include <CLI/CLI.hpp>

#include "sim/core/error.hpp"
#include "tools/ipusim/command.hpp"

namespace ipusim::cli {
namespace {

// Decimal digits with at most one point inside them ("5", "0.5"): no sign, space, exponent or
// hexadecimal, so that one rule reads the variable whatever the C library's strtod accepts.
bool plain_decimal(std::string_view text) {
  const auto point = text.find('.');
  const bool digits = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= '0' && c <= '9') || c == '.';
  });
  return digits && text.front() != '.' && text.back() != '.' &&
         (point == std::string_view::npos || text.find('.', point + 1) == std::string_view::npos);
}

}  // namespace

ProgressPace progress_pace_from_environment() {
  const char* name = "IPUSIM_PROGRESS_INTERVAL";
  const char* value = std::getenv(name);
  ProgressPace pace;
  if (!value)
    return pace;
  double seconds = -1;
  if (plain_decimal(value))
    std::from_chars(value, value + std::strlen(value), seconds);
  if (!(seconds >= 0 && seconds <= 3600))
    throw core::ConfigError(name, "",
                            std::string("expected the seconds between two progress lines, a "
                                        "number from 0 to 3600 in decimal digits (5, 0.5), "
                                        "found '") +
                                value + "'");
  pace.interval = seconds;
  pace.delay = std::min(pace.delay, seconds);
  return pace;
}

std::string progress_duration(double seconds) {
  const auto whole = std::int64_t(std::llround(std::max(0.0, seconds)));
  char text[48];
  if (whole < 60)
    std::snprintf(text, sizeof text, "%lld s", (long long)whole);
  else if (whole < 3600)
    std::snprintf(text, sizeof text, "%lld min %lld s", (long long)(whole / 60),
                  (long long)(whole % 60));
  else
    std::snprintf(text, sizeof text, "%lld h %02lld min", (long long)(whole / 3600),
                  (long long)(whole % 3600 / 60));
  return text;
}

Progress::Progress(std::ostream& err, ProgressStyle style, ProgressPace pace, Clock clock)
    : err_(err), style_(style), pace_(pace), clock_(std::move(clock)) {
  if (!clock_)
    clock_ = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
          .count();
    };
  last_update_ = clock_();
}

Progress::~Progress() {
  if (bar_open_)
    err_ << "\n" << std::flush;
}

void Progress::begin(const std::string& unit, std::size_t done_before) {
  unit_ = unit;
  start_ = last_update_ = clock_();
  first_ = done_before;
  last_shown_ = -1;
  shown_percent_ = -1;
  bar_width_ = 0;
}

void Progress::update(std::size_t done, std::size_t total, const std::string& unit, bool at_least) {
  if (style_ == ProgressStyle::kNone)
    return;
  const double now = clock_();
  if (unit != unit_) {
    const double previous = last_update_;
    begin(unit, 0);
    start_ = previous;
  }
  last_update_ = now;
  if (style_ == ProgressStyle::kBar) {
    draw_bar(done, total, now, at_least);
    return;
  }
  // Short work prints nothing; long work a line per interval and one when it ends.
  const bool ran_long = now - start_ >= pace_.delay;
  const bool due = last_shown_ < 0 || now - last_shown_ >= pace_.interval;
  // A call that reports no step of this work's own (a resumed sweep's start) has nothing to say.
  const bool moved = done > first_;
  if (done >= total ? ran_long || last_shown_ >= 0 : moved && ran_long && due)
    write_line(done, total, now, at_least);
}

// Steps done in this work, at the rate so far; empty before the first.
std::string Progress::time_left(std::size_t done, std::size_t total, double now,
                                bool at_least) const {
  if (done <= first_ || done >= total)
    return "";
  const double rate = double(done - first_) / std::max(now - start_, 1e-9);
  return std::string(at_least ? "at least " : "about ") +
         progress_duration(double(total - done) / rate) + " left";
}

void Progress::write_line(std::size_t done, std::size_t total, double now, bool at_least) {
  last_shown_ = now;
  const int percent = total ? int(std::min(done, total) * 100 / total) : 100;
  err_ << "progress: " << done << "/" << total << " " << unit_ << " (" << percent << "%) ";
  if (done >= total) {
    err_ << "done in " << progress_duration(now - start_) << "\n" << std::flush;
    return;
  }
  const auto left = time_left(done, total, now, at_least);
  err_ << "after " << progress_duration(now - start_) << (left.empty() ? "" : ", " + left) << "\n"
       << std::flush;
}

// Redrawn when the percentage changes, and each second for the time left; '\r' returns to the
// line's start and spaces clear what a longer text left.
void Progress::draw_bar(std::size_t done, std::size_t total, double now, bool at_least) {
  const int percent = total ? int(std::min(done, total) * 100 / total) : 100;
  if (percent == shown_percent_ && done < total && now - last_shown_ < 1)
    return;
  shown_percent_ = percent;
  last_shown_ = now;
  constexpr std::size_t kWidth = 30;
  const std::size_t filled = total ? std::min(done, total) * kWidth / total : kWidth;
  std::string bar(filled, '=');
  if (filled < kWidth)
    bar += '>' + std::string(kWidth - filled - 1, ' ');
  const auto left = time_left(done, total, now, at_least);
  std::string text = "[" + bar + "] " + std::to_string(done) + "/" + std::to_string(total) + " " +
                     unit_ + (left.empty() ? "" : ", " + left);
  const std::size_t width = text.size();
  if (width < bar_width_)
    text += std::string(bar_width_ - width, ' ');
  bar_width_ = width;
  err_ << "\r" << text << std::flush;
  bar_open_ = done < total;
  if (done >= total)
    err_ << "\n";
}

ProgressStyle progress_style(const std::string& option, bool quiet, const std::ostream& err) {
  if (quiet || option == "none")
    return ProgressStyle::kNone;
  if (option == "bar")
    return ProgressStyle::kBar;
  if (option == "lines")
    return ProgressStyle::kLines;
  if (&err != &std::cerr)
    return ProgressStyle::kNone;
  return is_terminal(err) ? ProgressStyle::kBar : ProgressStyle::kLines;
}

void add_progress_option(CLI::App* command, std::string& target) {
  command
      ->add_option("--progress", target,
                   "How progress shows on the error stream: auto (a bar on a terminal, else a "
                   "line every 5 s after the first 2 s), bar, lines or none")
      ->check(CLI::IsMember(kProgressStyles));
}

bool is_terminal(const std::ostream& stream) {
  return &stream == &std::cerr && ::isatty(STDERR_FILENO);
}

}  // namespace ipusim::cli
