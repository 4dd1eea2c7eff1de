#pragma once
// What many tests use: files read and written whole, output paths under the build folder, the
// config most tests run, and the message of an expected error. Stated once here, so that a test
// program compiled as one file (a unity build) does not define them twice.

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/scratch_folder.hpp"

namespace ipusim::testing {

inline const std::string kTf1Config = "configs/tf1_mnist_2ipu.json";
// The tf1 MLP cut into four stages on IPUs 0, 1, 0, 1 (--set values): two stages an IPU, as
// interleaved_1f1b needs.
inline const std::vector<std::string> kTf1FourStages = {
    "pipeline.splits=[\"dense128\", \"dense64\", \"dense32\"]",
    "pipeline.device_mapping=[0, 1, 0, 1]"};

// The whole file ("" when it cannot be read).
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// The message of the `Error` that `action` throws, or "no error".
template <typename Error>
std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

// <build>/<folder>/<name>, with the folder made and the file absent.
inline std::string fresh_output(const std::string& folder, const std::string& name) {
  const auto dir = std::filesystem::path(IPUSIM_BINARY_DIR) / folder;
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::filesystem::remove(path);
  return path.string();
}

// `name` in the scratch folder of this test process (scratch_folder.hpp).
inline std::string scratch_path(const std::string& program, const std::string& name) {
  return (scratch_folder(program) / name).string();
}

// Writes `text` to `name` in the scratch folder and returns the file's path.
inline std::string write_scratch(const std::string& program, const std::string& name,
                                 const std::string& text) {
  const auto path = scratch_path(program, name);
  write_file(path, text);
  return path;
}

}  // namespace ipusim::testing
