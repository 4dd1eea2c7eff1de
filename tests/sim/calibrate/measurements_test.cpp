#include "sim/calibrate/measurements.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>

#include "sim/core/error.hpp"
#include "tests/test_support.hpp"

namespace {

namespace fs = std::filesystem;
using namespace ipusim;

std::string write(const std::string& name, const std::string& text) {
  return testing::write_scratch("calibrate_tests", name, text);
}

const std::string kHeader = "set,stage,forward_cycles,backward_cycles,step_cycles\n";

// The error reading a CSV file of the header and `rows`, without the file's name.
std::string csv_error(const std::string& rows) {
  const std::string path = write("bad.csv", kHeader + rows);
  const std::string error =
      testing::error_of<core::ConfigError>([&] { sim::read_measurements(path); });
  return error.rfind(path + ": ", 0) == 0 ? error.substr(path.size() + 2) : error;
}

std::string json_error(const std::string& text) {
  const std::string path = write("bad.json", text);
  const std::string error =
      testing::error_of<core::ConfigError>([&] { sim::read_measurements(path); });
  return error.rfind(path + ": ", 0) == 0 ? error.substr(path.size() + 2) : error;
}

}  // namespace

TEST_CASE("a CSV row gives a stage's passes or a variant's step, with the variant's overrides") {
  const std::string path =
      write("m.csv", "\xEF\xBB\xBF" + kHeader +
                         ",0,1200,2400.5,\r\n"
                         "\n"
                         "\"pipeline.micro_batch_size=8; "
                         "pipeline.splits=[\"\"dense64\"\",\"\"dense32\"\"]\",,,,99000\n"
                         " pipeline.gradient_accumulation_count=8 ;, 1 , ,300,");
  const auto measured = sim::read_measurements(path);
  REQUIRE(measured.size() == 4);
  CHECK(measured[0].set.empty());
  CHECK(measured[0].what == sim::Measured::kForward);
  CHECK(measured[0].stage == 0);
  CHECK(measured[0].cycles == 1200);
  CHECK(measured[0].source.line == 2);
  CHECK(measured[1].what == sim::Measured::kBackward);
  CHECK(measured[1].cycles == 2400.5);
  CHECK(measured[2].set == std::vector<std::string>{"pipeline.micro_batch_size=8",
                                                    R"(pipeline.splits=["dense64","dense32"])"});
  CHECK(measured[2].what == sim::Measured::kStep);
  CHECK(measured[2].cycles == 99000);
  CHECK(measured[2].source.line == 4);
  CHECK(measured[3].set == std::vector<std::string>{"pipeline.gradient_accumulation_count=8"});
  CHECK(measured[3].what == sim::Measured::kBackward);
  CHECK(measured[3].stage == 1);
  CHECK(sim::describe(measured[0]) == "stage 0 forward");
  CHECK(sim::describe(measured[3]) == "stage 1 backward");
  CHECK(sim::describe(measured[2]) == "step");
}

TEST_CASE("a measurement may name its own config file, relative to the measurement file") {
  const std::string csv = write("configs.csv", "config," + kHeader +
                                                   "a.json,,,,,5000\n"
                                                   ",pipeline.micro_batch_size=2,0,100,,\n"
                                                   "/abs/b.json,,,,,7000\n");
  const auto from_csv = sim::read_measurements(csv);
  REQUIRE(from_csv.size() == 3);
  const std::string folder = fs::path(csv).parent_path().string();
  CHECK(from_csv[0].config == folder + "/a.json");
  CHECK(from_csv[0].what == sim::Measured::kStep);
  CHECK(from_csv[1].config.empty());
  CHECK(from_csv[1].set == std::vector<std::string>{"pipeline.micro_batch_size=2"});
  CHECK(from_csv[2].config == "/abs/b.json");
  const std::string json = write("configs.json", R"({"measurements": [
      {"config": "../x/a.json", "step_cycles": 5000}]})");
  const auto from_json = sim::read_measurements(json);
  REQUIRE(from_json.size() == 1);
  CHECK(from_json[0].config == fs::path(folder).parent_path().string() + "/x/a.json");
  CHECK(json_error(R"({"measurements": [{"config": " ", "step_cycles": 5}]})") ==
        "at /measurements/0/config: expected the path of a config file, found an empty text");
  CHECK(csv_error("x,,,,,5\n") ==
        "line 2: expected 5 cells (set,stage,forward_cycles,backward_cycles,step_cycles), found 6");
}

