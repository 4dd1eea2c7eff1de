// Progress on the error stream: the bar on a terminal, paced lines elsewhere, and the commands
// that show it (run, compare, plan, sweep, calibrate).

#include "tools/ipusim/progress.hpp"

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <regex>
#include <sstream>

#include "tests/tools/cli_support.hpp"

namespace {

using namespace ipusim::testing;
using ipusim::cli::Progress;
using ipusim::cli::ProgressPace;
using ipusim::cli::ProgressStyle;

// A Progress on `err` whose clock reads `now`.
Progress progress_at(std::ostream& err, ProgressStyle style, ProgressPace pace, double& now) {
  return Progress(err, style, pace, [&now] { return now; });
}

// Sets IPUSIM_PROGRESS_INTERVAL for one test, as a user would in the environment.
class ProgressIntervalForTest {
 public:
  explicit ProgressIntervalForTest(const char* value) {
    ::setenv("IPUSIM_PROGRESS_INTERVAL", value, 1);
  }
  ~ProgressIntervalForTest() { ::unsetenv("IPUSIM_PROGRESS_INTERVAL"); }
  ProgressIntervalForTest(const ProgressIntervalForTest&) = delete;
  ProgressIntervalForTest& operator=(const ProgressIntervalForTest&) = delete;
};

// `text` with every time ("7 s", "1 min 3 s", "2 h 05 min") as T: the commands' own clocks.
std::string times_masked(const std::string& text) {
  static const std::regex time(R"(\b(\d+ h \d+ min|\d+ min \d+ s|\d+ s)\b)");
  return std::regex_replace(text, time, "T");
}

}  // namespace

TEST_CASE("progress lines wait 2 s, then come at most every 5 s, and a last line ends the work") {
  std::ostringstream err;
  double now = 0;
  auto progress = progress_at(err, ProgressStyle::kLines, {}, now);
  // 3 of 10 in 2 s leave 7 at 1.5 a second: 4.67 s, shown as 5 s.
  const std::vector<std::pair<double, std::size_t>> steps = {{1, 1},   {1.9, 2}, {2, 3},
                                                             {6.9, 5}, {7, 6},   {8, 10}};
  for (const auto& [time, done] : steps) {
    now = time;
    progress.update(done, 10, "settings");
  }
  CHECK(err.str() ==
        "progress: 3/10 settings (30%) after 2 s, about 5 s left\n"
        "progress: 6/10 settings (60%) after 7 s, about 5 s left\n"
        "progress: 10/10 settings (100%) done in 8 s\n");
}

TEST_CASE("work shorter than 2 s prints no progress line, and longer work a last line alone") {
  std::ostringstream err;
  double now = 0;
  auto progress = progress_at(err, ProgressStyle::kLines, {}, now);
  now = 0.5;
  progress.update(1, 2, "runs");
  now = 1.9;
  progress.update(2, 2, "runs");
  CHECK(err.str().empty());
  now = 3;
  progress.update(1, 2, "replays");
  now = 4.4;
  progress.update(2, 2, "replays");
  // The replays' work starts at the runs' last update, 1.9 s: 2.5 s, shown as 3 s.
  CHECK(err.str() == "progress: 2/2 replays (100%) done in 3 s\n");
}

TEST_CASE("a growing total says at least, and long times read in minutes and hours") {
  std::ostringstream err;
  double now = 0;
  auto progress = progress_at(err, ProgressStyle::kLines, {0, 0}, now);
  now = 30;
  progress.update(1, 4, "replays", true);
  now = 3700;
  progress.update(2, 5, "replays", true);
  CHECK(err.str() ==
        "progress: 1/4 replays (25%) after 30 s, at least 1 min 30 s left\n"
        "progress: 2/5 replays (40%) after 1 h 01 min, at least 1 h 32 min left\n");
  CHECK(ipusim::cli::progress_duration(59.4) == "59 s");
  CHECK(ipusim::cli::progress_duration(3599) == "59 min 59 s");
  CHECK(ipusim::cli::progress_duration(3600) == "1 h 00 min");
}

TEST_CASE("a resumed sweep's runs done before do not count toward the time left") {
  std::ostringstream err;
  double now = 0;
  auto progress = progress_at(err, ProgressStyle::kLines, {0, 0}, now);
  now = 10;
  progress.begin("runs", 40);
  now = 20;
  progress.update(50, 100, "runs");
  CHECK(err.str() == "progress: 50/100 runs (50%) after 10 s, about 50 s left\n");
}

