// The README's key tables for `pipeline`, `hardware` and `data` are the declarations validation
// uses, row for row: a key added, renamed or documented in one place and not the other fails here.

#include <catch2/catch.hpp>
#include <string>

#include "sim/core/config_file.hpp"
#include "sim/core/error.hpp"
#include "sim/spec/config_keys.hpp"
#include "sim/spec/spec.hpp"
#include "tests/test_support.hpp"

using namespace ipusim;

namespace {

std::string readme() {
  return testing::read_file("README.md");
}

// The table that follows `heading` in the README, up to its first line that is not a row.
std::string table_after(const std::string& text, const std::string& heading) {
  const auto at = text.find("\n" + heading + "\n");
  REQUIRE(at != std::string::npos);
  auto begin = text.find("\n|", at) + 1;
  auto end = begin;
  while (end < text.size() && text[end] == '|')
    end = text.find('\n', end) + 1;
  return text.substr(begin, end - begin);
}

}  // namespace

TEST_CASE("the README's pipeline key table is the declared pipeline keys") {
  CHECK(table_after(readme(), "### `pipeline`") ==
        sim::markdown_table(sim::pipeline_keys(), "| key | default | meaning |"));
}

TEST_CASE("the README's hardware key table is the declared hardware keys") {
  CHECK(table_after(readme(), "### `hardware`") ==
        sim::markdown_table(sim::hardware_keys(),
                            "| key | gc200 default | source (`../shared/spec/ipu-hardware.md`) |"));
}

TEST_CASE("the README's data key table is the declared data keys") {
  CHECK(table_after(readme(), "### `data`") ==
        sim::markdown_table(sim::data_keys(), "| key | default | meaning |"));
}

TEST_CASE("a pipeline key that is not declared is refused with the nearest declared one") {
  const auto load = [] {
    return sim::load_run_spec("configs/tf1_mnist_2ipu.json",
                              {core::parse_set_argument("pipeline.micro_batch_sizes=8")});
  };
  CHECK_THROWS_WITH(load(), Catch::Contains("micro_batch_sizes") &&
                                Catch::Contains("did you mean 'micro_batch_size'"));
}

// Every declared key is read: a value of the wrong kind is refused at its own JSON path.
TEST_CASE(
    "every declared pipeline and hardware key is read, and refuses a value of the wrong kind") {
  const auto refusal = [](const std::string& path) {
    return testing::error_of<core::ConfigError>([&] {
      sim::load_run_spec("configs/tf1_mnist_2ipu.json",
                         {core::parse_set_argument(path + "={\"unexpected\": true}")});
    });
  };
  for (const auto& [section, keys] : sim::config_sections()) {
    for (const auto& key : *keys) {
      const std::string path = section + "." + key.name;
      INFO(path);
      CHECK_THAT(refusal(path), Catch::Contains("/" + section + "/" + key.name));
    }
  }
}
