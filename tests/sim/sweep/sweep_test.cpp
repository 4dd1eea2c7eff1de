#include "sim/sweep/sweep.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "sim/core/error.hpp"
#include "tests/test_support.hpp"

namespace {

using namespace ipusim;

// A file name of its own under the system's temporary directory, removed at the end.
class TempFile {
 public:
  explicit TempFile(const std::string& name)
      : path_((std::filesystem::temp_directory_path() /
               ("ipusim-sweep-" + std::to_string(::getpid()) + "-" + name))
                  .string()) {
    std::filesystem::remove(path_);
  }
  ~TempFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }
  void write(const std::string& text) const { std::ofstream(path_, std::ios::binary) << text; }

 private:
  std::string path_;
};

// The message of the config error `action` throws, or "no error".
const auto config_error = &testing::error_of<core::ConfigError>;

const std::string kHeader = "run,a,step_cycles\n";

}  // namespace

TEST_CASE("a --vary value list splits at commas outside JSON lists and strings") {
  const auto axis =
      sim::parse_vary_argument(R"(pipeline.splits=["dense32"],["dense64","dense32"],"a,b")");
  CHECK(axis.path == "pipeline.splits");
  CHECK(axis.values ==
        std::vector<std::string>{R"(["dense32"])", R"(["dense64","dense32"])", R"("a,b")"});
  CHECK(axis.label == R"(--vary pipeline.splits=["dense32"],["dense64","dense32"],"a,b")");
}

TEST_CASE("a --vary without '=' or with an empty value is refused with the expected form") {
  CHECK(config_error([] { sim::parse_vary_argument("pipeline.repeat_count"); }) ==
        "--vary pipeline.repeat_count: expected PATH=V1,V2,..., such as "
        "pipeline.gradient_accumulation_count=8,16,32");
  CHECK(config_error([] { sim::parse_vary_argument("pipeline.repeat_count=1,,2"); }) ==
        "--vary pipeline.repeat_count=1,,2: a value is empty (two commas in a row, or none "
        "given)");
}

TEST_CASE("the first --vary varies slowest and every run has a stable key") {
  const sim::SweepPlan plan(
      {sim::parse_vary_argument("a.b=1,2"), sim::parse_vary_argument("/c=x,y,z")});
  CHECK(plan.size() == 6);
  CHECK(plan.values(0) == std::vector<std::string>{"1", "x"});
  CHECK(plan.values(4) == std::vector<std::string>{"2", "y"});
  CHECK(plan.key(5) == "a.b=2 /c=z");
  const auto overrides = plan.overrides(2);
  REQUIRE(overrides.size() == 2);
  CHECK(overrides[1].path == "/c");
  CHECK(overrides[1].value == "z");
  CHECK(overrides[1].label == "--vary /c=z");
  CHECK(plan.columns().front() == "run");
  CHECK(plan.columns()[1] == "a.b");
  CHECK(plan.columns()[2] == "/c");
  CHECK(plan.columns()[3] == "step_cycles");
  CHECK(plan.columns().back() == "error");
}

TEST_CASE("one path varied twice, once dotted and once as a pointer, is refused") {
  CHECK(config_error([] {
          sim::SweepPlan({sim::parse_vary_argument("pipeline.seed=1,2"),
                          sim::parse_vary_argument("/pipeline/seed=3")});
        }) ==
        "--vary /pipeline/seed=3: '/pipeline/seed' is already varied by --vary "
        "pipeline.seed=1,2");
}

TEST_CASE("shards take runs round robin and a shard beyond its count is refused") {
  const auto shard = sim::parse_shard("2/3");
  CHECK(shard.index == 2);
  CHECK(shard.count == 3);
  CHECK_FALSE(shard.contains(0));
  CHECK(shard.contains(1));
  CHECK(shard.contains(4));
  CHECK_FALSE(shard.contains(5));
  CHECK(config_error([] { sim::parse_shard("3/2"); }) ==
        "--shard 3/2: expected I/N with 1 <= I <= N, such as 2/8 for the second of 8 slices, or "
        "auto in a Slurm array job");
  CHECK(config_error([] { sim::parse_shard("2"); }) ==
        "--shard 2: expected I/N with 1 <= I <= N, such as 2/8 for the second of 8 slices, or "
        "auto in a Slurm array job");
}

