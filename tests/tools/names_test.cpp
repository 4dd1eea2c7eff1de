// Names from a config or a model file never become paths outside the folder they belong in,
// never reach the terminal as control characters, and are capped in length (issue 29).

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/scratch_folder.hpp"
#include "tests/tools/cli_support.hpp"

namespace {

namespace fs = std::filesystem;
using namespace ipusim::testing;

// What every refused layer id is told after its reason.
const std::string kIdRule =
    "; numeric mode names files after layer ids (<id>.kernel.initial.npy), so an id must be a "
    "plain file name, without '/', '\\', '..' or control characters\n";

// The base config with its second layer (fc2, a split) renamed to `id`.
std::string config_with_id(const std::string& file, const std::string& id) {
  auto config = nlohmann::json::parse(std::ifstream(kBaseConfig));
  config["model"]["layers"][1]["id"] = id;
  config["pipeline"]["splits"] = {id};
  return write(file, config.dump());
}

// A Sequential Keras model whose Dense layer is called `name`.
std::string keras_model(const std::string& file, const std::string& name) {
  const nlohmann::json keras = {
      {"class_name", "Sequential"},
      {"keras_version", "2.11.0"},
      {"config",
       {{"name", "m"},
        {"layers",
         {{{"class_name", "InputLayer"},
           {"config", {{"name", "in"}, {"batch_input_shape", {nullptr, 4}}}}},
          {{"class_name", "Dense"},
           {"config", {{"name", name}, {"units", 3}, {"activation", "softmax"}}}}}}}}};
  return write(file, keras.dump());
}

}  // namespace

TEST_CASE("a Keras layer named with '../' is refused before its weights are written") {
  const std::string model = keras_model("escape.json", "../../tmp/x/r");
  write("escape.npz", "not read: the name is refused first");
  const std::string config = scratch("escape_config.json");
  const CliResult result = run_ipusim({"import", model, "-o", config});
  CHECK(result.code == 2);
  CHECK(result.err == "error: " + model +
                          ": at /config/layers/1/config/name: the layer id '../../tmp/x/r' holds "
                          "'/'" +
                          kIdRule);
  CHECK(!fs::exists(config));
  CHECK(!fs::exists(scratch("escape_config.weights")));
  CHECK(!fs::exists(scratch_folder("tools_tests").parent_path() / "tmp"));
}

TEST_CASE("train --save refuses a layer id that climbs out of the folder, creating nothing") {
  const std::string config = config_with_id("climb.json", "../climb");
  const std::string save = scratch("climb_saved");
  const CliResult result = run_ipusim({"train", config, "--steps", "1", "--save", save});
  CHECK(result.code == 2);
  CHECK(result.err == "error: " + config +
                          ": at /model/layers/1/id: the layer id '../climb' holds '/'" + kIdRule);
  CHECK(!fs::exists(save));
  CHECK(!fs::exists(scratch_folder("tools_tests") / "climb.kernel.initial.npy"));
}

TEST_CASE("run --numeric refuses layer ids holding a backslash or '..' before reading weights") {
  const std::string backslash = config_with_id("backslash.json", "a\\b");
  const CliResult first = run_ipusim({"run", backslash, "--numeric", "--quiet"});
  CHECK(first.code == 2);
  CHECK(first.err == "error: " + backslash +
                         ": at /model/layers/1/id: the layer id 'a\\b' holds '\\'" + kIdRule);
  const std::string dots = config_with_id("dots.json", "..");
  const CliResult second = run_ipusim({"run", dots, "--numeric", "--quiet"});
  CHECK(second.code == 2);
  CHECK(second.err ==
        "error: " + dots + ": at /model/layers/1/id: the layer id '..' holds '..'" + kIdRule);
}

TEST_CASE("a layer id longer than 200 bytes is refused at its JSON path") {
  const std::string config = config_with_id("long_id.json", std::string(201, 'x'));
  const CliResult result = run_ipusim({"validate", config});
  CHECK(result.code == 2);
  CHECK(result.err == "error: " + config +
                          ": at /model/layers/1/id: the layer id is 201 bytes long; the most is "
                          "200 (reports copy it and files are named after it)\n");
  // 200 bytes is allowed.
  CHECK(run_ipusim({"validate", config_with_id("id_200.json", std::string(200, 'x'))}).code == 0);
}

TEST_CASE("a model name longer than 200 bytes is refused at /model/name") {
  auto config = nlohmann::json::parse(std::ifstream(kBaseConfig));
  config["model"]["name"] = std::string(5'000'000, 'n');
  const std::string path = write("long_name.json", config.dump());
  const CliResult result = run_ipusim({"validate", path});
  CHECK(result.code == 2);
  CHECK(result.err == "error: " + path +
                          ": at /model/name: the model name is 5000000 bytes long; the most is "
                          "200 (every report copies it)\n");
}

TEST_CASE("control characters in a layer id are shown escaped in the error, never raw") {
  const std::string config = config_with_id("escape_id.json",
                                            "a\x1b]0;x\x07"
                                            "b");
  const CliResult result = run_ipusim({"validate", config});
  CHECK(result.code == 2);
  CHECK(result.err == "error: " + config +
                          ": at /model/layers/1/id: the layer id 'a\\x1b]0;x\\x07b' holds a "
                          "control character" +
                          kIdRule);
}

TEST_CASE("a layer id holding a C1 control character, U+0085 or U+009B, is refused") {
  for (const std::string code : {"85", "9b"}) {
    const std::string byte(1, char(std::stoi(code, nullptr, 16)));
    const std::string config = config_with_id("c1_id_" + code + ".json", "a\xc2" + byte + "b");
    const CliResult result = run_ipusim({"validate", config});
    CHECK(result.code == 2);
    CHECK(result.err == "error: " + config + ": at /model/layers/1/id: the layer id 'a\\u00" +
                            code + "b' holds a control character" + kIdRule);
  }
}

TEST_CASE("a model name with control characters reaches the report escaped") {
  auto config = nlohmann::json::parse(std::ifstream(kBaseConfig));
  std::string name = "bell\x07name\x1b[2J";
  name += '\0';
  name += "end";
  config["model"]["name"] = name;
  const std::string path = write("escape_name.json", config.dump());
  const CliResult result = run_ipusim({"run", path});
  CHECK(result.code == 0);
  CHECK(result.out.find('\x1b') == std::string::npos);
  CHECK(result.out.find('\x07') == std::string::npos);
  CHECK(result.out.find('\0') == std::string::npos);
  CHECK_THAT(result.out, Catch::Matchers::StartsWith("ipusim run: bell\\x07name\\x1b[2J\\x00end (" +
                                                     path + ")\n"));
}
