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
#include "sim/core/key.hpp"

namespace ipusim::models {

using core::KeyKind;

struct LayerKey;
using KeyReader = void (*)(const core::ConfigNode& layer, const LayerKey& key, LayerParams& params);

// A key declared as every config key is (core::Key), with where its value goes.
struct LayerKey : core::Key {
  KeyReader read =
      nullptr;  // nullptr: the type's read function reads it (its rule involves others)
};

using core::kInt32Max;
using core::kInt32Min;

// Activation's names, in the enum's order.
inline constexpr std::array<const char*, 5> kActivationNames = {"none", "relu", "gelu", "tanh",
                                                                "gelu_tanh"};

// Reads every key of `keys` that has a reader, in their order.
void read_keys(const core::ConfigNode& layer, std::span<const LayerKey> keys, LayerParams& params);
// Reads one key that has a reader.
void read_key(const core::ConfigNode& layer, const LayerKey& key, LayerParams& params);

// "valid", "same" or [top, left, bottom, right].
Padding read_padding(const core::ConfigNode& value);
// At least one dimension, each from `min`.
Shape read_shape(const core::ConfigNode& value, std::int64_t min);

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
  field<Field>(params) = core::read_int(layer, key);
}

template <auto Field>
void number(const core::ConfigNode& layer, const LayerKey& key, LayerParams& params) {
  field<Field>(params) = core::read_number(layer, key);
}

template <auto Field>
void flag(const core::ConfigNode& layer, const LayerKey& key, LayerParams& params) {
  field<Field>(params) = core::read_bool(layer, key);
}

template <auto Field>
void enumeration(const core::ConfigNode& layer, const LayerKey& key, LayerParams& params) {
  using Enum = typename FieldOf<decltype(Field)>::Value;
  field<Field>(params) = static_cast<Enum>(core::read_choice_index(layer, key));
}

template <auto Height, auto Width>
void pair(const core::ConfigNode& layer, const LayerKey& key, LayerParams& params) {
  std::tie(field<Height>(params), field<Width>(params)) = core::read_pair(layer, key);
}

inline void padding(const core::ConfigNode& layer, const LayerKey& /*key*/, LayerParams& params) {
  if (const auto value = layer.find("padding"))
    params.padding = read_padding(*value);
}

}  // namespace key_readers

// The declarations, one line per key in a type's file: core's, with the field they fill.

inline LayerKey filling(core::Key key, KeyReader read) {
  LayerKey layer_key;
  static_cast<core::Key&>(layer_key) = std::move(key);
  layer_key.read = read;
  return layer_key;
}

template <auto Field>
LayerKey positive_int_key(const char* name, const char* meaning) {
  return filling(core::positive_int_key(name, meaning), key_readers::integer<Field>);
}

template <auto Field>
LayerKey int_key(const char* name, std::int64_t fallback, std::int64_t min, std::int64_t max,
                 const char* meaning) {
  return filling(core::int_key(name, fallback, min, max, meaning), key_readers::integer<Field>);
}

template <auto Field>
LayerKey positive_number_key(const char* name, double fallback, const char* meaning) {
  return filling(core::positive_number_key(name, fallback, meaning), key_readers::number<Field>);
}

// A dropout rate; without a fallback, required.
template <auto Field>
LayerKey dropout_rate_key(const char* name, const char* meaning) {
  return filling(core::dropout_rate_key(name, meaning), key_readers::number<Field>);
}
template <auto Field>
LayerKey dropout_rate_key(const char* name, double fallback, const char* meaning) {
  return filling(core::dropout_rate_key(name, fallback, meaning), key_readers::number<Field>);
}

template <auto Field>
LayerKey fraction_key(const char* name, double fallback, const char* meaning) {
  return filling(core::fraction_key(name, fallback, meaning), key_readers::number<Field>);
}

template <auto Field>
LayerKey bool_key(const char* name, bool fallback, const char* meaning) {
  return filling(core::bool_key(name, fallback, meaning), key_readers::flag<Field>);
}

// One of `values`, the names of Enum's values in its order; the first by default.
template <auto Field>
LayerKey enum_key(const char* name, std::span<const char* const> values, const char* meaning) {
  return filling(core::choice_key(name, {values.begin(), values.end()}, values.front(), meaning),
                 key_readers::enumeration<Field>);
}

// "kernel": 3 or [3, 5]; without a fallback, required.
template <auto Height, auto Width>
LayerKey pair_key(const char* name, const char* meaning) {
  return filling(core::pair_key(name, meaning), key_readers::pair<Height, Width>);
}
template <auto Height, auto Width>
LayerKey pair_key(const char* name, std::int64_t fallback, const char* meaning) {
  return filling(core::pair_key(name, fallback, meaning), key_readers::pair<Height, Width>);
}

// "padding", "valid" by default, read by `read` (nullptr: the type's read function).
inline LayerKey padding_key(const char* meaning, KeyReader read) {
  core::Key key;
  key.name = "padding";
  key.kind = KeyKind::kPadding;
  key.meaning = meaning;
  return filling(std::move(key), read);
}

// A key its type's read function reads: `fallback` states the default (nullptr: required).
inline LayerKey own_key(const char* name, KeyKind kind, const char* fallback, const char* meaning) {
  return filling(core::own_key(name, kind, fallback == nullptr ? "" : fallback, meaning), nullptr);
}

// The keys dense and conv2d share (padding: conv2d and the pools).
inline const LayerKey kActivationKey =
    enum_key<&LayerParams::activation>("activation", kActivationNames, "applied to the output");
inline const LayerKey kBiasKey = bool_key<&LayerParams::bias>("bias", true, "adds a bias");
inline const LayerKey kPaddingKey =
    padding_key("same: TensorFlow's, ceil(size / stride) outputs per axis; a list: the pads",
                key_readers::padding);

}  // namespace ipusim::models
