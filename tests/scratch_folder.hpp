#pragma once
// A scratch folder for the files a test program writes: <build>/<program>/<process id>, emptied
// the first time a process asks for it. Per process because CTest runs each test case in a
// process of its own, several at once; a folder shared by the program would be emptied under a
// neighbour still using it. A program names one folder, always the same.

#include <unistd.h>

#include <filesystem>
#include <string>

namespace ipusim::testing {

inline std::filesystem::path scratch_folder(const std::string& program) {
  static const std::filesystem::path folder = [&] {
    const auto path =
        std::filesystem::path(IPUSIM_BINARY_DIR) / program / std::to_string(::getpid());
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
    return path;
  }();
  return folder;
}

}  // namespace ipusim::testing
