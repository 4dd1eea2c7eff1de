#include "sim/core/output_file.hpp"

#include <filesystem>
#include <fstream>

#include "sim/core/error.hpp"

namespace ipusim::core {

void write_file_atomically(const std::string& path, const std::string& text) {
  const auto folder = std::filesystem::path(path).parent_path();
  if (!folder.empty() && !std::filesystem::is_directory(folder)) {
    throw ConfigError(
        path, "",
        "cannot write the output file: the folder " + folder.string() + " does not exist");
  }
  const std::string temporary = path + ".partial";
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    file << text;
    if (!file)
      throw ConfigError(path, "", "cannot write the output file");
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error)
    throw ConfigError(path, "", "cannot write the output file: " + error.message());
}

}  // namespace ipusim::core
