#pragma once
// Progress of long work (plan's settings, sweep's runs, calibrate's replays) on standard error.
// On a terminal a bar redrawn in place: "[=====>    ] 412/1000 runs, about 54 s left". Elsewhere
// (a log, a pipe, a batch job) plain lines, paced so a log is not flooded:
//   progress: 412/1000 runs (41%) after 38 s, about 54 s left
//   progress: 1000/1000 runs (100%) done in 1 min 32 s
// Lines follow ProgressPace: none in the first 2 s of work (short work prints nothing), then at
// most one every 5 s, and a final line when the work ends if it ran past those first 2 s.

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <string>

namespace CLI {
class App;
}

namespace ipusim::cli {

enum class ProgressStyle { kBar, kLines, kNone };

// When lines are written. IPUSIM_PROGRESS_INTERVAL=SECONDS sets `interval` (and `delay` to the
// lesser of 2 s and it): 0 writes a line at every step, which the tests use.
struct ProgressPace {
  double delay = 2;     // seconds of work before the first line
  double interval = 5;  // seconds at least between two lines
};

// The pace IPUSIM_PROGRESS_INTERVAL asks for, the default without it; a value that is not a
// number of seconds from 0 to 3600 is a core::ConfigError naming the variable.
ProgressPace progress_pace_from_environment();

// "38 s", "1 min 32 s", "2 h 05 min": a time to the second, as progress shows it.
std::string progress_duration(double seconds);

// Shows the progress of one piece of work after another on `err`. Not thread-safe: the
// commands call it from one thread at a time.
class Progress {
 public:
  // Seconds from a fixed point; steady by default, a fake one in tests.
  using Clock = std::function<double()>;

  Progress(std::ostream& err, ProgressStyle style, ProgressPace pace = {}, Clock clock = {});
  // Ends a bar that work stopped before its end (an error, out of memory), so that what the
  // command prints next starts on a line of its own.
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Starts work of `unit` now, `done_before` of its steps done already (a resumed sweep's), which
  // do not count toward the rate.
  void begin(const std::string& unit, std::size_t done_before);
  // `done` of `total` steps of `unit` ("settings", "runs"). A new unit starts new work (a new
  // bar), timed from the last update of the one before (from construction for the first). With
  // `at_least`, `total` is the least the work needs and may grow, and the time left is said to
  // be at least the estimate.
  void update(std::size_t done, std::size_t total, const std::string& unit, bool at_least = false);

 private:
  void draw_bar(std::size_t done, std::size_t total, double now, bool at_least);
  void write_line(std::size_t done, std::size_t total, double now, bool at_least);
  std::string time_left(std::size_t done, std::size_t total, double now, bool at_least) const;

  std::ostream& err_;
  ProgressStyle style_;
  ProgressPace pace_;
  Clock clock_;
  std::string unit_;
  double start_ = 0;        // when the work of unit_ started
  double last_update_ = 0;  // when update was last called, or construction
  std::size_t first_ = 0;   // its steps done before then
  double last_shown_ = -1;  // when the bar or a line was last shown; -1: never
  int shown_percent_ = -1;
  std::size_t bar_width_ = 0;  // characters of the bar last drawn, to clear a longer one
  bool bar_open_ = false;      // a bar is drawn and its line not ended
};

// The style `--progress` and `--quiet` choose for `err`: none with --quiet; for "auto", a bar
// when `err` is standard error on a terminal, lines when it is standard error elsewhere, none
// when the command line runs in-process into another stream (as the tests run it).
ProgressStyle progress_style(const std::string& option, bool quiet, const std::ostream& err);

// Adds --progress auto|bar|lines|none, stored as typed in `target`.
void add_progress_option(CLI::App* command, std::string& target);

// Whether `stream` is standard error and standard error is a terminal.
bool is_terminal(const std::ostream& stream);

}  // namespace ipusim::cli