TEST_CASE("the shard auto is the slice of the Slurm array task") {
  const auto slurm = [](std::map<std::string, std::string> variables) {
    return [variables](const std::string& name) -> std::optional<std::string> {
      const auto found = variables.find(name);
      return found == variables.end() ? std::nullopt : std::optional(found->second);
    };
  };
  // sbatch --array=0-3: tasks 0..3 are slices 1..4 of 4.
  auto shard = sim::parse_shard("auto", slurm({{"SLURM_ARRAY_TASK_ID", "2"},
                                               {"SLURM_ARRAY_TASK_COUNT", "4"},
                                               {"SLURM_ARRAY_TASK_MIN", "0"},
                                               {"SLURM_ARRAY_TASK_MAX", "3"}}));
  CHECK(shard.index == 3);
  CHECK(shard.count == 4);
  // sbatch --array=1-8 on a Slurm without SLURM_ARRAY_TASK_COUNT.
  shard = sim::parse_shard("auto", slurm({{"SLURM_ARRAY_TASK_ID", "8"},
                                          {"SLURM_ARRAY_TASK_MIN", "1"},
                                          {"SLURM_ARRAY_TASK_MAX", "8"}}));
  CHECK(shard.index == 8);
  CHECK(shard.count == 8);
  CHECK(config_error([&] { sim::parse_shard("auto", slurm({})); }) ==
        "--shard auto: SLURM_ARRAY_TASK_ID is not set to a number: run inside a Slurm array job "
        "(sbatch --array=0-3 ...) or give the slice as I/N");
  CHECK(config_error([&] {
          sim::parse_shard("auto",
                           slurm({{"SLURM_ARRAY_TASK_ID", "5"}, {"SLURM_ARRAY_TASK_COUNT", "4"}}));
        }) ==
        "--shard auto: SLURM_ARRAY_TASK_ID 5 is not one of the array's 4 tasks from 0; "
        "give the slice as I/N");
  // sbatch --array=0-6:2: tasks 0, 2, 4, 6 are slices 1..4 of 4, with or without the count.
  const std::map<std::string, std::string> stepped = {{"SLURM_ARRAY_TASK_COUNT", "4"},
                                                      {"SLURM_ARRAY_TASK_MIN", "0"},
                                                      {"SLURM_ARRAY_TASK_MAX", "6"},
                                                      {"SLURM_ARRAY_TASK_STEP", "2"}};
  for (const auto& [id, slice] :
       std::map<std::string, int>{{"0", 1}, {"2", 2}, {"4", 3}, {"6", 4}}) {
    auto variables = stepped;
    variables["SLURM_ARRAY_TASK_ID"] = id;
    shard = sim::parse_shard("auto", slurm(variables));
    CHECK(shard.index == slice);
    CHECK(shard.count == 4);
    variables.erase("SLURM_ARRAY_TASK_COUNT");
    CHECK(sim::parse_shard("auto", slurm(variables)).index == slice);
  }
  auto odd = stepped;
  odd["SLURM_ARRAY_TASK_ID"] = "3";
  CHECK(config_error([&] { sim::parse_shard("auto", slurm(odd)); }) ==
        "--shard auto: SLURM_ARRAY_TASK_ID 3 is not one of the array's 4 tasks from 0 in steps "
        "of 2; give the slice as I/N");
  // sbatch --array=1,5,6: three IDs that no step maps onto slices.
  CHECK(config_error([&] {
          sim::parse_shard("auto", slurm({{"SLURM_ARRAY_TASK_ID", "5"},
                                          {"SLURM_ARRAY_TASK_COUNT", "3"},
                                          {"SLURM_ARRAY_TASK_MIN", "1"},
                                          {"SLURM_ARRAY_TASK_MAX", "6"}}));
        }) ==
        "--shard auto: the array's task IDs are a list, not a range MIN-MAX[:STEP] (3 tasks from "
        "1 to 6); give the slice as I/N");
}

TEST_CASE("a CSV cell with a comma or a quote is quoted and a line break becomes a space") {
  CHECK(sim::csv_line({"1", "a,b", "say \"hi\"", "x\ny", ""}) ==
        "1,\"a,b\",\"say \"\"hi\"\"\",x y,\n");
}

TEST_CASE("reading a sweep file drops a trailing partial line left by a kill") {
  const TempFile file("partial.csv");
  file.write(kHeader + "0,\"1,2\",100\n1,3,2");
  const auto read = sim::read_sweep_csv(file.path());
  CHECK(read.table.columns == std::vector<std::string>{"run", "a", "step_cycles"});
  REQUIRE(read.table.rows.size() == 1);
  CHECK(read.table.rows[0] == std::vector<std::string>{"0", "1,2", "100"});
  CHECK(read.complete_bytes == kHeader.size() + 12);  // the partial row is not counted
}

