#pragma once
// A read-only view of one JSON value in a loaded config, carrying its JSON pointer and the file
// that set it, so that every error names both. Readers ask for exactly the type they need (no
// implicit conversions) and declare the keys an object may have, so misspelt keys are errors.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/core/units.hpp"

namespace ipusim::core {

// Which file (or command-line override) set each JSON pointer of a merged document.
class Origins {
 public:
  void record(const std::string& pointer, const std::string& source);
  // The source of the nearest recorded ancestor-or-self of `pointer`.
  std::string source_of(const std::string& pointer) const;

 private:
  std::map<std::string, std::string> sources_;
};

// One value of a loaded config with its JSON pointer; its errors name that pointer and the file
// or override that set it.
class ConfigNode {
 public:
  ConfigNode(const nlohmann::json& value, std::string pointer, const Origins& origins);

  const std::string& pointer() const { return pointer_; }
  std::string file() const { return origins_->source_of(pointer_); }
  const nlohmann::json& json() const { return *value_; }

  [[noreturn]] void fail(const std::string& message) const;

  // Objects.
  bool has(const std::string& key) const;
  ConfigNode at(const std::string& key) const;  // a missing key is an error
  std::optional<ConfigNode> find(const std::string& key) const;
  void expect_only_keys(const std::vector<std::string>& allowed) const;
  std::vector<std::string> keys() const;

  // Arrays.
  std::size_t size() const;
  ConfigNode at(std::size_t index) const;
  std::vector<ConfigNode> items() const;

  bool is_object() const { return value_->is_object(); }
  bool is_array() const { return value_->is_array(); }
  bool is_string() const { return value_->is_string(); }
  bool is_number() const { return value_->is_number(); }
  bool is_null() const { return value_->is_null(); }

  // Scalars, each checking the JSON type and the range.
  std::string as_string() const;
  bool as_bool() const;
  double as_number() const;
  std::int64_t as_int(std::int64_t min, std::int64_t max) const;
  std::int64_t as_positive_int() const;  // 1 .. 2^40, larger counts are absurd
  std::string as_enum(const std::vector<std::string>& allowed) const;
  double as_quantity(Dimension dimension) const;
  std::vector<std::int64_t> as_int_list(std::int64_t min, std::int64_t max) const;
  std::vector<std::string> as_string_list() const;

  // Optional fields with defaults.
  std::string get_string(const std::string& key, const std::string& fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;
  std::int64_t get_int(const std::string& key, std::int64_t fallback, std::int64_t min,
                       std::int64_t max) const;
  std::string get_enum(const std::string& key, const std::string& fallback,
                       const std::vector<std::string>& allowed) const;

 private:
  std::string type_name() const;
  [[noreturn]] void fail_type(const std::string& expected) const;

  const nlohmann::json* value_;
  std::string pointer_;
  const Origins* origins_;
};

// `key` as one reference token of a JSON pointer: '~' becomes "~0" and '/' becomes "~1".
std::string escape_pointer_token(const std::string& key);

// The largest count ipusim accepts for sizes such as micro-batches or layer widths.
inline constexpr std::int64_t kMaxCount = std::int64_t{1} << 40;

}  // namespace ipusim::core
