// A user's Ctrl-C, a kill or a closed terminal while outputs are written leaves no temporary
// file behind: ipusim removes them and dies of the signal (sim/core/signal_cleanup.hpp).

#include <signal.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <thread>

#include "tests/tools/cli_support.hpp"

namespace {

namespace fs = std::filesystem;
using namespace ipusim::testing;

// Every file under `dir` whose name ends in ".partial".
std::vector<std::string> partial_files(const fs::path& dir) {
  std::vector<std::string> found;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.path().extension() == ".partial")
      found.push_back(entry.path().string());
  }
  return found;
}

bool running(pid_t child) {
  int status = 0;
  return ::waitpid(child, &status, WNOHANG) == 0;
}

// Starts a training whose --save files are all written to temporaries at the start and renamed
// only once the training ends, and waits until the first temporary shows.
pid_t start_saving_training(const fs::path& dir, const std::vector<int>& ignored = {}) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  const pid_t child = spawn_ipusim(
      {"train", kTf1Config, "--epochs", "1000", "--gac", "4", "--micro-batch", "8", "--set",
       "data.source=\"synthetic\"", "--test-samples", "0", "--save", (dir / "save").string()},
      (dir / "err.txt").string(), ignored);
  while (partial_files(dir).empty()) {
    REQUIRE(running(child));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return child;
}

int status_after(pid_t child, int signal) {
  ::kill(child, signal);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  return status;
}

}  // namespace

TEST_CASE(
    "train --save stopped by SIGINT, SIGTERM or SIGHUP leaves neither a file nor its folder") {
  for (const int signal : {SIGINT, SIGTERM, SIGHUP}) {
    const fs::path dir = fs::path(IPUSIM_BINARY_DIR) / "signal_test" / std::to_string(signal);
    const int status = status_after(start_saving_training(dir), signal);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == signal);
    CHECK_FALSE(fs::exists(dir / "save"));  // the folder train --save made, empty again
    CHECK(read_file(dir / "err.txt").empty());
  }
}

TEST_CASE("a training started with SIGHUP ignored, as nohup starts it, goes on after a SIGHUP") {
  const fs::path dir = fs::path(IPUSIM_BINARY_DIR) / "signal_test" / "nohup";
  const pid_t child = start_saving_training(dir, {SIGHUP});
  ::kill(child, SIGHUP);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(running(child));
  CHECK_FALSE(partial_files(dir).empty());
  const int status = status_after(child, SIGTERM);
  CHECK(WTERMSIG(status) == SIGTERM);
  CHECK_FALSE(fs::exists(dir / "save"));
}

TEST_CASE("a sweep without -o stopped by a signal or a closed pipe keeps nothing") {
  // The closed pipe of `ipusim sweep ... | head` arrives as SIGPIPE.
  for (const int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) {
    const fs::path dir =
        fs::path(IPUSIM_BINARY_DIR) / "signal_test" / "sweep" / std::to_string(signal);
    fs::remove_all(dir);
    fs::create_directories(dir / "tmp");
    ::setenv("TMPDIR", (dir / "tmp").c_str(), 1);
    std::string gacs = "pipeline.gradient_accumulation_count=4";
    for (int gac = 8; gac <= 40000; gac += 4)
      gacs += "," + std::to_string(gac);
    const pid_t child = spawn_ipusim({"sweep", kTf1Config, "--vary", gacs, "--jobs", "1"},
                                     (dir / "err.txt").string());
    const auto csv_exists = [&] {
      for (const auto& entry : fs::recursive_directory_iterator(dir / "tmp")) {
        if (entry.path().filename() == "sweep.csv")
          return true;
      }
      return false;
    };
    while (!csv_exists()) {
      REQUIRE(running(child));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const int status = status_after(child, signal);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == signal);
    CHECK(fs::is_empty(dir / "tmp"));
  }
  ::unsetenv("TMPDIR");
}

TEST_CASE("run --trace stopped by SIGTERM while the trace streams leaves no file") {
  const fs::path dir = fs::path(IPUSIM_BINARY_DIR) / "signal_test" / "trace";
  fs::remove_all(dir);
  fs::create_directories(dir);
  // 5 million micro-batches: the replay runs for many seconds, writing as it goes.
  const pid_t child =
      spawn_ipusim({"run", kTf1Config, "--no-numeric", "--quiet", "--gac", "5000000", "--schedule",
                    "1f1b", "--trace", (dir / "t.pftrace").string()},
                   (dir / "err.txt").string());
  while (partial_files(dir).empty()) {
    REQUIRE(running(child));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const int status = status_after(child, SIGTERM);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
  CHECK(partial_files(dir).empty());
  CHECK_FALSE(fs::exists(dir / "t.pftrace"));
}
