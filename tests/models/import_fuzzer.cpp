// libFuzzer target: arbitrary bytes as what `ipusim import` reads. The first byte picks the
// reader: 'o' an ONNX model, 'k' a Keras model's JSON, 'n' an .npz of weights; the rest is the
// file. An imported model is then written as a config and parsed, as the command does. A config
// error is the expected answer to bad input; anything else (a crash, a sanitizer report, an
// uncaught exception, a JSON text that cannot be written) is a finding.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "models/data/npz.hpp"
#include "models/import/keras_import.hpp"
#include "models/import/onnx_import.hpp"
#include "models/layers/model.hpp"
#include "sim/core/config_file.hpp"
#include "sim/core/error.hpp"

namespace {

using nlohmann::json;

// What the command does with an imported model: write it as JSON, read it back as a config.
ipusim::models::Model as_config(const json& model) {
  const std::string text = json{{"model", model}}.dump(2);
  const auto document = ipusim::core::ConfigDocument::parse(text, "fuzz_import.json", {});
  return ipusim::models::parse_model(document.root().at("model"));
}

void import_onnx(const std::string& bytes) {
  as_config(ipusim::models::import_onnx(bytes, "fuzz.onnx").model);
}

void import_keras(const std::string& text) {
  const json keras = json::parse(text, nullptr, false);
  if (keras.is_discarded())
    return;  // the command refuses text that is not JSON before importing
  const auto imported = ipusim::models::import_keras(keras, "fuzz.json");
  ipusim::models::check_keras_model(imported, as_config(imported.model), "fuzz.json");
}

// read_npz reads a file, so the bytes go to one in the temporary folder first.
void read_npz(const std::string& bytes) {
  static const std::string path =
      (std::filesystem::temp_directory_path() / "ipusim_fuzz_input.npz").string();
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  ipusim::models::read_npz(path, std::int64_t{1} << 24);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0)
    return 0;
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0]) {
      case 'o':
        import_onnx(bytes);
        break;
      case 'k':
        import_keras(bytes);
        break;
      case 'n':
        read_npz(bytes);
        break;
      default:
        break;
    }
  } catch (const ipusim::core::ConfigError&) {
  }
  return 0;
}
