#include "sim/core/key.hpp"

#include <charconv>
#include <optional>

#include "sim/core/error.hpp"
#include "sim/core/suggest.hpp"

namespace ipusim::core {
namespace {

Key base_key(std::string name, KeyKind kind, std::string meaning) {
  Key key;
  key.name = std::move(name);
  key.kind = kind;
  key.meaning = std::move(meaning);
  return key;
}

Key with_fallback(Key key, double fallback) {
  key.fallback = fallback;
  return key;
}

Key required(Key key) {
  key.required = true;
  return key;
}

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

Key positive_int_key(std::string name, std::string meaning) {
  Key key = required(base_key(std::move(name), KeyKind::kPositiveInt, std::move(meaning)));
  key.min = 1;
  key.max = kMaxCount;
  return key;
}

Key int_key(std::string name, std::int64_t fallback, std::int64_t min, std::int64_t max,
            std::string meaning) {
  Key key =
      with_fallback(base_key(std::move(name), KeyKind::kInt, std::move(meaning)), double(fallback));
  key.min = min;
  key.max = max;
  return key;
}

Key positive_number_key(std::string name, double fallback, std::string meaning) {
  return with_fallback(base_key(std::move(name), KeyKind::kPositiveNumber, std::move(meaning)),
                       fallback);
}

Key dropout_rate_key(std::string name, std::string meaning) {
  return required(base_key(std::move(name), KeyKind::kDropoutRate, std::move(meaning)));
}

Key dropout_rate_key(std::string name, double fallback, std::string meaning) {
  return with_fallback(base_key(std::move(name), KeyKind::kDropoutRate, std::move(meaning)),
                       fallback);
}

Key fraction_key(std::string name, double fallback, std::string meaning) {
  return with_fallback(base_key(std::move(name), KeyKind::kFraction, std::move(meaning)), fallback);
}

Key bool_key(std::string name, bool fallback, std::string meaning) {
  return with_fallback(base_key(std::move(name), KeyKind::kBool, std::move(meaning)),
                       fallback ? 1 : 0);
}

Key choice_key(std::string name, std::vector<std::string> choices, std::string_view fallback,
               std::string meaning) {
  Key key = base_key(std::move(name), KeyKind::kChoice, std::move(meaning));
  std::size_t index = 0;
  while (index < choices.size() && choices[index] != fallback)
    ++index;
  IPUSIM_CHECK(index < choices.size());
  key.fallback = double(index);
  key.choices = std::move(choices);
  return key;
}

Key pair_key(std::string name, std::string meaning) {
  return required(base_key(std::move(name), KeyKind::kPair, std::move(meaning)));
}

Key pair_key(std::string name, std::int64_t fallback, std::string meaning) {
  return with_fallback(base_key(std::move(name), KeyKind::kPair, std::move(meaning)),
                       double(fallback));
}

Key own_key(std::string name, KeyKind kind, std::string fallback, std::string meaning) {
  Key key = base_key(std::move(name), kind, std::move(meaning));
  key.required = fallback.empty();
  key.default_text = std::move(fallback);
  return key;
}

std::int64_t read_int(const ConfigNode& section, const Key& key) {
  if (key.kind == KeyKind::kPositiveInt) {
    IPUSIM_CHECK(key.required);
    return section.at(key.name).as_positive_int();
  }
  IPUSIM_CHECK(key.kind == KeyKind::kInt && !key.required);
  return section.get_int(key.name, std::int64_t(key.fallback), key.min, key.max);
}

double read_number(const ConfigNode& section, const Key& key) {
  const auto value = key.required ? std::optional(section.at(key.name)) : section.find(key.name);
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
      fail_invariant("a number key is a positive number or a fraction", __FILE__, __LINE__);
  }
}

bool read_bool(const ConfigNode& section, const Key& key) {
  IPUSIM_CHECK(key.kind == KeyKind::kBool && !key.required);
  return section.get_bool(key.name, key.fallback != 0);
}

std::string read_choice(const ConfigNode& section, const Key& key) {
  IPUSIM_CHECK(key.kind == KeyKind::kChoice && !key.required);
  return section.get_enum(key.name, key.choices.at(std::size_t(key.fallback)), key.choices);
}

std::size_t read_choice_index(const ConfigNode& section, const Key& key) {
  const std::string value = read_choice(section, key);
  std::size_t index = 0;
  while (key.choices[index] != value)
    ++index;
  return index;
}

std::pair<std::int64_t, std::int64_t> read_pair(const ConfigNode& section, const Key& key) {
  IPUSIM_CHECK(key.kind == KeyKind::kPair);
  if (key.required)
    return read_pair_value(section.at(key.name));
  if (const auto value = section.find(key.name))
    return read_pair_value(*value);
  return {std::int64_t(key.fallback), std::int64_t(key.fallback)};
}

std::pair<std::int64_t, std::int64_t> read_pair_value(const ConfigNode& value) {
  if (!value.is_array()) {
    const std::int64_t both = value.as_positive_int();
    return {both, both};
  }
  if (value.size() != 2)
    value.fail("expected [height, width], found a list of " + std::to_string(value.size()));
  return {value.at(std::size_t{0}).as_positive_int(), value.at(std::size_t{1}).as_positive_int()};
}

std::string key_value_text(const Key& key) {
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
    case KeyKind::kChoice:
      return quoted_list(key.choices, "\"");
    case KeyKind::kPair:
      return "N or [height, width], positive integers";
    case KeyKind::kPadding:
      return "\"valid\", \"same\" or [top, left, bottom, right]";
    case KeyKind::kShape:
      return "a list of dimensions";
    case KeyKind::kLayerId:
      return "a layer id";
    case KeyKind::kOther:
      return "a list or an object";
  }
  fail_invariant("kind is one of KeyKind's values", __FILE__, __LINE__);
}

std::string key_default_text(const Key& key) {
  if (key.required)
    return "required";
  if (!key.default_text.empty())
    return key.default_text;
  switch (key.kind) {
    case KeyKind::kBool:
      return key.fallback != 0 ? "true" : "false";
    case KeyKind::kChoice:
      return "\"" + key.choices.at(std::size_t(key.fallback)) + "\"";
    case KeyKind::kPadding:
      return "\"valid\"";
    default:
      return shortest(key.fallback);
  }
}

void fail_undeclared_key(std::string_view name) {
  fail_invariant(("the key " + std::string(name) + " is declared").c_str(), __FILE__, __LINE__);
}

}  // namespace ipusim::core
