// libFuzzer target: arbitrary bytes as a config (and overrides) through the config reader, the
// spec builder and the cost model. A config error is the expected answer to bad input;
// anything else (a crash, a sanitizer report, an uncaught exception) is a finding.
//
// Input: the config text, then optionally NUL-separated overrides "PATH=VALUE". Includes
// resolve against configs/, so the shipped configs make a seed corpus.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/checked.hpp"
#include "sim/core/config_file.hpp"
#include "sim/core/error.hpp"
#include "sim/machine/cost_model.hpp"
#include "sim/spec/spec.hpp"

namespace {

std::vector<std::string> split_at_nul(const std::string& data) {
  std::vector<std::string> parts(1);
  for (char c : data) {
    if (c == '\0')
      parts.emplace_back();
    else
      parts.back() += c;
  }
  return parts;
}

void build(const std::string& data) {
  const auto parts = split_at_nul(data);
  std::vector<ipusim::core::Override> overrides;
  for (std::size_t i = 1; i < parts.size(); ++i)
    overrides.push_back(ipusim::core::parse_set_argument(parts[i]));
  const auto document = ipusim::core::ConfigDocument::parse(
      parts[0], IPUSIM_SOURCE_DIR "/configs/fuzz_input.json", overrides);
  const auto spec = ipusim::sim::build_run_spec(document);
  ipusim::sim::build_cost_model(spec);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    build(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const ipusim::core::ConfigError&) {
  } catch (const ipusim::core::Overflow&) {
    // sim::simulate reports these as config errors; the cost model alone throws them raw.
  }
  return 0;
}
