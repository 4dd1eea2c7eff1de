#pragma once
// Runs the ipusim command line in-process and keeps what a user would see.

#include <sstream>
#include <string>
#include <vector>

#include "tests/test_support.hpp"
#include "tools/ipusim/cli.hpp"

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

}  // namespace ipusim::testing
