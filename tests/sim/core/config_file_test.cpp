#include "sim/core/config_file.hpp"

#include <catch2/catch.hpp>

#include "sim/core/error.hpp"

using namespace ipusim::core;

namespace {
const std::string kData = "tests/sim/core/data/";

std::string load_error(const std::string& file, const std::vector<Override>& overrides = {}) {
  try {
    ConfigDocument::load(kData + file, overrides);
  } catch (const ConfigError& error) {
    return error.what();
  }
  FAIL("no error was raised");
  return "";
}
}  // namespace

TEST_CASE("an included file is loaded first and the including file overrides its keys") {
  const auto document = ConfigDocument::load(kData + "top.json", {});
  CHECK(document.json()["pipeline"]["gradient_accumulation_count"] == 8);
  CHECK(document.json()["pipeline"]["repeat_count"] == 5);
  CHECK_FALSE(document.json().contains("include"));
}

TEST_CASE("each value remembers the file that set it") {
  const auto document = ConfigDocument::load(kData + "top.json", {});
  const auto root = document.root();
  CHECK(root.at("pipeline").at("repeat_count").file() == kData + "top.json");
  CHECK(root.at("pipeline").at("gradient_accumulation_count").file() == kData + "base.json");
  CHECK(root.at("hardware").at("ipus").file() == kData + "base.json");
}

TEST_CASE("overrides accept dotted paths and JSON pointers and parse values as JSON") {
  const auto document = ConfigDocument::load(
      kData + "top.json", {parse_set_argument("pipeline.gradient_accumulation_count=32"),
                           parse_set_argument("/pipeline/pipeline_schedule=interleaved"),
                           parse_set_argument("pipeline.splits=[\"dense32\"]")});
  CHECK(document.json()["pipeline"]["gradient_accumulation_count"] == 32);
  CHECK(document.json()["pipeline"]["pipeline_schedule"] == "interleaved");
  CHECK(document.json()["pipeline"]["splits"] == nlohmann::json::array({"dense32"}));
  CHECK(document.root().at("pipeline").at("gradient_accumulation_count").file() ==
        "--set pipeline.gradient_accumulation_count=32");
}

TEST_CASE("malformed JSON is reported with its file, line and column") {
  CHECK(
      load_error("malformed.json") ==
      "tests/sim/core/data/malformed.json: malformed JSON at line 4, column 3: syntax error while "
      "parsing object key - unexpected '}'; expected string literal");
}

TEST_CASE("a missing config file is reported") {
  CHECK(load_error("absent.json") ==
        "tests/sim/core/data/absent.json: cannot read config file "
        "'tests/sim/core/data/absent.json': No "
        "such file or directory");
}

TEST_CASE("a missing include names the including file and the include entry") {
  CHECK(load_error("missing_include.json") ==
        "tests/sim/core/data/missing_include.json: at /include/0: cannot read included file "
        "'tests/sim/core/data/nowhere.json': No such file or directory");
}

TEST_CASE("a file that includes itself is an include cycle") {
  CHECK(load_error("self.json") ==
        "tests/sim/core/data/self.json: at /include: "
        "'tests/sim/core/data/self.json' includes itself (an include cycle)");
}

TEST_CASE("a --set without '=' is refused with an example") {
  CHECK_THROWS_WITH(parse_set_argument("pipeline.gradient_accumulation_count"),
                    "--set pipeline.gradient_accumulation_count: expected PATH=VALUE, such as "
                    "pipeline.gradient_accumulation_count=32");
}
