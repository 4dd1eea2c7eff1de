#pragma once
// The ipusim command line as a function, so that tests run it in-process and see exactly what
// a user sees: the text on each stream and the exit code.

#include <iosfwd>
#include <string>
#include <vector>

namespace ipusim::cli {

// `args` excludes the program name. Returns the process exit code (core::ExitCode).
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace ipusim::cli
