#include "sim/core/output_file.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/core/error.hpp"

namespace fs = std::filesystem;

TEST_CASE("an output file is written whole and no temporary file is left behind") {
  const fs::path dir = fs::path(IPUSIM_BINARY_DIR) / "output_file_test";
  fs::create_directories(dir);
  const auto path = (dir / "report.json").string();
  ipusim::core::write_file_atomically(path, "{}\n");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str() == "{}\n");
  CHECK_FALSE(fs::exists(path + ".partial"));
}

TEST_CASE("an output file in a missing folder is an error naming the file and the folder") {
  CHECK_THROWS_WITH(ipusim::core::write_file_atomically("/nonexistent/ipusim/x.json", "{}"),
                    "/nonexistent/ipusim/x.json: cannot write the output file: the folder "
                    "/nonexistent/ipusim does not exist");
}
