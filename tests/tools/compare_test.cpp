#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/tools/cli_support.hpp"

namespace {

using ipusim::testing::run_ipusim;

std::string output(const std::string& name) {
  const auto dir = std::filesystem::path(IPUSIM_BINARY_DIR) / "compare_test";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

// The line with each run of spaces made one space.
std::string squeeze(const std::string& line) {
  std::string out;
  for (char c : line) {
    if (c != ' ' || out.empty() || out.back() != ' ')
      out += c;
  }
  return out;
}

const std::string kConfig = "configs/tf1_mnist_2ipu.json";
const std::string kGac2Error =
    "--gac 2: at /pipeline/gradient_accumulation_count: The number of iterations of the "
    "pipeline must be a multiple of 4, but it is 2. This number is gradient_accumulation_count; "
    "the grouped schedule with 2 stages runs 4 micro-batches at once (set "
    "pipeline.relaxed_divisibility to explore it anyway)";

}  // namespace

TEST_CASE("compare puts the grouped and interleaved schedules side by side") {
  const auto result = run_ipusim({"compare", kConfig, "--schedules", "grouped,interleaved"});
  CHECK(result.code == 0);
  CHECK(result.err.empty());
  CHECK(result.out ==
        "                              tf1_mnist grouped  tf1_mnist interleaved\n"
        "Step                             324,037 cycles         405,608 cycles\n"
        "Step time                             0.2436 ms              0.3050 ms\n"
        "Throughput                  2,101,488 samples/s    1,678,862 samples/s\n"
        "Utilisation (mean of IPUs)                 5.0%                   4.0%\n"
        "Ramp-up                           55,401 cycles          25,186 cycles\n"
        "Main                             257,218 cycles         377,790 cycles\n"
        "Ramp-down                         11,168 cycles           2,382 cycles\n"
        "Weight update                        250 cycles             250 cycles\n"
        "Ramp overhead                             20.5%                   6.8%\n"
        "Bubble                                    95.1%                  96.0%\n"
        "Physical IPU of each IPU                   0, 1                   0, 1\n"
        "IPU0 peak memory                      104.46 MB              104.25 MB\n"
        "IPU0 peak stash                         0.41 MB                0.21 MB\n"
        "IPU1 peak memory                      100.06 MB              100.06 MB\n"
        "IPU1 peak stash                         0.00 MB                0.00 MB\n"
        "Fits in memory                              yes                    yes\n"
        "fastest: tf1_mnist grouped (1.25x the throughput of tf1_mnist interleaved)\n");
}

TEST_CASE("with three or more runs compare names the next fastest and the slowest") {
  const auto result =
      run_ipusim({"compare", kConfig, "--schedules", "grouped,interleaved,sequential,1f1b"});
  CHECK(result.code == 0);
  CHECK(result.out.substr(result.out.rfind("fastest:")) ==
        "fastest: tf1_mnist 1f1b (1.03x the throughput of tf1_mnist grouped, the next fastest; "
        "1.38x the throughput of tf1_mnist sequential, the slowest)\n");
}

TEST_CASE("variants given with --with are columns labelled by their overrides") {
  const auto result =
      run_ipusim({"compare", kConfig, "--with", "pipeline.gradient_accumulation_count=32", "--with",
                  "pipeline.gradient_accumulation_count=64;pipeline.micro_batch_size=16"});
  CHECK(result.code == 0);
  CHECK(result.out.substr(0, result.out.find('\n')) ==
        "                            tf1_mnist pipeline.gradient_accumulation_count=32  "
        "tf1_mnist pipeline.gradient_accumulation_count=64;pipeline.micro_batch_size=16");
  const auto step = result.out.find("\nStep ");
  CHECK(squeeze(result.out.substr(step + 1, result.out.find('\n', step + 1) - step - 1)) ==
        "Step 640,613 cycles 862,101 cycles");
}

TEST_CASE("a run invalid for its schedule is listed under the table and the others still run") {
  const auto result =
      run_ipusim({"compare", kConfig, "--schedules", "grouped,interleaved", "--gac", "2"});
  CHECK(result.code == 0);
  CHECK(result.out.substr(0, result.out.find('\n')) ==
        "                            tf1_mnist interleaved");
  CHECK(result.out.find("\ninvalid: tf1_mnist grouped: " + kGac2Error + "\n") != std::string::npos);
  CHECK(result.out.find("fastest") == std::string::npos);
}

TEST_CASE("when no run is valid compare fails with the first run's config error") {
  const auto result = run_ipusim({"compare", kConfig, "--gac", "2"});
  CHECK(result.code == 2);
  CHECK(result.out.empty());
  CHECK(result.err == "error: " + kGac2Error + "\n");
}

TEST_CASE("compare writes a CSV with the sweep's metric columns and a JSON report per run") {
  const auto csv = output("compare.csv");
  const auto json = output("compare.json");
  const auto result = run_ipusim({"compare", kConfig, "--schedules", "grouped,interleaved",
                                  "--quiet", "--csv", csv, "--json", json});
  CHECK(result.code == 0);
  CHECK(result.out.empty());
  std::ifstream in(csv);
  std::string header;
  std::string first;
  std::getline(in, header);
  std::getline(in, first);
  CHECK(header ==
        "label,config,schedule,with,step_cycles,step_seconds,throughput_samples_per_second,"
        "ramp_up_cycles,main_cycles,ramp_down_cycles,weight_update_cycles,ramp_overhead,"
        "bubble_fraction,utilisation_mean,utilisation_min,peak_memory_bytes_max,"
        "peak_stash_bytes_max,fits_in_memory,error");
  CHECK(first ==
        "tf1_mnist grouped,configs/tf1_mnist_2ipu.json,grouped,,324037,0.000243636842,"
        "2101488.410,55401,257218,11168,250,0.205436,0.950511,0.049747,0.001142,104461696,"
        "413696,true,");
  const auto report = nlohmann::json::parse(std::ifstream(json));
  REQUIRE(report["runs"].size() == 2);
  CHECK(report["runs"][1]["label"] == "tf1_mnist interleaved");
  CHECK(report["runs"][1]["report"]["step_cycles"] == 405608);
}

TEST_CASE("compare has help with an example") {
  const auto help = run_ipusim({"compare", "--help"});
  CHECK(help.code == 0);
  CHECK(help.out.find("Example:\n  ipusim compare") != std::string::npos);
}

TEST_CASE("compare --html stacks every run's pipeline chart on one time axis") {
  const auto html = output("compare.html");
  const auto result = run_ipusim(
      {"compare", kConfig, "--schedules", "grouped,interleaved,1f1b", "--html", html, "--quiet"});
  REQUIRE(result.code == 0);
  std::ifstream in(html);
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(page.find("<svg id=\"gantt\"") != std::string::npos);
  CHECK(page.find("<svg id=\"gantt\"", page.find("<svg id=\"gantt\"") + 1) == std::string::npos);
  for (const char* label : {"tf1_mnist grouped", "tf1_mnist interleaved", "tf1_mnist 1f1b"})
    CHECK(page.find(label) != std::string::npos);
  CHECK(page.find("src=\"http") == std::string::npos);
}
