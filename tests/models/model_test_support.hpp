#pragma once
// Builds models from JSON text for the models tests: the text is the "model" section, placed in
// a config named "model.json" so error messages carry the pointers a real config would.

#include <string>

#include <catch2/catch.hpp>

#include "models/layers/model.hpp"
#include "sim/core/config_file.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models::testing {

inline Model model_from(const std::string& model_json) {
  const auto json = nlohmann::json{{"model", nlohmann::json::parse(model_json)}};
  const auto document = core::ConfigDocument::from_json(json, "model.json");
  return parse_model(document.root().at("model"));
}

// The full text of the ConfigError that parsing raises.
inline std::string model_error(const std::string& model_json) {
  try {
    model_from(model_json);
  } catch (const core::ConfigError& error) {
    return error.what();
  }
  FAIL("no error was raised");
  return "";
}

// A model section with the given input shape and layers list (JSON text of the array).
inline std::string with_layers(const std::string& input_shape, const std::string& layers) {
  return R"({"name": "m", "input": {"shape": )" + input_shape + R"(}, "layers": )" + layers + "}";
}

}  // namespace ipusim::models::testing
