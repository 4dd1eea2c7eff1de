#pragma once
// The config keys of a layer type, each declared once in the type's file with its kind, its
// default (or that it is required) and a line on what it means. A key whose value stands alone
// is read from its declaration alone (read_keys); one whose default or check involves another
// key (maxpool2d's stride defaults to the pool, a transformer's heads must divide hidden) is
// declared alike (own_key) but read by its type's read function, which states that rule.

#include <array>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "models/layers/layer.hpp"
#include "sim/core/config_node.hpp"

namespace ipusim::models {

enum class KeyKind {
  kPositiveInt,     // an integer from 1 (to core::kMaxCount)
  kInt,             // an integer from `min` to `max`
  kPositiveNumber,  // a number above 0
  kDropoutRate,     // a number from 0 up to (not including) 1
  kFraction,        // a number from 0 up to (not including) 1, named by its key in errors
  kBool,
  kEnum,     // one of `values`
  kPair,     // "kernel": 3 or [3, 5], as (height, width), each a positive integer
  kPadding,  // "valid", "same" or [top, left, bottom, right], integers from 0
  kShape,    // a list of dimensions
  kLayerId,  // another layer's id
};

struct LayerKey;
using KeyReader = void (*)(const core::ConfigNode& layer, const LayerKey& key, LayerParams& params);

struct LayerKey {
  const char* name;
  KeyKind kind;
  bool required;
  // The default of an optional key read from its declaration: a number, 0 or 1 for a flag, the
  // index in `values` for an enum, both sides of a pair.
  double fallback;
  const char* derived;  // the default when another key gives it ("4 x hidden"), else nullptr
  std::int64_t min;     // an integer's range
  std::int64_t max;
  std::span<const char* const> values;  // an enum's, in the order of its C++ enum
  const char* meaning;
  KeyReader read;  // nullptr: the type's read function reads it (its rule involves other keys)
};

inline constexpr std::int64_t kInt32Min = std::numeric_limits<std::int32_t>::min();
inline constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();

// Activation's names, in the enum's order.
inline constexpr std::array<const char*, 5> kActivationNames = {"none", "relu", "gelu", "tanh",
                                                                "gelu_tanh"};

// Reads every key of `keys` that has a reader, in their order.
void read_keys(const core::ConfigNode& layer, std::span<const LayerKey> keys, LayerParams& params);
// Reads one key that has a reader.
void read_key(const core::ConfigNode& layer, const LayerKey& key, LayerParams& params);

// The values as the generic readers take them from a layer's config node.
std::int64_t key_int(const core::ConfigNode& layer, const LayerKey& key);
double key_number(const core::ConfigNode& layer, const LayerKey& key);
bool key_bool(const core::ConfigNode& layer, const LayerKey& key);
std::size_t key_enum(const core::ConfigNode& layer, const LayerKey& key);
std::pair<std::int64_t, std::int64_t> key_pair(const core::ConfigNode& layer, const LayerKey& key);
std::pair<std::int64_t, std::int64_t> read_pair(const core::ConfigNode& value);
// "valid", "same" or [top, left, bottom, right].
Padding read_padding(const core::ConfigNode& value);
// At least one dimension, each from `min`.
Shape read_shape(const core::ConfigNode& value, std::int64_t min);

// What a key's value must be, in words ("a positive integer", "\"none\", \"relu\", \"gelu\" or
// \"tanh\""), and its default ("required", what another key gives it, or the value), for
// `ipusim layers`.
std::string key_value_text(const LayerKey& key);
std::string key_default_text(const LayerKey& key);

// What a declaration's `read` points at: each stores the value in its field, a member of
// LayerParams or of the struct a type declares its own fields in (LayerParams::own).
namespace key_readers {

template <class Member>
struct FieldOf;
template <class Owner_, class Value_>
struct FieldOf<Value_ Owner_::*> {
  using Owner = Owner_;
  using Value = Value_;
};

template <auto Field>
auto& field(LayerParams& params) {
  using Owner = typename FieldOf<decltype(Field)>::Owner;
  if constexpr (std::is_same_v<Owner, LayerParams>)
    return params.*Field;
  else
    return own_fields_to_set<Owner>(params).*Field;
}

template <auto Field>
void integer(const core::ConfigNode& layer, const LayerKey& key, LayerParams& params) {
  field<Field>(params) = key_int(layer, key);
}

template <auto Field>
void number(const core::ConfigNode& layer, const LayerKey& key, LayerParams& params) {
  field<Field>(params) = key_number(layer, key);
}

template <auto Field>
void flag(const core::ConfigNode& layer, const LayerKey& key, LayerParams& params) {
  field<Field>(params) = key_bool(layer, key);
}

template <auto Field>
void enumeration(const core::ConfigNode& layer, const LayerKey& key, LayerParams& params) {
  using Enum = typename FieldOf<decltype(Field)>::Value;
  field<Field>(params) = static_cast<Enum>(key_enum(layer, key));
}

template <auto Height, auto Width>
void pair(const core::ConfigNode& layer, const LayerKey& key, LayerParams& params) {
  std::tie(field<Height>(params), field<Width>(params)) = key_pair(layer, key);
}

inline void padding(const core::ConfigNode& layer, const LayerKey& /*key*/, LayerParams& params) {
  if (const auto value = layer.find("padding"))
    params.padding = read_padding(*value);
}

}  // namespace key_readers

// The declarations, one line per key in a type's file.

// What every key has; the factories below set the rest.
constexpr LayerKey base_key(const char* name, KeyKind kind, const char* meaning, KeyReader read) {
  return {.name = name,
          .kind = kind,
          .required = false,
          .fallback = 0,
          .derived = nullptr,
          .min = 0,
          .max = 0,
          .values = {},
          .meaning = meaning,
          .read = read};
}

template <auto Field>
constexpr LayerKey positive_int_key(const char* name, const char* meaning) {
  LayerKey key = base_key(name, KeyKind::kPositiveInt, meaning, key_readers::integer<Field>);
  key.required = true;
  key.min = 1;
  key.max = core::kMaxCount;
  return key;
}

template <auto Field>
constexpr LayerKey int_key(const char* name, std::int64_t fallback, std::int64_t min,
                           std::int64_t max, const char* meaning) {
  LayerKey key = base_key(name, KeyKind::kInt, meaning, key_readers::integer<Field>);
  key.fallback = double(fallback);
  key.min = min;
  key.max = max;
  return key;
}

template <auto Field>
constexpr LayerKey positive_number_key(const char* name, double fallback, const char* meaning) {
  LayerKey key = base_key(name, KeyKind::kPositiveNumber, meaning, key_readers::number<Field>);
  key.fallback = fallback;
  return key;
}

// A dropout rate; without a fallback, required.
template <auto Field>
constexpr LayerKey dropout_rate_key(const char* name, const char* meaning) {
  LayerKey key = base_key(name, KeyKind::kDropoutRate, meaning, key_readers::number<Field>);
  key.required = true;
  return key;
}
template <auto Field>
constexpr LayerKey dropout_rate_key(const char* name, double fallback, const char* meaning) {
  LayerKey key = base_key(name, KeyKind::kDropoutRate, meaning, key_readers::number<Field>);
  key.fallback = fallback;
  return key;
}

template <auto Field>
constexpr LayerKey fraction_key(const char* name, double fallback, const char* meaning) {
  LayerKey key = base_key(name, KeyKind::kFraction, meaning, key_readers::number<Field>);
  key.fallback = fallback;
  return key;
}

template <auto Field>
constexpr LayerKey bool_key(const char* name, bool fallback, const char* meaning) {
  LayerKey key = base_key(name, KeyKind::kBool, meaning, key_readers::flag<Field>);
  key.fallback = fallback ? 1 : 0;
  return key;
}

// One of `values`, the names of Enum's values in its order; the first by default.
template <auto Field>
constexpr LayerKey enum_key(const char* name, std::span<const char* const> values,
                            const char* meaning) {
  LayerKey key = base_key(name, KeyKind::kEnum, meaning, key_readers::enumeration<Field>);
  key.values = values;
  return key;
}

// "kernel": 3 or [3, 5]; without a fallback, required.
template <auto Height, auto Width>
constexpr LayerKey pair_key(const char* name, const char* meaning) {
  LayerKey key = base_key(name, KeyKind::kPair, meaning, key_readers::pair<Height, Width>);
  key.required = true;
  return key;
}
template <auto Height, auto Width>
constexpr LayerKey pair_key(const char* name, std::int64_t fallback, const char* meaning) {
  LayerKey key = base_key(name, KeyKind::kPair, meaning, key_readers::pair<Height, Width>);
  key.fallback = double(fallback);
  return key;
}

// The keys dense and conv2d share (padding: conv2d and the pools).
inline constexpr LayerKey kActivationKey =
    enum_key<&LayerParams::activation>("activation", kActivationNames, "applied to the output");
inline constexpr LayerKey kBiasKey = bool_key<&LayerParams::bias>("bias", true, "adds a bias");
inline constexpr LayerKey kPaddingKey =
    base_key("padding", KeyKind::kPadding,
             "same: TensorFlow's, ceil(size / stride) outputs per axis; a list: the pads",
             key_readers::padding);

// A key its type's read function reads: `fallback` states the default (nullptr: required).
constexpr LayerKey own_key(const char* name, KeyKind kind, const char* fallback,
                           const char* meaning) {
  LayerKey key = base_key(name, kind, meaning, nullptr);
  key.required = fallback == nullptr;
  key.derived = fallback;
  return key;
}

}  // namespace ipusim::models
