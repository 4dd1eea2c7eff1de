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

}  // namespace

ConfigError::ConfigError(std::string file, std::string pointer, std::string message)
    : std::runtime_error(compose(file, pointer, message)),
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
