#pragma once
// The three kinds of failure ipusim distinguishes, and the exit code of each.
// A ConfigError is the user's fault and names where in which file; a SimulationOutcome is a
// legitimate result of simulating a valid config (out of memory); an InternalError is a bug.
// Nothing below main() exits: these are thrown and main() maps them to exit codes.

#include <stdexcept>
#include <string>

namespace ipusim::core {

// What the ipusim process returns, one code per kind of failure; main() alone maps errors to it.
enum class ExitCode : int {
  kOk = 0,
  kUsage = 1,              // bad command line (unknown flag, missing argument)
  kConfigError = 2,        // the config or an override is invalid
  kSimulationOutcome = 3,  // the run is valid but does not fit (out of memory)
  kNumericMismatch = 4,    // the pipelined numbers differ from the reference
  kInternalError = 70,     // a bug in ipusim
};

// A problem in user input: `file` and `pointer` (a JSON pointer) say where, `message` what was
// expected. what() is the one-paragraph text printed to the user.
class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string file, std::string pointer, std::string message);
  const std::string& file() const { return file_; }
  const std::string& pointer() const { return pointer_; }
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  std::string pointer_;
  std::string message_;
};

// A ConfigError about a path that names nothing: a key the reader does not know, or an index
// beyond a list. Kept apart from errors about a value, so that a caller varying a path can tell
// a misspelt path from a value that does not fit.
class UnknownPathError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

// A valid run whose result is a failure the user must act on (e.g. an IPU runs out of memory).
class SimulationOutcome : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A violated invariant inside ipusim. The text says it is a bug.
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& invariant);
};

[[noreturn]] void fail_invariant(const char* condition, const char* file, int line);

}  // namespace ipusim::core

// Stays on in release builds: a wrong simulation is worse than a slower one.
#define IPUSIM_CHECK(cond)                                       \
  do {                                                           \
    if (!(cond))                                                 \
      ::ipusim::core::fail_invariant(#cond, __FILE__, __LINE__); \
  } while (false)
