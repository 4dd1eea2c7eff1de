// The README's key tables for `pipeline`, `hardware` and `data` are the declarations validation
// uses, row for row: a key added, renamed or documented in one place and not the other fails here.

#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
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

// A typed key is read as declared: a value past either end of its range, or not among its
// choices, is refused at its path with the declared range or the choices; nothing else in the
// readers restates them.
TEST_CASE("every typed pipeline and data key refuses what its declaration excludes") {
  // Token labels are read only for token data, so the data keys are tried with it.
  const auto refusal = [](const std::string& path, const std::string& value) {
    return testing::error_of<core::ConfigError>([&] {
      std::vector<core::Override> sets = {core::parse_set_argument(path + "=" + value)};
      if (path.rfind("data.", 0) == 0 && path != "data.source")
        sets.insert(sets.begin(), core::parse_set_argument("data.source=synthetic_tokens"));
      sim::load_run_spec("configs/tf1_mnist_2ipu.json", sets);
    });
  };
  for (const auto& [section, keys] : sim::config_sections()) {
    for (const auto& key : *keys) {
      const std::string path = section + "." + key.name;
      const std::string at = "at /" + section + "/" + key.name + ": ";
      INFO(path);
      if (key.kind == core::KeyKind::kInt) {
        const std::string range = "expected an integer from " + std::to_string(key.min) + " to " +
                                  std::to_string(key.max);
        CHECK_THAT(refusal(path, std::to_string(key.max + 1)),
                   Catch::Contains(at + range + ", found " + std::to_string(key.max + 1)));
        CHECK_THAT(refusal(path, std::to_string(key.min - 1)),
                   Catch::Contains(at + range + ", found " + std::to_string(key.min - 1)));
      }
      if (key.kind == core::KeyKind::kChoice)
        CHECK_THAT(refusal(path, "no_such_choice"),
                   Catch::Contains(at + "unknown value 'no_such_choice'; expected '" +
                                   key.choices.front() + "'"));
    }
  }
}

TEST_CASE("a typed key left out takes its declared default") {
  const nlohmann::json empty = nlohmann::json::object();
  const core::Origins origins;
  const core::ConfigNode section(empty, "/pipeline", origins);
  const auto& keys = sim::pipeline_keys();
  CHECK(sim::read_int(section, sim::declared_key(keys, "gradient_accumulation_count")) == 1);
  CHECK(sim::read_int(section, sim::declared_key(keys, "replication_factor")) == 1);
  CHECK(sim::read_bool(section, sim::declared_key(keys, "offload_activations")) == false);
  CHECK(sim::read_choice(section, sim::declared_key(keys, "pipeline_schedule")) == "grouped");
  CHECK(sim::read_choice(section, sim::declared_key(keys, "recomputation_mode")) == "none");
}

// The hardware table's defaults are written from the gc200 preset: each one given as a value,
// set on a run that takes gc200's, leaves its hardware as it was.
TEST_CASE("each hardware default the README gives as a value reads back as gc200's figure") {
  const auto gc200 = sim::load_run_spec("configs/tf1_mnist_2ipu.json", {});
  REQUIRE(gc200.hardware.preset == "gc200");
  int checked = 0;
  for (const auto& key : sim::hardware_keys()) {
    const auto text = sim::markdown_default(key);
    const bool code = text.size() >= 2 && text.front() == '`' && text.back() == '`' &&
                      text.find('`', 1) == text.size() - 1;
    const bool integer = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c)) != 0;
    });
    if (!code && !integer)
      continue;
    const std::string value = code ? text.substr(1, text.size() - 2) : text;
    INFO("hardware." + key.name + "=" + value);
    const auto set =
        sim::load_run_spec("configs/tf1_mnist_2ipu.json",
                           {core::parse_set_argument("hardware." + key.name + "=" + value)});
    CHECK(set.hardware == gc200.hardware);
    ++checked;
  }
  CHECK(checked == 19);  // all but ipus, ipus_per_host and operations, which the table words
}
