#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/tools/cli_support.hpp"

namespace {

using namespace ipusim::testing;

}  // namespace

TEST_CASE("ipusim import writes a config that runs, and says what it imported") {
  const auto config = fresh_output("import_test", "cnn.json");
  const auto result = run_ipusim(
      {"import", "tests/models/keras/keras_cnn.json", "-o", config, "--splits", "max_pooling2d_1"});
  REQUIRE(result.code == 0);
  CHECK(result.out ==
        "imported model (Functional, Keras 2.11.0) from tests/models/keras/keras_cnn.json: 9 "
        "layers, 34,826 trainable parameters, 0 non-trainable (batch-norm moving statistics); "
        "wrote " +
            config + "\n");
  const auto run = run_ipusim({"run", config, "--quiet", "--numeric"});
  CHECK(run.code == 0);
  CHECK(run.err.empty());
}

TEST_CASE("ipusim import writes nothing when a layer cannot be imported") {
  const auto config = fresh_output("import_test", "unsupported.json");
  const auto result =
      run_ipusim({"import", "tests/models/keras/keras_unsupported.json", "-o", config});
  CHECK(result.code == 2);
  CHECK_THAT(result.err, Catch::Matchers::StartsWith(
                             "error: tests/models/keras/keras_unsupported.json: cannot import 2 "
                             "layer(s), so nothing was written:\n"));
  CHECK(!std::filesystem::exists(config));
}

TEST_CASE("ipusim import of a missing ONNX file names it and writes nothing") {
  const auto config = fresh_output("import_test", "model.json");
  const auto result = run_ipusim({"import", "model.onnx", "-o", config});
  CHECK(result.code == 2);
  CHECK(result.err == "error: model.onnx: No such file or directory\n");
  CHECK(!std::filesystem::exists(config));
}

TEST_CASE("ipusim import names a split that is no layer of the model") {
  const auto config = fresh_output("import_test", "badsplit.json");
  const auto result = run_ipusim(
      {"import", "tests/models/keras/keras_cnn.json", "-o", config, "--splits", "max_pooling"});
  CHECK(result.code == 2);
  CHECK_THAT(result.err, Catch::Matchers::Contains("the imported model does not validate, so "
                                                   "nothing was written"));
  CHECK_THAT(result.err, Catch::Matchers::Contains("did you mean 'max_pooling2d'?"));
  CHECK(!std::filesystem::exists(config));
}