TEST_CASE("a JSON file gives the same measurements as its CSV form") {
  const std::string path = write("m.json", R"({"measurements": [
      {"set": ["pipeline.micro_batch_size=8"], "stage": 1, "forward_cycles": 1234,
       "backward_cycles": 2345},
      {"set": [], "step_cycles": 999999},
      {"stage": 0, "forward_cycles": 10, "backward_cycles": null}]})");
  const auto measured = sim::read_measurements(path);
  REQUIRE(measured.size() == 4);
  CHECK(measured[0].set == std::vector<std::string>{"pipeline.micro_batch_size=8"});
  CHECK(measured[0].what == sim::Measured::kForward);
  CHECK(measured[0].stage == 1);
  CHECK(measured[0].cycles == 1234);
  CHECK(measured[0].source.pointer == "/measurements/0");
  CHECK(measured[1].what == sim::Measured::kBackward);
  CHECK(measured[1].cycles == 2345);
  CHECK(measured[2].what == sim::Measured::kStep);
  CHECK(measured[2].cycles == 999999);
  CHECK(measured[3].set.empty());
  CHECK(measured[3].what == sim::Measured::kForward);
}

TEST_CASE("a measurement file is read by its extension, and read only when it is a regular file") {
  CHECK(testing::error_of<core::ConfigError>([] { sim::read_measurements("cycles.txt"); }) ==
        "cycles.txt: expected a measurement file named *.csv or *.json");
  CHECK(testing::error_of<core::ConfigError>([] { sim::read_measurements("absent.csv"); }) ==
        "absent.csv: cannot read the measurement file: No such file or directory");
  const std::string folder = testing::scratch_path("calibrate_tests", "folder.json");
  fs::create_directories(folder);
  CHECK(testing::error_of<core::ConfigError>([&] { sim::read_measurements(folder); }) ==
        folder + ": cannot read the measurement file: it is a directory, not a regular file");
}

TEST_CASE("a measurement file over 64 MiB is refused before it is read") {
  const std::string path = testing::scratch_path("calibrate_tests", "huge.csv");
  std::ofstream(path).close();
  fs::resize_file(path, (std::uintmax_t{64} << 20) + 1);  // sparse: it costs no disk
  CHECK(testing::error_of<core::ConfigError>([&] { sim::read_measurements(path); }) ==
        path +
            ": cannot read the measurement file: it holds more than 64 MiB (67108864 bytes), the "
            "most ipusim reads");
}

TEST_CASE("errors in a CSV file name the line and the column") {
  CHECK(csv_error("") == "expected at least one measurement, found none");
  const std::string path = write("header.csv", "set,stage,forward,backward,step\n,0,1,2,\n");
  CHECK(testing::error_of<core::ConfigError>([&] { sim::read_measurements(path); }) ==
        path +
            ": line 1: expected the header set,stage,forward_cycles,backward_cycles,step_cycles "
            "(optionally after a config column), found 'set,stage,forward,backward,step'");
  CHECK(csv_error(",0,1200\n") ==
        "line 2: expected 5 cells (set,stage,forward_cycles,backward_cycles,step_cycles), found 3");
  CHECK(csv_error("\"pipeline.micro_batch_size=8,0,1,2,\n") == "line 2: a quote is not closed");
  CHECK(csv_error(",0,12OO,,\n") ==
        "line 2, column forward_cycles: expected a number of cycles, found '12OO'");
  CHECK(csv_error(",,,,-5\n") ==
        "line 2, column step_cycles: expected a number of cycles from 1 to 2^62, found "
        "'-5'");
  CHECK(csv_error(",0,0.5,,\n") ==
        "line 2, column forward_cycles: expected a number of cycles from 1 to 2^62, found "
        "'0.5'");
  // 2^62 - 1 reads as 2^62, the top of the range; beyond it is refused.
  CHECK(csv_error(",,,,5e18\n") ==
        "line 2, column step_cycles: expected a number of cycles from 1 to 2^62, found '5e18'");
  CHECK(csv_error(",,,,1e400\n") ==
        "line 2, column step_cycles: expected a number of cycles, found '1e400'");
  CHECK(csv_error(",1.5,100,,\n") ==
        "line 2, column stage: expected a stage index (an integer from 0), found '1.5'");
  CHECK(csv_error(",1,,,\n") ==
        "line 2, column stage: expected the stage's forward_cycles, backward_cycles or both");
  CHECK(csv_error(",1,100,,5000\n") ==
        "line 2, column step_cycles: a step's cycles take an entry of their own, without a "
        "stage");
  CHECK(csv_error(",,,100,\n") ==
        "line 2, column backward_cycles: a pass's cycles belong to a stage: give its index in "
        "stage");
  CHECK(csv_error(",,,,\n") ==
        "line 2: expected step_cycles, or a stage with its forward_cycles or backward_cycles");
  CHECK(csv_error("pipeline.micro_batch_size;x=1,,,,5\n") ==
        "line 2, column set: expected PATH=VALUE as --set takes it, such as "
        "pipeline.micro_batch_size=8, found 'pipeline.micro_batch_size'");
  CHECK(csv_error("hardware.operations.matmul.efficiency=0.5,,,,5\n") ==
        "line 2, column set: 'hardware.operations.matmul.efficiency=0.5' sets a parameter of the "
        "cost model, which the fit moves: every variant shares the fitted values");
}

