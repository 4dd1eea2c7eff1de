#pragma once
// The keys of the config's `pipeline`, `hardware` and `data` sections, each declared once with its
// default and meaning, and the scalar ones with their kind and range: validation accepts exactly
// these (with "did you mean") and reads the scalars through them, and the README's key tables are
// these tables (tests/sim/spec/config_keys_test.cpp renders and compares them).

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/core/config_node.hpp"
#include "sim/core/key.hpp"

namespace ipusim::sim {

// A key of these sections is declared as a layer type's keys are (core::Key): the scalar ones
// with their kind, range or choices and default, read through it; lists, objects and defaults
// that depend on the model (kOther) state their default in words and are read by their
// section's reader. A hardware key's default is the gc200 preset's figure, written from it.
using ConfigKey = core::Key;
using core::declared_key;
using core::key_names;
using core::read_bool;
using core::read_choice;
using core::read_int;

// A key of kind kOther: its default in Markdown words.
ConfigKey other_key(std::string name, std::string default_text, std::string meaning);

// The default as the README's table shows it (Markdown), and the meaning, which a choice opens
// with its choices.
std::string markdown_default(const ConfigKey& key);
std::string markdown_meaning(const ConfigKey& key);

const std::vector<ConfigKey>& pipeline_keys();
const std::vector<ConfigKey>& hardware_keys();
const std::vector<ConfigKey>& data_keys();

// The sections above with their keys, in the order the README documents them.
struct ConfigSection {
  std::string name;  // "pipeline"
  const std::vector<ConfigKey>* keys;
};
const std::vector<ConfigSection>& config_sections();

// The README's table: `header` (its first line), the separator, one row per key.
std::string markdown_table(const std::vector<ConfigKey>& keys, const std::string& header);

}  // namespace ipusim::sim
