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

namespace ipusim::sim {

// What validation reads from a key's declaration alone: its kind, range, choices and default.
// kOther keys (lists, objects, defaults that depend on the model or the preset) are read by
// their section's reader.
enum class KeyType { kOther, kInt, kBool, kChoice };

struct ConfigKey {
  ConfigKey(std::string name, std::string default_text, std::string meaning)
      : name(std::move(name)), default_text(std::move(default_text)), meaning(std::move(meaning)) {}

  std::string name;
  std::string default_text;  // Markdown, as the README's table shows it
  std::string meaning;       // Markdown
  KeyType type = KeyType::kOther;
  std::int64_t min = 0;  // kInt: the range, both ends allowed
  std::int64_t max = 0;
  std::int64_t int_default = 0;
  bool bool_default = false;         // kBool
  std::vector<std::string> choices;  // kChoice
  std::string choice_default;
};

// Typed declarations; the README's default (and, for a choice, the list of choices that opens
// the meaning) is written from the typed default.
ConfigKey int_key(std::string name, std::int64_t fallback, std::int64_t min, std::int64_t max,
                  std::string meaning);
ConfigKey bool_key(std::string name, bool fallback, std::string meaning);
ConfigKey choice_key(std::string name, std::vector<std::string> choices, std::string fallback,
                     std::string meaning = "");

// The declaration of `name` among `keys`; a name not declared is a bug.
const ConfigKey& declared_key(const std::vector<ConfigKey>& keys, std::string_view name);

// `key` of `section` as declared: its default when absent, otherwise a value of its kind in
// its range (or among its choices), or an error at the key's path.
std::int64_t read_int(const core::ConfigNode& section, const ConfigKey& key);
bool read_bool(const core::ConfigNode& section, const ConfigKey& key);
std::string read_choice(const core::ConfigNode& section, const ConfigKey& key);

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
