// Sweep files against hostile values and inputs (issue 29): cells a spreadsheet would run as
// formulas, merges into a file a sweep is writing, and merge inputs that are empty, are not
// sweep files, hold NUL bytes or claim a run index far beyond any sweep.

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "tests/tools/cli_support.hpp"

namespace {

namespace fs = std::filesystem;
using namespace ipusim::testing;

const std::string kHeader = "run,pipeline.pipeline_schedule,error\n";

// Holds flock(2) on a file, as a running sweep does on its CSV.
class SweepLock {
 public:
  explicit SweepLock(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    REQUIRE(fd_ >= 0);
    REQUIRE(::flock(fd_, LOCK_EX | LOCK_NB) == 0);
  }
  ~SweepLock() { ::close(fd_); }
  SweepLock(const SweepLock&) = delete;
  SweepLock& operator=(const SweepLock&) = delete;

 private:
  int fd_;
};

CliResult merge(const std::string& output, const std::string& input) {
  return run_ipusim({"merge", "-o", output, input});
}

}  // namespace

TEST_CASE("sweep cells that start a formula are quoted, and a rerun and a merge keep them") {
  const std::string csv = scratch("formula.csv");
  const std::vector<std::string> args = {
      "sweep",   kBaseConfig, "--vary", "pipeline.pipeline_schedule=@SUM(1),grouped", "-o", csv,
      "--quiet", "--jobs",    "1"};
  REQUIRE(run_ipusim(args).code == 0);
  const std::string text = read_file(csv);
  const std::string row0 = text.substr(text.find("\n0,") + 1);
  // The value and the error (which starts "--vary") each get a leading quote.
  CHECK(row0.starts_with("0,'@SUM(1),,"));
  CHECK(row0.find("'--vary pipeline.pipeline_schedule=@SUM(1): at /pipeline/pipeline_schedule") !=
        std::string::npos);
  CHECK(text.find("\n1,grouped,") != std::string::npos);
  // A rerun reads the quoted cells back as the values it runs: nothing is run again.
  const CliResult rerun = run_ipusim(args);
  CHECK(rerun.code == 0);
  CHECK(read_file(csv) == text);
  const std::string merged = scratch("formula_merged.csv");
  CHECK(merge(merged, csv).code == 0);
  CHECK(read_file(merged) == text);
}

TEST_CASE("merge into a file a sweep is writing stops at once and leaves it alone") {
  const std::string output = write("locked_output.csv", kHeader + "0,grouped,\n");
  const std::string input = write("locked_input.csv", kHeader + "1,grouped,\n");
  const SweepLock lock(output);
  const CliResult result = merge(output, input);
  CHECK(result.code == 2);
  CHECK(result.err == "error: " + output +
                          ": another ipusim sweep is writing this file; wait for it to finish or "
                          "write to another file\n");
  CHECK(read_file(output) == kHeader + "0,grouped,\n");
}

TEST_CASE("merge refuses an empty input file and writes nothing") {
  const std::string empty = write("empty.csv", "");
  const std::string output = scratch("from_empty.csv");
  const CliResult result = merge(output, empty);
  CHECK(result.code == 2);
  CHECK(result.err == "error: " + empty + ": is not a sweep file: it is empty\n");
  CHECK(!fs::exists(output));
}

TEST_CASE("merge refuses an input whose header is empty, lacks run or names a column twice") {
  const std::string output = scratch("from_bad_header.csv");
  const std::string blank = write("blank_header.csv", "\n");
  CHECK(merge(output, blank).err ==
        "error: " + blank + ": is not a sweep file: its header line is empty\n");
  const std::string no_run = write("no_run.csv", "x,y\n0,1\n");
  const CliResult refused = merge(output, no_run);
  CHECK(refused.code == 2);
  CHECK(refused.err ==
        "error: " + no_run + ": is not a sweep file: its first column is 'x', not 'run'\n");
  const std::string twice = write("run_twice.csv", "run,pipeline.pipeline_schedule,run\n0,a,0\n");
  CHECK(merge(output, twice).err ==
        "error: " + twice + ": is not a sweep file: its header names the column 'run' twice\n");
  CHECK(!fs::exists(output));
}

TEST_CASE("merge keeps a last row that lacks only its final line feed") {
  const std::string input = write("no_final_newline.csv", kHeader + "0,grouped,\n1,grouped,");
  const std::string output = scratch("from_no_final_newline.csv");
  const CliResult result = merge(output, input);
  CHECK(result.code == 0);
  CHECK(result.out == "merged 1 file(s): 2 runs into " + output + "\n");
  CHECK(read_file(output) == kHeader + "0,grouped,\n1,grouped,\n");
}

TEST_CASE("merge drops a last row a kill cut short, as a resumed sweep does") {
  const std::string input = write("cut_short.csv", kHeader + "0,grouped,\n1,grou");
  const std::string output = scratch("from_cut_short.csv");
  const CliResult result = merge(output, input);
  CHECK(result.code == 0);
  CHECK(result.out == "merged 1 file(s): 1 runs into " + output + "\n");
  CHECK(read_file(output) == kHeader + "0,grouped,\n");
}

TEST_CASE("merge refuses an input holding a NUL byte, naming its line") {
  const std::string nul =
      write("nul.csv", kHeader + "0,grouped,\n1,gro" + std::string(1, '\0') + "uped,\n");
  const std::string output = scratch("from_nul.csv");
  const CliResult result = merge(output, nul);
  CHECK(result.code == 2);
  CHECK(result.err == "error: " + nul + ": line 3 holds a NUL byte; a sweep file is text\n");
  CHECK(!fs::exists(output));
}

TEST_CASE("merge refuses a run index beyond any sweep and counts a large gap without listing it") {
  const std::string huge = write("huge_index.csv", kHeader + "1000000000,grouped,\n");
  const std::string output = scratch("from_huge.csv");
  const CliResult refused = merge(output, huge);
  CHECK(refused.code == 2);
  CHECK(refused.err == "error: " + huge +
                           ": line 2: run 1000000000 is beyond the 100,000,000 runs a sweep may "
                           "have\n");
  CHECK(!fs::exists(output));
  const std::string last = write("last_index.csv", kHeader + "99999999,grouped,\n");
  const CliResult merged = merge(output, last);
  CHECK(merged.code == 0);
  CHECK(merged.err ==
        "warning: 99,999,999 run(s) missing below the last one present (a shard not merged, or "
        "not finished): 0 1 2 3 4 5 6 7 8 9 ...\n");
  CHECK(read_file(output) == kHeader + "99999999,grouped,\n");
}
