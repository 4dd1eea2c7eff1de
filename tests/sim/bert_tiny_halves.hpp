#pragma once
// configs/bert_tiny_4ipu.json with each encoder "encoderN" written as its two halves,
// "encoderN_attention" (transformer_attention) and "encoderN_ffn" (transformer_feed_forward), as
// Graphcore's att_ffn_placement places them; or kept whole, for comparison. The config's split
// before "encoderN" becomes one before "encoderN_attention".

#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/test_support.hpp"

namespace ipusim::testing {

// Writes the variant to `name` in the scratch folder of `program` and returns its path.
// `dropout` replaces the encoders' rate when given (a half draws its masks by its own id, so
// only without dropout do halves and encoders compute the same numbers).
inline std::string bert_tiny_variant(const std::string& program, const std::string& name,
                                     bool halves, std::optional<double> dropout = std::nullopt) {
  auto config = nlohmann::json::parse(read_file("configs/bert_tiny_4ipu.json"));
  nlohmann::json layers = nlohmann::json::array();
  std::map<std::string, std::string> output_of;  // an encoder's id -> the layer giving its output
  for (nlohmann::json layer : config["model"]["layers"]) {
    if (layer.contains("inputs")) {
      for (auto& input : layer["inputs"])
        input = output_of.count(input) ? output_of[input] : input.get<std::string>();
    }
    if (layer["type"] != "transformer_encoder") {
      layers.push_back(layer);
      continue;
    }
    if (dropout)
      layer["dropout"] = *dropout;
    const std::string id = layer["id"];
    if (!halves) {
      layers.push_back(layer);
      continue;
    }
    nlohmann::json attention = layer;
    attention["id"] = id + "_attention";
    attention["type"] = "transformer_attention";
    attention.erase("ffn");
    nlohmann::json feed_forward = layer;
    feed_forward["id"] = id + "_ffn";
    feed_forward["type"] = "transformer_feed_forward";
    feed_forward.erase("heads");
    feed_forward["inputs"] = {id + "_attention"};
    layers.push_back(attention);
    layers.push_back(feed_forward);
    output_of[id] = id + "_ffn";
  }
  config["model"]["layers"] = layers;
  for (auto& split : config["pipeline"]["splits"]) {
    if (output_of.count(split))
      split = split.get<std::string>() + "_attention";
  }
  return write_scratch(program, name, config.dump(2));
}

}  // namespace ipusim::testing
