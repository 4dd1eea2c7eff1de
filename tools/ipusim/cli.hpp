#pragma once
// The ipusim command line as a function, so that tests run it in-process and see exactly what
// a user sees: the text on each stream and the exit code.

#include <iosfwd>
#include <string>
#include <vector>

namespace ipusim::cli {

inline constexpr const char* kVersion = "ipusim 0.1.0";

// `args` excludes the program name. Returns the process exit code (core::ExitCode).
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// "Exit codes: 0 success, ..." and "Hardware presets (hardware.preset): ...", as --help and the
// manual page end.
std::string exit_codes_text();
std::string presets_text();

}  // namespace ipusim::cli
