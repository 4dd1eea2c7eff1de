#include "models/import/keras_weights.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <span>

#include "models/data/npz.hpp"
#include "models/kernels/stage_executor.hpp"
#include "models/layers/model.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {
namespace {

// The arrays of an .npz by Keras name, without tf.keras' ":0". The file may hold the weights,
// their moving statistics and an optimizer's state (Adam's two moments): four float32s per
// parameter and a megabyte of slack bound what is read.
std::map<std::string, Tensor> keras_arrays(const std::string& npz, std::int64_t parameters,
                                           std::int64_t max_bytes) {
  const std::int64_t bound = std::min(max_bytes, 16 * parameters + (1 << 20));
  std::map<std::string, Tensor> arrays;
  for (auto& [name, tensor] : read_npz(npz, bound)) {
    const bool tf_name = name.size() > 2 && name.substr(name.size() - 2) == ":0";
    arrays.insert_or_assign(tf_name ? name.substr(0, name.size() - 2) : name, std::move(tensor));
  }
  return arrays;
}

// Takes arrays out of the file's by `<layer>/<name>`, recording those absent. An array taken
// must hold finite numbers: a NaN or an infinity would be written as a starting weight.
class ArrayTaker {
 public:
  ArrayTaker(std::map<std::string, Tensor> arrays, std::string npz)
      : arrays_(std::move(arrays)), npz_(std::move(npz)) {}

  std::optional<Tensor> take(const std::string& layer, const std::string& name) {
    const auto found = arrays_.find(layer + "/" + name);
    if (found == arrays_.end()) {
      missing_.push_back(layer + "/" + name);
      return std::nullopt;
    }
    auto tensor = std::make_optional(std::move(found->second));
    arrays_.erase(found);
    for (std::int64_t i = 0; i < tensor->elements(); ++i) {
      if (!std::isfinite((*tensor)[i]))
        throw core::ConfigError(npz_, "",
                                "array '" + layer + "/" + name + "' holds " +
                                    std::to_string((*tensor)[i]) + " at element " +
                                    std::to_string(i) + ": expected finite weights");
    }
    return tensor;
  }
  bool holds(const std::string& layer, const std::string& name) const {
    return arrays_.contains(layer + "/" + name);
  }
  const std::vector<std::string>& missing() const { return missing_; }
  std::vector<std::string> left() const {
    std::vector<std::string> names;
    for (const auto& [name, tensor] : arrays_)
      names.push_back(name);
    return names;
  }

 private:
  std::map<std::string, Tensor> arrays_;
  std::string npz_;
  std::vector<std::string> missing_;
};

std::vector<Tensor> layer_parameters(const KerasWeights& layer, const std::vector<Shape>& expected,
                                     ArrayTaker& arrays) {
  std::vector<Tensor> tensors;
  for (std::size_t i = 0; i < layer.names.size(); ++i) {
    auto tensor = arrays.take(layer.layer, layer.names[i]);
    if (tensor && layer.merge_heads && tensor->elements() == element_count(expected[i]))
      tensor = std::move(*tensor).reshaped(expected[i]);
    if (tensor)
      tensors.push_back(std::move(*tensor));
  }
  return tensors;
}

// Moving statistics are optional: without them they start at 0 and 1.
std::vector<Tensor> moving_statistics(const KerasWeights& layer, ArrayTaker& arrays) {
  const bool present = std::any_of(layer.running.begin(), layer.running.end(),
                                   [&](const auto& n) { return arrays.holds(layer.layer, n); });
  std::vector<Tensor> running;
  for (const auto& name : present ? layer.running : std::vector<std::string>{}) {
    if (auto tensor = arrays.take(layer.layer, name))
      running.push_back(std::move(*tensor));
  }
  return running;
}

}  // namespace

std::string listed(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names)
    text += (text.empty() ? "'" : ", '") + name + "'";
  return text;
}

KerasWeightsFile read_keras_weights(const KerasImport& imported, const Model& model,
                                    const std::string& npz, std::int64_t max_bytes) {
  ArrayTaker arrays(keras_arrays(npz, model.total_params(), max_bytes), npz);
  KerasWeightsFile file;
  for (const auto& layer : imported.weights) {
    const auto expected = tensor_shapes_of(model, model.index_of(layer.layer)).parameters;
    file.weights.emplace_back(layer.layer, layer_parameters(layer, expected, arrays));
    auto running = moving_statistics(layer, arrays);
    if (running.size() == 2)
      file.running.emplace_back(layer.layer, std::move(running));
  }
  if (!arrays.missing().empty())
    throw core::ConfigError(npz, "",
                            "has no array for " + listed(arrays.missing()) +
                                "; name them <layer>/<weight> as Keras 3's w.path does, or "
                                "<layer>/<weight>:0 as tf.keras' w.name does");
  file.ignored = arrays.left();
  return file;
}

}  // namespace ipusim::models