TEST_CASE("the progress bar is redrawn in place with the time left and cleared of longer text") {
  std::ostringstream err;
  double now = 0;
  auto progress = progress_at(err, ProgressStyle::kBar, {}, now);
  now = 1;
  progress.update(0, 10, "runs");
  now = 2;
  progress.update(5, 10, "runs");
  now = 3;
  progress.update(10, 10, "runs");
  // The last text is 15 characters shorter than ", about 2 s left" made the one before.
  CHECK(err.str() ==
        "\r[>                             ] 0/10 runs"
        "\r[===============>              ] 5/10 runs, about 2 s left"
        "\r[==============================] 10/10 runs" +
            std::string(15, ' ') + "\n");
}

TEST_CASE("a progress bar that work leaves unfinished ends its line when the display goes") {
  std::ostringstream err;
  {
    double now = 0;
    auto progress = progress_at(err, ProgressStyle::kBar, {}, now);
    now = 5;
    progress.update(5, 10, "tasks");
  }
  CHECK(err.str() == "\r[===============>              ] 5/10 tasks, about 5 s left\n");
}

TEST_CASE(
    "run --progress lines counts the tasks replayed every 65,536 or so, and --quiet is silent") {
  const ProgressIntervalForTest every_step("0");
  // 8 tasks a micro-batch x 30,000 micro-batches, by the BSP engine (grouped) and by the
  // dependency-ordered one (1f1b): a line at the end of the step, or of the IPU's run of tasks,
  // that passes each 65,536 tasks, then the last.
  const std::vector<std::pair<std::string, int>> passed_by = {{"grouped", 1}, {"1f1b", 6}};
  for (const auto& [schedule, past] : passed_by) {
    CAPTURE(schedule);
    std::string expected;
    const std::vector<std::pair<int, int>> lines = {{65536, 27}, {131072, 54}, {196608, 81}};
    for (const auto& [done, percent] : lines)
      expected += "progress: " + std::to_string(done + past) + "/240000 tasks (" +
                  std::to_string(percent) + "%) after T, about T left\n";
    const std::vector<std::string> run = {"run",          kTf1Config,   "--gac",
                                          "30000",        "--schedule", schedule,
                                          "--no-numeric", "--progress", "lines"};
    const auto result = run_ipusim(run);
    CHECK(result.code == 0);
    CHECK(times_masked(result.err) ==
          expected + "progress: 240000/240000 tasks (100%) done in T\n");
    auto quiet = run;
    quiet.push_back("--quiet");
    const auto silent = run_ipusim(quiet);
    CHECK(silent.code == 0);
    CHECK(silent.err.empty());
    CHECK(silent.out.empty());
  }
}

TEST_CASE("compare --progress lines counts the tasks of all its runs, one run after another") {
  const ProgressIntervalForTest every_step("0");
  // Two runs of 8 tasks a micro-batch x 30,000 micro-batches: 480,000 tasks. The first (grouped)
  // tells each 65,536 tasks passed at the end of a step (1 task past), then its end; the second
  // (1f1b) counts on from 240,000, at the end of an IPU's run of tasks (6 past).
  std::string expected;
  const std::vector<std::pair<int, int>> lines = {{65537, 13},  {131073, 27}, {196609, 40},
                                                  {240000, 50}, {305542, 63}, {371078, 77},
                                                  {436614, 90}};
  for (const auto& [done, percent] : lines)
    expected += "progress: " + std::to_string(done) + "/480000 tasks (" + std::to_string(percent) +
                "%) after T, about T left\n";
  const std::vector<std::string> compare = {"compare",     kTf1Config,     "--gac",      "30000",
                                            "--schedules", "grouped,1f1b", "--progress", "lines"};
  const auto result = run_ipusim(compare);
  CHECK(result.code == 0);
  CHECK(times_masked(result.err) == expected + "progress: 480000/480000 tasks (100%) done in T\n");
  auto quiet = compare;
  quiet.push_back("--quiet");
  const auto silent = run_ipusim(quiet);
  CHECK(silent.code == 0);
  CHECK(silent.err.empty());
}

TEST_CASE("run's progress counts the tasks of every repeat the kernels run in") {
  const ProgressIntervalForTest every_step("0");
  // 8 tasks a micro-batch x 8 micro-batches x 3 repeats, fewer than 2^16: the last line alone.
  const auto result = run_ipusim({"run", kTf1Config, "--gac", "8", "--set",
                                  "pipeline.repeat_count=3", "--numeric", "--progress", "lines"});
  CHECK(result.code == 0);
  CHECK(times_masked(result.err) == "progress: 192/192 tasks (100%) done in T\n");
}

