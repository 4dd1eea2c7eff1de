#include "models/layers/layer_keys.hpp"

#include <string>
#include <vector>

#include "sim/core/error.hpp"

namespace ipusim::models {

using core::ConfigNode;

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

}  // namespace ipusim::models
