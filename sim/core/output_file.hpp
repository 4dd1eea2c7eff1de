#pragma once
// Output files appear whole or not at all: the text goes to a temporary file next to the
// target, which is then renamed over it, so a failed or killed run never leaves a partial file.

#include <string>

namespace ipusim::core {

// Throws core::ConfigError naming `path` when the file cannot be written.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace ipusim::core