TEST_CASE("errors in a JSON file name the JSON path") {
  CHECK(json_error(R"({"measurement": []})") ==
        "at /measurement: unknown key 'measurement'; did you mean 'measurements'?");
  CHECK(json_error(R"({})") == "at /: missing required field 'measurements'");
  CHECK(json_error(R"({"measurements": {}})") ==
        "at /measurements: expected a list of measurements");
  CHECK(json_error(R"({"measurements": []})") == "expected at least one measurement, found none");
  CHECK(json_error(R"({"measurements": [{"stage": 0, "forward_cycle": 1}]})") ==
        "at /measurements/0/forward_cycle: unknown key 'forward_cycle'; did you mean "
        "'forward_cycles'?");
  CHECK(json_error(R"({"measurements": [{"step_cycles": "1000"}]})") ==
        "at /measurements/0/step_cycles: expected a number, found a string \"1000\"");
  CHECK(json_error(R"({"measurements": [{"step_cycles": 0}]})") ==
        "at /measurements/0/step_cycles: expected a number of cycles from 1 to 2^62, "
        "found 0");
  CHECK(json_error(R"({"measurements": [{"stage": 0, "backward_cycles": 0.999}]})") ==
        "at /measurements/0/backward_cycles: expected a number of cycles from 1 to 2^62, "
        "found 0.999");
  CHECK(json_error(R"({"measurements": [{"stage": -1, "forward_cycles": 5}]})") ==
        "at /measurements/0/stage: expected an integer from 0 to 1048576, found -1");
  CHECK(json_error(R"({"measurements": [{"set": "pipeline.x=1", "step_cycles": 5}]})") ==
        "at /measurements/0/set: expected an array, found a string \"pipeline.x=1\"");
  CHECK(json_error(R"({"measurements": [{"set": ["=1"], "step_cycles": 5}]})") ==
        "at /measurements/0/set/0: expected PATH=VALUE as --set takes it, such as "
        "pipeline.micro_batch_size=8, found '=1'");
  CHECK(json_error(R"({"measurements": [{"stage": 2}]})") ==
        "at /measurements/0/stage: expected the stage's forward_cycles, backward_cycles or both");
  CHECK(json_error(R"({"measurements": [{}]})") ==
        "at /measurements/0: expected step_cycles, or a stage with its forward_cycles or "
        "backward_cycles");
  CHECK(json_error(R"({"measurements": [)") ==
        "malformed JSON at line 1, column 19: syntax error while parsing value - unexpected "
        "end of input; expected '[', '{', or a literal");
}

TEST_CASE("a file of more than 100,000 measurements is refused at the first one past the bound") {
  std::string rows;
  for (int i = 0; i <= 100'000; ++i)
    rows += ",,,,1000\n";
  CHECK(csv_error(rows) ==
        "line 100002: the file holds more than 100,000 measurements, the most ipusim fits");
}

TEST_CASE("two different values for one variant's same measurement are refused at the second") {
  CHECK(csv_error("pipeline.micro_batch_size=2,0,100,200,\n,0,100,250,\n"
                  "pipeline.micro_batch_size=2,0,100,200,\npipeline.micro_batch_size=2,0,100,"
                  "250,\n") ==
        "line 5, column backward_cycles: this config variant's stage 0 backward was measured as "
        "200 at line 2; expected one value per variant and measurement (give the mean of "
        "repeated measurements)");
  CHECK(csv_error(",,,,5000\n,,,,5000.5\n") ==
        "line 3, column step_cycles: this config variant's step was measured as 5000 at line 2; "
        "expected one value per variant and measurement (give the mean of repeated "
        "measurements)");
  CHECK(json_error(R"({"measurements": [{"stage": 1, "forward_cycles": 7},
                                        {"stage": 1, "forward_cycles": 8}]})") ==
        "at /measurements/1/forward_cycles: this config variant's stage 1 forward was measured "
        "as 7 at /measurements/0; expected one value per variant and measurement (give the mean "
        "of repeated measurements)");
}
