#include "sim/core/error.hpp"

namespace ipusim::core {
namespace {

std::string compose(const std::string& file, const std::string& pointer,
                    const std::string& message) {
  std::string where = file.empty() ? "" : file + ": ";
  if (!pointer.empty())
    where += "at " + pointer + ": ";
  return where + message;
}

// what() is a C string: a NUL a value holds would end the message there, so it is written
// as the escape `printable` gives the other control characters.
std::string without_nul(std::string text) {
  for (std::size_t at = text.find('\0'); at != std::string::npos; at = text.find('\0', at + 4))
    text.replace(at, 1, "\\x00");
  return text;
}

}  // namespace

ConfigError::ConfigError(std::string file, std::string pointer, std::string message)
    : std::runtime_error(without_nul(compose(file, pointer, message))),
      file_(std::move(file)),
      pointer_(std::move(pointer)),
      message_(std::move(message)) {}

InternalError::InternalError(const std::string& invariant)
    : std::logic_error("internal error (this is a bug in ipusim): " + invariant) {}

void fail_invariant(const char* condition, const char* file, int line) {
  throw InternalError(std::string(condition) + " does not hold (" + file + ":" +
                      std::to_string(line) + ")");
}

}  // namespace ipusim::core