TEST_CASE("plan --progress lines writes a line per setting when IPUSIM_PROGRESS_INTERVAL is 0") {
  const ProgressIntervalForTest every_step("0");
  const auto result =
      run_ipusim({"plan", kTf1Config, "--gac", "8,16", "--top", "1", "--progress", "lines"});
  CHECK(result.code == 0);
  CHECK(times_masked(result.err) ==
        "progress: 1/6 settings (16%) after T, about T left\n"
        "progress: 2/6 settings (33%) after T, about T left\n"
        "progress: 3/6 settings (50%) after T, about T left\n"
        "progress: 4/6 settings (66%) after T, about T left\n"
        "progress: 5/6 settings (83%) after T, about T left\n"
        "progress: 6/6 settings (100%) done in T\n");
  const auto quiet = run_ipusim(
      {"plan", kTf1Config, "--gac", "8,16", "--top", "1", "--progress", "lines", "--quiet"});
  CHECK(quiet.code == 0);
  CHECK(quiet.err.empty());
}

TEST_CASE("sweep --progress lines counts runs, and --quiet turns it off") {
  const ProgressIntervalForTest every_step("0");
  const std::vector<std::string> sweep = {
      "sweep",      kTf1Config, "--vary", "pipeline.gradient_accumulation_count=8,16",
      "--progress", "lines",    "-o",     scratch("progress.csv")};
  std::filesystem::remove(scratch("progress.csv"));
  const auto result = run_ipusim(sweep);
  CHECK(result.code == 0);
  CHECK(times_masked(result.err) ==
        "progress: 1/2 runs (50%) after T, about T left\n"
        "progress: 2/2 runs (100%) done in T\n");
  std::filesystem::remove(scratch("progress.csv"));
  auto quiet = sweep;
  quiet.push_back("--quiet");
  const auto silent = run_ipusim(quiet);
  CHECK(silent.code == 0);
  CHECK(silent.err.empty());
}

TEST_CASE("calibrate --progress lines counts its replays against the least the fit needs") {
  const ProgressIntervalForTest every_step("0");
  const std::string measured = write("progress_measured.csv",
                                     "set,stage,forward_cycles,backward_cycles,step_cycles\n"
                                     "pipeline.gradient_accumulation_count=8,,,,900000\n");
  const auto result =
      run_ipusim({"calibrate", kTf1Config, "--measured", measured, "--fit", "compute_set_cycles",
                  "--progress", "lines", "--set", "hardware.operations.pricing=fitted"});
  CHECK(result.code == 0);
  // One variant, one parameter fitted of 10. At least 15: the variant once, then 14 more (the
  // rank check's start and 10 differences, the fit's start, a trial, the configured
  // predictions). Once the fit knows it moves one parameter: its start, a difference and a
  // trial per iteration, then the end point's difference and the configured predictions, so
  // 17 after replay 12; each iteration (a difference and a trial) adds 2, and each further
  // trial of an iteration whose steps fail (12 here, replays 17 to 28) adds one.
  std::string expected;
  for (std::size_t done = 1; done <= 30; ++done) {
    const std::size_t least = done <= 12   ? 15
                              : done <= 15 ? 17
                              : done <= 17 ? 19
                              : done <= 28 ? done + 2
                                           : 30;
    expected += "progress: " + std::to_string(done) + "/" + std::to_string(least) + " replays (" +
                std::to_string(done * 100 / least) + "%) " +
                (done == 30 ? "done in T\n" : "after T, at least T left\n");
  }
  CHECK(times_masked(result.err) == expected);
  const auto quiet =
      run_ipusim({"calibrate", kTf1Config, "--measured", measured, "--fit", "compute_set_cycles",
                  "--progress", "lines", "--quiet", "--set", "hardware.operations.pricing=fitted"});
  CHECK(quiet.code == 0);
  CHECK(quiet.err.empty());
}

TEST_CASE(
    "a progress interval IPUSIM_PROGRESS_INTERVAL that is not seconds is an error naming it") {
  // One rule, decimal digits: no hexadecimal, sign, exponent or space on either side.
  for (const char* value : {"soon", "0x10", " 5", "5 ", "+5", "1e2", ".5", "5.", "3601"}) {
    INFO(value);
    const ProgressIntervalForTest bad(value);
    const auto result = run_ipusim({"plan", kTf1Config, "--gac", "8", "--top", "1"});
    CHECK(result.code == 2);
    CHECK(result.err ==
          "error: IPUSIM_PROGRESS_INTERVAL: expected the seconds between two progress lines, a "
          "number from 0 to 3600 in decimal digits (5, 0.5), found '" +
              std::string(value) + "'\n");
  }
}
