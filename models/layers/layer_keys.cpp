#include "models/layers/layer_keys.hpp"

#include <charconv>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/core/suggest.hpp"

namespace ipusim::models {
namespace {

using core::ConfigNode;

// A number from 0 up to (not including) 1, `what` naming it in the error.
double read_fraction(const ConfigNode& value, const std::string& what) {
  const double number = value.as_number();
  if (number < 0.0 || number >= 1.0)
    value.fail("expected a " + what + " from 0 up to (not including) 1, found " +
               value.json().dump());
  return number;
}

double read_positive_number(const ConfigNode& value, const std::string& key) {
  const double number = value.as_number();
  if (!(number > 0.0))
    value.fail("expected " + key + " above 0, found " + value.json().dump());
  return number;
}

// The shortest text that reads back as `value`: 0.1, 1e-12, 0.99.
std::string shortest(double value) {
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, value).ptr;
  return std::string(text, end);
}

}  // namespace

void read_keys(const ConfigNode& layer, std::span<const LayerKey> keys, LayerParams& params) {
  for (const LayerKey& key : keys) {
    if (key.read != nullptr)
      key.read(layer, key, params);
  }
}

void read_key(const ConfigNode& layer, const LayerKey& key, LayerParams& params) {
  IPUSIM_CHECK(key.read != nullptr);
  key.read(layer, key, params);
}

std::int64_t key_int(const ConfigNode& layer, const LayerKey& key) {
  if (key.kind == KeyKind::kPositiveInt) {
    IPUSIM_CHECK(key.required);
    return layer.at(key.name).as_positive_int();
  }
  IPUSIM_CHECK(key.kind == KeyKind::kInt && !key.required);
  return layer.get_int(key.name, std::int64_t(key.fallback), key.min, key.max);
}

double key_number(const ConfigNode& layer, const LayerKey& key) {
  const auto value = key.required ? std::optional(layer.at(key.name)) : layer.find(key.name);
  if (!value)
    return key.fallback;
  switch (key.kind) {
    case KeyKind::kPositiveNumber:
      return read_positive_number(*value, key.name);
    case KeyKind::kDropoutRate:
      return read_fraction(*value, "dropout rate");
    case KeyKind::kFraction:
      return read_fraction(*value, key.name);
    default:
      core::fail_invariant("a number key is a positive number or a fraction", __FILE__, __LINE__);
  }
}

bool key_bool(const ConfigNode& layer, const LayerKey& key) {
  IPUSIM_CHECK(key.kind == KeyKind::kBool && !key.required);
  return layer.get_bool(key.name, key.fallback != 0);
}

std::size_t key_enum(const ConfigNode& layer, const LayerKey& key) {
  IPUSIM_CHECK(key.kind == KeyKind::kEnum && !key.required);
  const std::vector<std::string> allowed(key.values.begin(), key.values.end());
  const std::string value =
      layer.get_enum(key.name, allowed.at(std::size_t(key.fallback)), allowed);
  std::size_t index = 0;
  while (allowed[index] != value)
    ++index;
  return index;
}

std::pair<std::int64_t, std::int64_t> key_pair(const ConfigNode& layer, const LayerKey& key) {
  IPUSIM_CHECK(key.kind == KeyKind::kPair);
  if (key.required)
    return read_pair(layer.at(key.name));
  if (const auto value = layer.find(key.name))
    return read_pair(*value);
  return {std::int64_t(key.fallback), std::int64_t(key.fallback)};
}

std::pair<std::int64_t, std::int64_t> read_pair(const ConfigNode& value) {
  if (!value.is_array()) {
    const std::int64_t both = value.as_positive_int();
    return {both, both};
  }
  if (value.size() != 2)
    value.fail("expected [height, width], found a list of " + std::to_string(value.size()));
  return {value.at(std::size_t{0}).as_positive_int(), value.at(std::size_t{1}).as_positive_int()};
}

Padding read_padding(const ConfigNode& value) {
  if (value.is_string())
    return value.as_enum({"valid", "same"}) == "same" ? kSamePadding : kValidPadding;
  if (!value.is_array())
    value.fail("expected \"valid\", \"same\" or [top, left, bottom, right], found " +
               value.json().dump());
  if (value.size() != 4)
    value.fail("expected [top, left, bottom, right], found a list of " +
               std::to_string(value.size()));
  const std::vector<std::int64_t> pads = value.as_int_list(0, core::kMaxCount);
  return {.same = false, .top = pads[0], .left = pads[1], .bottom = pads[2], .right = pads[3]};
}

Shape read_shape(const ConfigNode& value, std::int64_t min) {
  if (value.size() == 0)
    value.fail("expected a shape with at least one dimension, found []");
  return value.as_int_list(min, core::kMaxCount);
}

std::string key_value_text(const LayerKey& key) {
  switch (key.kind) {
    case KeyKind::kPositiveInt:
      return "a positive integer";
    case KeyKind::kInt:
      return key.min < key.max
                 ? "an integer from " + std::to_string(key.min) + " to " + std::to_string(key.max)
                 : "an integer";
    case KeyKind::kPositiveNumber:
      return "a number above 0";
    case KeyKind::kDropoutRate:
    case KeyKind::kFraction:
      return "a number from 0 up to (not including) 1";
    case KeyKind::kBool:
      return "true or false";
    case KeyKind::kEnum:
      return core::quoted_list({key.values.begin(), key.values.end()}, "\"");
    case KeyKind::kPair:
      return "N or [height, width], positive integers";
    case KeyKind::kPadding:
      return "\"valid\", \"same\" or [top, left, bottom, right]";
    case KeyKind::kShape:
      return "a list of dimensions";
    case KeyKind::kLayerId:
      return "a layer id";
  }
  core::fail_invariant("kind is one of KeyKind's values", __FILE__, __LINE__);
}

std::string key_default_text(const LayerKey& key) {
  if (key.required)
    return "required";
  if (key.derived != nullptr)
    return key.derived;
  switch (key.kind) {
    case KeyKind::kBool:
      return key.fallback != 0 ? "true" : "false";
    case KeyKind::kEnum:
      return "\"" + std::string(key.values[std::size_t(key.fallback)]) + "\"";
    case KeyKind::kPadding:
      return "\"valid\"";
    default:
      return shortest(key.fallback);
  }
}

}  // namespace ipusim::models
