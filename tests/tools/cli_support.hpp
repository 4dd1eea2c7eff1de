#pragma once
// Runs the ipusim command line in-process and keeps what a user would see.

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_support.hpp"
#include "tools/ipusim/cli.hpp"

extern char** environ;

namespace ipusim::testing {

// The small config most command-line tests start from.
inline const std::string kBaseConfig = "tests/tools/data/base.json";

// Files the command-line tests write go to one scratch folder per test process.
inline std::string scratch(const std::string& name) {
  return scratch_path("tools_tests", name);
}

inline std::string write(const std::string& name, const std::string& text) {
  return write_scratch("tools_tests", name, text);
}

struct CliResult {
  int code = 0;
  std::string out;
  std::string err;
};

inline CliResult run_ipusim(const std::vector<std::string>& args) {
  std::ostringstream out;
  std::ostringstream err;
  const int code = cli::run(args, out, err);
  return {code, out.str(), err.str()};
}

// Starts the ipusim program with `args`, its error stream going to `err_path`; `ignored`
// signals start ignored, as nohup starts a program with SIGHUP.
inline pid_t spawn_ipusim(std::vector<std::string> args, const std::string& err_path,
                          const std::vector<int>& ignored = {}) {
  const std::string binary = IPUSIM_BINARY_DIR "/tools/ipusim/ipusim";
  std::vector<char*> argv = {const_cast<char*>(binary.c_str())};
  for (auto& arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  // exec(2) keeps a signal ignored (any handler of ours it resets): ignore while spawning.
  std::vector<struct sigaction> before(ignored.size());
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  for (std::size_t i = 0; i < ignored.size(); ++i)
    ::sigaction(ignored[i], &ignore, &before[i]);
  pid_t child = 0;
  const int started = posix_spawn(&child, binary.c_str(), &actions, nullptr, argv.data(), environ);
  for (std::size_t i = 0; i < ignored.size(); ++i)
    ::sigaction(ignored[i], &before[i], nullptr);
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(started == 0);
  return child;
}

}  // namespace ipusim::testing
