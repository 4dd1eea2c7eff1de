#pragma once
// Runs the ipusim command line in-process and keeps what a user would see.

#include <sstream>
#include <string>
#include <vector>

#include "tools/ipusim/cli.hpp"

namespace ipusim::testing {

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
