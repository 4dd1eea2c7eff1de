#pragma once
// The memory benchmarks' measurement: a command run as a child, its output thrown away, with its
// wall time and peak resident set (getrusage's ru_maxrss of the child, its own children
// included).

#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace ipusim::bench {

struct Usage {
  double seconds = 0;
  long peak_kb = 0;
  int status = 0;
};

inline Usage run_child(const std::vector<std::string>& args) {
  // A forked child starts with this process's resident pages and exec keeps that high-water
  // mark, so the heap the benchmark freed (the inputs it generated) goes back first.
  ::malloc_trim(0);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (const auto& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    std::freopen("/dev/null", "w", stdout);
    std::freopen("/dev/null", "w", stderr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  Usage usage;
  struct rusage r {};
  ::wait4(pid, &usage.status, 0, &r);
  usage.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  usage.peak_kb = r.ru_maxrss;
  return usage;
}

}  // namespace ipusim::bench
