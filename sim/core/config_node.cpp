#include "sim/core/config_node.hpp"

#include <cmath>

#include "sim/core/error.hpp"
#include "sim/core/suggest.hpp"

namespace ipusim::core {
namespace {

std::string shown(const nlohmann::json& value) {
  std::string text = value.dump();
  if (text.size() > 40)
    text = text.substr(0, 37) + "...";
  return text;
}

}  // namespace

std::string escape_pointer_token(const std::string& key) {
  std::string out;
  for (char c : key)
    out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

void Origins::record(const std::string& pointer, const std::string& source) {
  sources_[pointer] = source;
}

std::string Origins::source_of(const std::string& pointer) const {
  std::string current = pointer;
  while (true) {
    const auto found = sources_.find(current);
    if (found != sources_.end())
      return found->second;
    if (current.empty())
      return "";
    current.erase(current.rfind('/'));
  }
}

ConfigNode::ConfigNode(const nlohmann::json& value, std::string pointer, const Origins& origins)
    : value_(&value), pointer_(std::move(pointer)), origins_(&origins) {}

void ConfigNode::fail(const std::string& message) const {
  throw ConfigError(file(), pointer_.empty() ? "/" : pointer_, message);
}

std::string ConfigNode::type_name() const {
  switch (value_->type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::object:
      return "an object";
    case nlohmann::json::value_t::array:
      return "an array";
    case nlohmann::json::value_t::string:
      return "a string";
    case nlohmann::json::value_t::boolean:
      return "a boolean";
    case nlohmann::json::value_t::number_float:
      return "a number";
    default:
      return "an integer";
  }
}

void ConfigNode::fail_type(const std::string& expected) const {
  // null is its own value: "found null", not "found null null".
  fail("expected " + expected + ", found " +
       (value_->is_null() ? "null" : type_name() + " " + shown(*value_)));
}

bool ConfigNode::has(const std::string& key) const {
  return value_->is_object() && value_->contains(key);
}

ConfigNode ConfigNode::at(const std::string& key) const {
  if (!value_->is_object())
    fail_type("an object");
  const auto found = value_->find(key);
  if (found == value_->end())
    fail("missing required field '" + key + "'");
  return ConfigNode(*found, pointer_ + "/" + escape_pointer_token(key), *origins_);
}

std::optional<ConfigNode> ConfigNode::find(const std::string& key) const {
  if (!value_->is_object())
    fail_type("an object");
  const auto found = value_->find(key);
  if (found == value_->end() || found->is_null())
    return std::nullopt;
  return ConfigNode(*found, pointer_ + "/" + escape_pointer_token(key), *origins_);
}

void ConfigNode::expect_only_keys(const std::vector<std::string>& allowed) const {
  if (!value_->is_object())
    fail_type("an object");
  for (const auto& [key, child] : value_->items()) {
    bool known = false;
    for (const auto& name : allowed)
      known = known || name == key;
    if (known)
      continue;
    ConfigNode unknown(child, pointer_ + "/" + escape_pointer_token(key), *origins_);
    const std::string hint = did_you_mean(key, allowed);
    throw UnknownPathError(
        unknown.file(), unknown.pointer(),
        "unknown key '" + key + "'" +
            (hint.empty() ? "; the keys allowed here are " + quoted_list(allowed) : hint));
  }
}

std::vector<std::string> ConfigNode::keys() const {
  if (!value_->is_object())
    fail_type("an object");
  std::vector<std::string> out;
  for (const auto& item : value_->items())
    out.push_back(item.key());
  return out;
}

std::size_t ConfigNode::size() const {
  if (!value_->is_array())
    fail_type("an array");
  return value_->size();
}

ConfigNode ConfigNode::at(std::size_t index) const {
  if (!value_->is_array())
    fail_type("an array");
  IPUSIM_CHECK(index < value_->size());
  return ConfigNode((*value_)[index], pointer_ + "/" + std::to_string(index), *origins_);
}

std::vector<ConfigNode> ConfigNode::items() const {
  std::vector<ConfigNode> out;
  for (std::size_t i = 0; i < size(); ++i)
    out.push_back(at(i));
  return out;
}

std::string ConfigNode::as_string() const {
  if (!value_->is_string())
    fail_type("a string");
  return value_->get<std::string>();
}

bool ConfigNode::as_bool() const {
  if (!value_->is_boolean())
    fail_type("true or false");
  return value_->get<bool>();
}

double ConfigNode::as_number() const {
  if (!value_->is_number())
    fail_type("a number");
  return value_->get<double>();
}

std::int64_t ConfigNode::as_int(std::int64_t min, std::int64_t max) const {
  const std::string range = "an integer from " + std::to_string(min) + " to " + std::to_string(max);
  if (value_->is_number_float()) {
    const double number = value_->get<double>();
    if (std::floor(number) != number)
      fail_type(range);
  } else if (!value_->is_number_integer()) {
    fail_type(range);
  }
  if (value_->is_number_unsigned() && value_->get<std::uint64_t>() > std::uint64_t(max)) {
    fail("expected " + range + ", found " + shown(*value_));
  }
  const double as_double = value_->get<double>();
  if (as_double < double(min) || as_double > double(max)) {
    fail("expected " + range + ", found " + shown(*value_));
  }
  return value_->is_number_float() ? std::int64_t(as_double) : value_->get<std::int64_t>();
}

std::int64_t ConfigNode::as_positive_int() const {
  return as_int(1, kMaxCount);
}

std::string ConfigNode::as_enum(const std::vector<std::string>& allowed) const {
  const std::string text = as_string();
  for (const auto& name : allowed) {
    if (name == text)
      return text;
  }
  const std::string hint = did_you_mean(text, allowed);
  fail("unknown value '" + text + "'" +
       (hint.empty() ? "; expected " + quoted_list(allowed) : hint));
}

double ConfigNode::as_quantity(Dimension dimension) const {
  if (!value_->is_string()) {
    fail_type(std::string(dimension_name(dimension)) + " as a string with a unit, such as " +
              dimension_example(dimension));
  }
  std::string why;
  const auto value = parse_quantity(value_->get<std::string>(), dimension, &why);
  if (!value) {
    fail("cannot read " + shown(*value_) + " as " + dimension_name(dimension) + ": " + why +
         " (write it like " + dimension_example(dimension) + ")");
  }
  return *value;
}

std::vector<std::int64_t> ConfigNode::as_int_list(std::int64_t min, std::int64_t max) const {
  std::vector<std::int64_t> out;
  for (const auto& item : items())
    out.push_back(item.as_int(min, max));
  return out;
}

std::vector<std::string> ConfigNode::as_string_list() const {
  std::vector<std::string> out;
  for (const auto& item : items())
    out.push_back(item.as_string());
  return out;
}

std::string ConfigNode::get_string(const std::string& key, const std::string& fallback) const {
  const auto node = find(key);
  return node ? node->as_string() : fallback;
}

bool ConfigNode::get_bool(const std::string& key, bool fallback) const {
  const auto node = find(key);
  return node ? node->as_bool() : fallback;
}

std::int64_t ConfigNode::get_int(const std::string& key, std::int64_t fallback, std::int64_t min,
                                 std::int64_t max) const {
  const auto node = find(key);
  return node ? node->as_int(min, max) : fallback;
}

std::string ConfigNode::get_enum(const std::string& key, const std::string& fallback,
                                 const std::vector<std::string>& allowed) const {
  const auto node = find(key);
  return node ? node->as_enum(allowed) : fallback;
}

}  // namespace ipusim::core