TEST_CASE("a missing sweep file reads as empty") {
  const TempFile file("missing.csv");
  const auto read = sim::read_sweep_csv(file.path());
  CHECK(read.table.columns.empty());
  CHECK(read.complete_bytes == 0);
}

TEST_CASE("a row with the wrong number of cells is refused with its line number") {
  const TempFile file("short.csv");
  file.write(kHeader + "0,1,100\n1,2\n");
  CHECK(config_error([&] { sim::read_sweep_csv(file.path()); }) ==
        file.path() + ": line 3 is not a sweep row (2 cells for 3 columns)");
}

TEST_CASE("a row whose first cell is no run number says so, not that its cells are too few") {
  const TempFile file("no_run.csv");
  file.write(kHeader + "0,1,100\nx,2,200\n");
  CHECK(config_error([&] { sim::read_sweep_csv(file.path()); }) ==
        file.path() + ": line 3 is not a sweep row: its first cell, 'x', is no run number " +
            "(expected 0, 1, 2, ...)");
}

TEST_CASE("merging sorts by run, keeps a run found twice once and lists the runs none holds") {
  const TempFile first("merge-1.csv");
  const TempFile second("merge-2.csv");
  first.write(kHeader + "4,x,40\n0,x,0\n");
  second.write(kHeader + "1,y,10\n0,x,0\n");
  const auto merged = sim::merge_sweep_csvs({first.path(), second.path()});
  CHECK(merged.table.to_csv() == kHeader + "0,x,0\n1,y,10\n4,x,40\n");
  CHECK(merged.missing == std::vector<std::size_t>{2, 3});
  CHECK(merged.missing_count == 2);
}

TEST_CASE("merging files read a megabyte at a time keeps every row whole and sorted by run") {
  const TempFile first("large-1.csv");
  const TempFile second("large-2.csv");
  // 80,000 runs of about 35 bytes, so lines cross the reads' megabyte boundaries: the even runs
  // in the first file backwards, the odd ones in the second, and runs 100..199 in both.
  std::string a = kHeader;
  std::string b = kHeader;
  std::string expected = kHeader;
  for (int run = 79'999; run >= 0; --run) {
    const std::string row = std::to_string(run) + ",\"x,\"\"" + std::to_string(run) +
                            "\"\" quoted\"," + std::to_string(run * 7) + "\n";
    (run % 2 == 0 ? a : b) += row;
    if (run >= 100 && run < 200 && run % 2 == 0)
      b += row;
  }
  for (int run = 0; run < 80'000; ++run)
    expected += std::to_string(run) + ",\"x,\"\"" + std::to_string(run) + "\"\" quoted\"," +
                std::to_string(run * 7) + "\n";
  first.write(a);
  second.write(b.substr(0, b.size() - 1));  // its last row without its '\n'
  REQUIRE(a.size() > (std::size_t{1} << 20));
  const sim::SweepMerge merge({first.path(), second.path()});
  std::string written;
  merge.write([&](std::string_view piece) { written += piece; });
  CHECK(written == expected);
  CHECK(merge.summary().runs == 80'000);
  CHECK(merge.summary().missing_count == 0);
}

TEST_CASE("merging refuses two different rows for one run") {
  const TempFile first("conflict-1.csv");
  const TempFile second("conflict-2.csv");
  first.write(kHeader + "0,x,0\n");
  second.write(kHeader + "0,x,7\n");
  CHECK(config_error([&] {
          sim::merge_sweep_csvs({first.path(), second.path()});
        }) == second.path() + ": run 0 differs from run 0 in " + first.path());
}

TEST_CASE("merging refuses files of different sweeps") {
  const TempFile first("columns-1.csv");
  const TempFile second("columns-2.csv");
  first.write(kHeader + "0,x,0\n");
  second.write("run,b,step_cycles\n0,x,0\n");
  CHECK(config_error([&] {
          sim::merge_sweep_csvs({first.path(), second.path()});
        }) == second.path() + ": its columns differ from those of " + first.path());
}

TEST_CASE("a sweep of more than 100,000,000 runs is refused with the --vary that tips it over") {
  std::string thousand = "1";
  for (int i = 2; i <= 1000; ++i)
    thousand += "," + std::to_string(i);
  CHECK(config_error([&] {
          sim::SweepPlan({sim::parse_vary_argument("a=" + thousand),
                          sim::parse_vary_argument("b=" + thousand),
                          sim::parse_vary_argument("c=" + thousand)});
        }) ==
        "--vary c=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,2...: the sweep "
        "would have more than 100,000,000 runs; vary fewer values or split it into several "
        "sweeps");
}
