#pragma once
// A config key's declaration: its name, kind, default (or that it is required), range or
// choices and a line on what it means. Every key of every section is declared this way, a
// layer type's keys in its file and the pipeline, hardware and data keys in sim/spec: reading a
// value, validating it, `ipusim layers` and the README's key tables all take the declaration.
//
// A key whose default or check involves another key (maxpool2d's stride defaults to the pool;
// the hardware's defaults are the preset's figures) states that default in words
// (`default_text`) and is read by its section's reader, which applies the rule.

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/config_node.hpp"

namespace ipusim::core {

enum class KeyKind {
  kPositiveInt,     // an integer from 1 (to kMaxCount)
  kInt,             // an integer from `min` to `max`
  kPositiveNumber,  // a number above 0
  kDropoutRate,     // a number from 0 up to (not including) 1
  kFraction,        // a number from 0 up to (not including) 1, named by its key in errors
  kBool,
  kChoice,   // one of `choices`
  kPair,     // "kernel": 3 or [3, 5], as (height, width), each a positive integer
  kPadding,  // "valid", "same" or [top, left, bottom, right], integers from 0
  kShape,    // a list of dimensions
  kLayerId,  // another layer's id
  kOther,    // a list or an object, read by its section's reader
};

struct Key {
  std::string name;
  KeyKind kind = KeyKind::kOther;
  bool required = false;
  // The default read from the declaration: a number, 0 or 1 for a flag, the index in `choices`
  // for a choice, both sides of a pair.
  double fallback = 0;
  // The default in words when the declaration alone does not give it ("4 x hidden", a preset's
  // figure); empty otherwise.
  std::string default_text;
  std::int64_t min = 0;  // an integer's range, both ends allowed
  std::int64_t max = 0;
  std::vector<std::string> choices;  // a choice's, in the order of its C++ enum if it has one
  std::string meaning;
};

inline constexpr std::int64_t kInt32Min = std::numeric_limits<std::int32_t>::min();
inline constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();

// The declarations. Each sets what its kind needs; the rest keeps Key's defaults.
Key positive_int_key(std::string name, std::string meaning);  // required
Key int_key(std::string name, std::int64_t fallback, std::int64_t min, std::int64_t max,
            std::string meaning);
Key positive_number_key(std::string name, double fallback, std::string meaning);
Key dropout_rate_key(std::string name, std::string meaning);  // required
Key dropout_rate_key(std::string name, double fallback, std::string meaning);
Key fraction_key(std::string name, double fallback, std::string meaning);
Key bool_key(std::string name, bool fallback, std::string meaning);
Key choice_key(std::string name, std::vector<std::string> choices, std::string_view fallback,
               std::string meaning = "");
Key pair_key(std::string name, std::string meaning);  // required
Key pair_key(std::string name, std::int64_t fallback, std::string meaning);
// A key its section's reader reads: `fallback` states the default in words; empty: required.
Key own_key(std::string name, KeyKind kind, std::string fallback, std::string meaning);

// A key's value as declared: its default when absent (a required key must be present),
// otherwise a value of its kind in its range or among its choices, or an error at its path.
std::int64_t read_int(const ConfigNode& section, const Key& key);
double read_number(const ConfigNode& section, const Key& key);
bool read_bool(const ConfigNode& section, const Key& key);
std::string read_choice(const ConfigNode& section, const Key& key);
std::size_t read_choice_index(const ConfigNode& section, const Key& key);
std::pair<std::int64_t, std::int64_t> read_pair(const ConfigNode& section, const Key& key);
// "kernel": 3 or [3, 5].
std::pair<std::int64_t, std::int64_t> read_pair_value(const ConfigNode& value);

// What a key's value must be, in words ("a positive integer", "\"none\", \"relu\" or
// \"gelu\""), and its default ("required", its words, or the value as a config writes it).
std::string key_value_text(const Key& key);
std::string key_default_text(const Key& key);

[[noreturn]] void fail_undeclared_key(std::string_view name);

// The declaration of `name` among `keys`; a name not declared is a bug.
template <class Keys>
const auto& declared_key(const Keys& keys, std::string_view name) {
  for (const auto& key : keys) {
    if (key.name == name)
      return key;
  }
  fail_undeclared_key(name);
}

template <class Keys>
std::vector<std::string> key_names(const Keys& keys) {
  std::vector<std::string> names;
  for (const auto& key : keys)
    names.push_back(key.name);
  return names;
}

}  // namespace ipusim::core
