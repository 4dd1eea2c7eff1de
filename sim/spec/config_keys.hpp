#pragma once
// The keys of the config's `pipeline`, `hardware` and `data` sections, each declared once with its
// default and meaning: validation accepts exactly these (with "did you mean"), and the README's
// key tables are these tables (tests/sim/spec/config_keys_test.cpp renders and compares them).

#include <string>
#include <vector>

namespace ipusim::sim {

struct ConfigKey {
  std::string name;
  std::string default_text;  // Markdown, as the README's table shows it
  std::string meaning;       // Markdown
};

const std::vector<ConfigKey>& pipeline_keys();
const std::vector<ConfigKey>& hardware_keys();
const std::vector<ConfigKey>& data_keys();

// The sections above with their keys, in the order the README documents them.
struct ConfigSection {
  std::string name;  // "pipeline"
  const std::vector<ConfigKey>* keys;
};
const std::vector<ConfigSection>& config_sections();

std::vector<std::string> key_names(const std::vector<ConfigKey>& keys);

// The README's table: `header` (its first line), the separator, one row per key.
std::string markdown_table(const std::vector<ConfigKey>& keys, const std::string& header);

}  // namespace ipusim::sim
