#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "sim/spec/spec.hpp"
#include "sim/sweep/sweep.hpp"
#include "tests/tools/cli_support.hpp"

namespace {

using namespace ipusim;

using namespace ipusim::testing;

std::size_t line_count(const std::string& path) {
  const auto text = read_file(path);
  return std::size_t(std::count(text.begin(), text.end(), '\n'));
}

const std::string kGacs = "pipeline.gradient_accumulation_count=4,8,16,32,64,128";
const std::string kSchedules = "pipeline.pipeline_schedule=grouped,interleaved,sequential,1f1b";

std::vector<std::string> gac_sweep(const std::string& csv) {
  return {"sweep", kTf1Config, "--vary", kGacs, "--vary", kSchedules, "-o", csv, "--quiet"};
}

std::string cell(const sim::SweepTable& table, std::size_t row, const std::string& column) {
  return table.rows.at(row).at(*table.column(column));
}

// "1,2,...,n"
std::string counts(int n) {
  std::string out;
  for (int i = 1; i <= n; ++i)
    out += (i > 1 ? "," : "") + std::to_string(i);
  return out;
}

// Holds flock(2) on a file, as a running sweep does on its CSV.
class HeldLock {
 public:
  explicit HeldLock(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    REQUIRE(fd_ >= 0);
    REQUIRE(::flock(fd_, LOCK_EX | LOCK_NB) == 0);
  }
  ~HeldLock() { ::close(fd_); }
  HeldLock(const HeldLock&) = delete;
  HeldLock& operator=(const HeldLock&) = delete;

 private:
  int fd_;
};

int exit_code(pid_t child) {
  int status = 0;
  ::waitpid(child, &status, 0);
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

std::string busy_error(const std::string& csv) {
  return "error: " + csv +
         ": another ipusim sweep is writing this file; wait for it to finish or write to another "
         "file\n";
}

}  // namespace

namespace {

// The ramp overhead of each run of a sweep over kGacs, by schedule in GAC order, with the host
// call's 450 µs a weight tensor taken out: a fixed part of the step that large holds GPipe's
// share below the limit its ramp-down (which grows with the micro-batches) tends to, so its
// share would rise with gradient accumulation, towards that limit.
std::map<std::string, std::vector<double>> ramp_overheads(const std::string& schedules,
                                                          const std::vector<std::string>& sets,
                                                          const std::string& name) {
  const auto csv = fresh_output("sweep_test", name);
  std::vector<std::string> args = {"sweep",  kTf1Config,
                                   "--vary", kGacs,
                                   "--vary", "pipeline.pipeline_schedule=" + schedules,
                                   "--set",  "hardware.host_call.per_tensor=0s",
                                   "-o",     csv,
                                   "--quiet"};
  for (const auto& set : sets) {
    args.push_back("--set");
    args.push_back(set);
  }
  REQUIRE(run_ipusim(args).code == 0);
  const auto table = sim::read_sweep_csv(csv).table;
  std::map<std::string, std::vector<double>> overhead;
  for (std::size_t r = 0; r < table.rows.size(); ++r) {
    CHECK(cell(table, r, "error").empty());
    overhead[cell(table, r, "pipeline.pipeline_schedule")].push_back(
        std::stod(cell(table, r, "ramp_overhead")));
  }
  return overhead;
}

}  // namespace

TEST_CASE("ramp overhead falls monotonically with gradient accumulation for every schedule") {
  std::string schedules;
  for (const auto& name : sim::schedule_names()) {
    if (name != "interleaved_1f1b")
      schedules += (schedules.empty() ? "" : ",") + name;
  }
  auto overhead = ramp_overheads(schedules, {}, "gac.csv");
  // interleaved_1f1b interleaves two stages an IPU: the MLP cut into four, on IPUs 0, 1, 0, 1.
  overhead.merge(ramp_overheads("interleaved_1f1b", kTf1FourStages, "gac_interleaved_1f1b.csv"));
  CHECK(overhead.size() == sim::schedule_names().size());
  for (const auto& [schedule, shares] : overhead) {
    INFO(schedule);
    REQUIRE(shares.size() == 6);
    for (std::size_t i = 1; i < shares.size(); ++i) {
      if (schedule == "sequential") {
        CHECK(shares[i] == 0.0);  // no pipeline, no ramp
      } else {
        CHECK(shares[i] < shares[i - 1]);
      }
    }
  }
  // As `ipusim run --set hardware.host_call.per_tensor=0s` prints.
  CHECK(overhead.at("grouped").at(2) == 0.121356);
}

TEST_CASE("the sweep CSV has one column per varied path and per metric") {
  const auto csv = fresh_output("sweep_test", "columns.csv");
  REQUIRE(run_ipusim(gac_sweep(csv)).code == 0);
  const auto text = read_file(csv);
  CHECK(text.substr(0, text.find('\n') + 1) ==
        "run,pipeline.gradient_accumulation_count,pipeline.pipeline_schedule,step_cycles,"
        "step_seconds,throughput_samples_per_second,ramp_up_cycles,main_cycles,ramp_down_cycles,"
        "weight_update_cycles,ramp_overhead,bubble_fraction,utilisation_mean,utilisation_min,"
        "peak_memory_bytes_max,peak_stash_bytes_max,fits_in_memory,throughput_per_ipu,"
        "collective_cycles,input_wait_cycles,utilisation_ipu0,utilisation_ipu1,"
        "peak_memory_bytes_ipu0,peak_memory_bytes_ipu1,error\n");
  CHECK(text.find("\n8,16,grouped,1227062,0.000922603008,554951.584,83052,499473,41642,602895,"
                  "0.062165,0.586316,0.212465,0.153677,13843840,620544,true,277475.792,0,0,"
                  "0.271254,0.153677,13843840,8279276,\n") != std::string::npos);
}

TEST_CASE("the per-IPU columns agree with the mean, lowest and highest over the IPUs") {
  const auto csv = fresh_output("sweep_test", "per_ipu.csv");
  REQUIRE(run_ipusim(gac_sweep(csv)).code == 0);
  const auto table = sim::read_sweep_csv(csv).table;
  REQUIRE_FALSE(table.rows.empty());
  for (std::size_t row = 0; row < table.rows.size(); ++row) {
    if (!cell(table, row, "error").empty())
      continue;
    const double u0 = std::stod(cell(table, row, "utilisation_ipu0"));
    const double u1 = std::stod(cell(table, row, "utilisation_ipu1"));
    const auto m0 = std::stoll(cell(table, row, "peak_memory_bytes_ipu0"));
    const auto m1 = std::stoll(cell(table, row, "peak_memory_bytes_ipu1"));
    CHECK(std::abs((u0 + u1) / 2 - std::stod(cell(table, row, "utilisation_mean"))) <= 1e-6);
    CHECK(cell(table, row, "utilisation_min") ==
          cell(table, row, u0 < u1 ? "utilisation_ipu0" : "utilisation_ipu1"));
    CHECK(std::max(m0, m1) == std::stoll(cell(table, row, "peak_memory_bytes_max")));
  }
}

TEST_CASE("an illegal gradient accumulation count is a row with its error, not a failure") {
  const auto csv = fresh_output("sweep_test", "illegal.csv");
  const auto result =
      run_ipusim({"sweep", kTf1Config, "--vary", "pipeline.gradient_accumulation_count=2,4", "-o",
                  csv, "--jobs", "1"});
  CHECK(result.code == 0);
  CHECK(read_file(csv).find(
            // The error starts with '-', so it gets a quote against spreadsheet formulas.
            "\n0,2,,,,,,,,,,,,,,,,,,,,,,\"'--vary pipeline.gradient_accumulation_count=2: at "
            "/pipeline/gradient_accumulation_count: The number of iterations of the pipeline "
            "must be a multiple of 4, but it is 2. This number is gradient_accumulation_count; the "
            "grouped schedule with 2 stages runs 4 micro-batches at once (set "
            "pipeline.relaxed_divisibility to explore it anyway)\"\n1,4,") != std::string::npos);
  CHECK(result.out ==
        "ipusim sweep: configs/tf1_mnist_2ipu.json, 2 runs\n"
        "2 simulated, 0 already in " +
            csv +
            "; 1 invalid (see the error column), 0 out of memory\n"
            "fastest: pipeline.gradient_accumulation_count=4: 222,243 samples/s, step 766,010 "
            "cycles (0.5759 ms), ramp overhead 10.0%\n"
            "wrote " +
            csv + " (one row per run, sorted by run)\n");
}

TEST_CASE("a sweep none of whose runs is valid writes its rows and fails with the first error") {
  const auto csv = fresh_output("sweep_test", "none_valid.csv");
  const auto result =
      run_ipusim({"sweep", kTf1Config, "--vary", "pipeline.gradient_accumulation_count=2,6", "-o",
                  csv, "--quiet"});
  CHECK(result.code == 2);
  CHECK(result.out.empty());
  CHECK(result.err ==
        "error: " + csv +
            ": none of the sweep's 2 run(s) is valid; run 0: --vary "
            "pipeline.gradient_accumulation_count=2: at /pipeline/gradient_accumulation_count: The "
            "number of iterations of the pipeline must be a multiple of 4, but it is 2. This "
            "number is gradient_accumulation_count; the grouped schedule with 2 stages runs 4 "
            "micro-batches at once (set pipeline.relaxed_divisibility to explore it anyway)\n");
  CHECK(sim::read_sweep_csv(csv).table.rows.size() == 2);
}

TEST_CASE("a run out of memory is a row with fits_in_memory false") {
  const auto csv = fresh_output("sweep_test", "oom.csv");
  REQUIRE(run_ipusim({"sweep", "configs/bert_large_4ipu.json", "--vary",
                      "pipeline.recomputation_mode=none,auto", "--set",
                      "pipeline.recompute_checkpoint_every_layer=false", "-o", csv, "--quiet"})
              .code == 0);
  const auto table = sim::read_sweep_csv(csv).table;
  REQUIRE(table.rows.size() == 2);
  CHECK(cell(table, 0, "fits_in_memory") == "false");
  // Stage 1's 6 + 1 entries of 8 samples x 7 encoders x (16·s·h + 2·a·s²) x 2 bytes + 7 x 3
  // seeds.
  CHECK(cell(table, 0, "peak_stash_bytes_max") ==
        std::to_string(7LL * (8 * 7 * (16 * 128 * 1024 + 2 * 16 * 128 * 128) * 2 + 7 * 24)));
  CHECK(cell(table, 0, "error").empty());
  CHECK(cell(table, 1, "fits_in_memory") == "true");
}

TEST_CASE("a misspelt --vary path is refused before anything runs, with a suggestion") {
  const auto csv = fresh_output("sweep_test", "misspelt.csv");
  const auto result = run_ipusim(
      {"sweep", kTf1Config, "--vary", "pipeline.gradient_acumulation_count=8,16", "-o", csv});
  CHECK(result.code == 2);
  CHECK(result.err ==
        "error: --vary pipeline.gradient_acumulation_count=8,16: at "
        "/pipeline/gradient_acumulation_count: unknown key 'gradient_acumulation_count'; did you "
        "mean 'gradient_accumulation_count'?\n");
  CHECK_FALSE(std::filesystem::exists(csv));
}

TEST_CASE("a rerun skips the runs already written and drops a trailing partial line") {
  const auto full = fresh_output("sweep_test", "resume-full.csv");
  const auto cut = fresh_output("sweep_test", "resume-cut.csv");
  REQUIRE(run_ipusim(gac_sweep(full)).code == 0);
  const auto text = read_file(full);
  const auto fifth_row = text.find("\n5,");
  std::ofstream(cut, std::ios::binary) << text.substr(0, fifth_row + 8);  // row 5 cut short
  auto args = gac_sweep(cut);
  args.pop_back();  // not quiet
  const auto result = run_ipusim(args);
  CHECK(result.code == 0);
  CHECK(result.out.find("\n19 simulated, 5 already in " + cut + ";") != std::string::npos);
  CHECK(read_file(cut) == text);
}

TEST_CASE("a sweep killed halfway and rerun ends with exactly one row per run") {
  const int runs = 2000;
  const auto reference = fresh_output("sweep_test", "kill-reference.csv");
  const auto killed = fresh_output("sweep_test", "kill.csv");
  const std::vector<std::string> sweep = {
      "sweep",  kTf1Config, "--gac", "1024", "--vary", "pipeline.repeat_count=" + counts(runs),
      "--quiet"};
  auto args = sweep;
  args.insert(args.end(), {"-o", killed, "--jobs", "1"});
  const pid_t child = spawn_ipusim(args, fresh_output("sweep_test", "kill.err"));
  int status = 0;
  while (line_count(killed) < runs / 2 + 1) {
    REQUIRE(::waitpid(child, &status, WNOHANG) == 0);  // still running
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, &status, 0);
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(line_count(killed) < runs + 1);  // killed before the end

  auto rerun = sweep;
  rerun.insert(rerun.end(), {"-o", killed});
  REQUIRE(run_ipusim(rerun).code == 0);
  auto whole = sweep;
  whole.insert(whole.end(), {"-o", reference});
  REQUIRE(run_ipusim(whole).code == 0);
  const auto table = sim::read_sweep_csv(killed).table;
  REQUIRE(table.rows.size() == runs);
  for (std::size_t r = 0; r < table.rows.size(); ++r)
    REQUIRE(sim::run_index(table.rows[r]) == r);
  CHECK(read_file(killed) == read_file(reference));
}

TEST_CASE("two shards merged equal the unsharded sweep byte for byte") {
  const auto whole = fresh_output("sweep_test", "shard-whole.csv");
  const auto first = fresh_output("sweep_test", "shard-1.csv");
  const auto second = fresh_output("sweep_test", "shard-2.csv");
  const auto merged = fresh_output("sweep_test", "shard-merged.csv");
  REQUIRE(run_ipusim(gac_sweep(whole)).code == 0);
  auto shard = [&](const std::string& csv, const std::string& which) {
    auto args = gac_sweep(csv);
    args.insert(args.end(), {"--shard", which});
    REQUIRE(run_ipusim(args).code == 0);
  };
  shard(first, "1/2");
  shard(second, "2/2");
  CHECK(line_count(first) == 13);
  const auto result = run_ipusim({"merge", "-o", merged, second, first});
  CHECK(result.code == 0);
  CHECK(result.out == "merged 2 file(s): 24 runs into " + merged + "\n");
  CHECK(result.err.empty());
  CHECK(read_file(merged) == read_file(whole));
}

TEST_CASE("merging one shard alone warns about the runs it lacks") {
  const auto first = fresh_output("sweep_test", "lone-1.csv");
  const auto merged = fresh_output("sweep_test", "lone-merged.csv");
  auto args = gac_sweep(first);
  args.insert(args.end(), {"--shard", "1/8"});
  REQUIRE(run_ipusim(args).code == 0);
  const auto result = run_ipusim({"merge", "-o", merged, first});
  CHECK(result.code == 0);
  CHECK(result.err ==
        "warning: 14 run(s) missing below the last one present (a shard not merged, or not "
        "finished): 1 2 3 4 5 6 7 9 10 11 ...\n");
}

TEST_CASE("a finished sweep is byte-identical from one run to the next, whatever the jobs") {
  const auto one = fresh_output("sweep_test", "jobs-1.csv");
  const auto two = fresh_output("sweep_test", "jobs-2.csv");
  auto args = gac_sweep(one);
  args.insert(args.end(), {"--jobs", "1"});
  REQUIRE(run_ipusim(args).code == 0);
  args = gac_sweep(two);
  args.insert(args.end(), {"--jobs", "2"});
  REQUIRE(run_ipusim(args).code == 0);
  CHECK(read_file(one) == read_file(two));
}

TEST_CASE("a sweep into the file of another sweep is refused") {
  const auto csv = fresh_output("sweep_test", "other.csv");
  REQUIRE(run_ipusim(gac_sweep(csv)).code == 0);
  const auto result = run_ipusim(
      {"sweep", kTf1Config, "--vary", "pipeline.gradient_accumulation_count=8,16", "-o", csv});
  CHECK(result.code == 2);
  CHECK(result.err == "error: " + csv +
                          ": the file holds another sweep (its columns differ from this "
                          "sweep's); write to another file or delete it\n");
  const auto reordered = run_ipusim({"sweep", kTf1Config, "--vary",
                                     "pipeline.gradient_accumulation_count=8,4,16,32,64,128",
                                     "--vary", kSchedules, "-o", csv});
  CHECK(reordered.code == 2);
  CHECK(reordered.err ==
        "error: " + csv +
            ": run 0 has other values than this sweep's run 0 "
            "(pipeline.gradient_accumulation_count=8 pipeline.pipeline_schedule=grouped); write "
            "to another file or delete it\n");
}

TEST_CASE("sweep and merge have help with an example") {
  for (const char* command : {"sweep", "merge"}) {
    const auto help = run_ipusim({command, "--help"});
    CHECK(help.code == 0);
    CHECK(help.out.find("Example:\n  ipusim " + std::string(command)) != std::string::npos);
  }
}

TEST_CASE("sweep --html plots ramp overhead and throughput against each varied value") {
  const auto csv = fresh_output("sweep_test", "plots.csv");
  const auto html = fresh_output("sweep_test", "plots.html");
  auto args = gac_sweep(csv);
  args.insert(args.end(), {"--html", html});
  REQUIRE(run_ipusim(args).code == 0);
  const auto page = read_file(html);
  for (const char* title : {"Ramp overhead against pipeline.gradient_accumulation_count",
                            "Throughput against pipeline.gradient_accumulation_count"})
    CHECK(page.find(title) != std::string::npos);
  for (const char* schedule : {"grouped", "interleaved", "sequential", "1f1b"})
    CHECK(page.find(">" + std::string(schedule) + "<") != std::string::npos);
}

TEST_CASE("a sweep into a CSV that another sweep is writing fails at once and leaves it alone") {
  const auto csv = fresh_output("sweep_test", "locked.csv");
  REQUIRE(run_ipusim(gac_sweep(csv)).code == 0);
  const auto before = read_file(csv);
  {
    const HeldLock other_sweep(csv);
    const auto result = run_ipusim(gac_sweep(csv));
    CHECK(result.code == 2);
    CHECK(result.out.empty());
    CHECK(result.err == busy_error(csv));
    CHECK(read_file(csv) == before);
  }
  CHECK(run_ipusim(gac_sweep(csv)).code == 0);  // free again once the other sweep is done
  CHECK(read_file(csv) == before);
}

TEST_CASE("two sweeps started at once into one CSV never lose a row") {
  const int runs = 200;
  const auto csv = fresh_output("sweep_test", "twice.csv");
  const std::vector<std::string> sweep = {
      "sweep",  kTf1Config, "--gac",   "1024", "--vary", "pipeline.repeat_count=" + counts(runs),
      "--jobs", "1",        "--quiet", "-o",   csv};
  const std::string errors[] = {fresh_output("sweep_test", "twice-1.err"),
                                fresh_output("sweep_test", "twice-2.err")};
  const pid_t first = spawn_ipusim(sweep, errors[0]);
  const pid_t second = spawn_ipusim(sweep, errors[1]);
  const int codes[] = {exit_code(first), exit_code(second)};
  for (int i = 0; i < 2; ++i) {
    INFO("sweep " << i + 1);
    CHECK((codes[i] == 0 || codes[i] == 2));
    CHECK(read_file(errors[i]) == (codes[i] == 0 ? "" : busy_error(csv)));
  }
  CHECK((codes[0] == 0 || codes[1] == 0));
  const auto table = sim::read_sweep_csv(csv).table;
  REQUIRE(table.rows.size() == runs);
  for (std::size_t r = 0; r < table.rows.size(); ++r)
    REQUIRE(sim::run_index(table.rows[r]) == r);
}

TEST_CASE("a sweep too large for one file is refused before it starts") {
  // 1,000 x 1,000 x 11 = 11,000,000 runs: more than the 10,000,000 one CSV holds.
  const std::string csv = fresh_output("sweep_test", "too_large.csv");
  const auto result =
      run_ipusim({"sweep", kTf1Config, "--vary", "pipeline.seed=" + counts(1000), "--vary",
                  "pipeline.repeat_count=" + counts(1000), "--vary",
                  "pipeline.gradient_accumulation_count=" + counts(11), "-o", csv, "--quiet"});
  CHECK(result.code == 2);
  CHECK(result.err == "error: " + csv +
                          ": one sweep file holds at most 10,000,000 runs, and this one would "
                          "get 11,000,000; split the sweep with --shard i/n and join the files "
                          "with merge\n");
  CHECK_FALSE(std::filesystem::exists(csv));
  // Without -o the CSV would be a private scratch file: the error names the options instead.
  const auto scratch =
      run_ipusim({"sweep", kTf1Config, "--vary", "pipeline.seed=" + counts(1000), "--vary",
                  "pipeline.repeat_count=" + counts(1000), "--vary",
                  "pipeline.gradient_accumulation_count=" + counts(11), "--quiet"});
  CHECK(scratch.code == 2);
  CHECK(scratch.err ==
        "error: --vary: one sweep file holds at most 10,000,000 runs, and this one would get "
        "11,000,000; split the sweep with --shard i/n and join the files with merge\n");
}

TEST_CASE("a sweep over IPU counts has per-IPU columns for the most, left empty beyond a run's") {
  const auto csv = fresh_output("sweep_test", "ipu_counts.csv");
  REQUIRE(run_ipusim({"sweep", kTf1Config, "--vary",
                      R"(pipeline.splits=["dense32"],["dense128","dense32"])", "--set",
                      "hardware.ipus=4", "--gac", "24", "-o", csv, "--jobs", "1"})
              .code == 0);
  const auto table = sim::read_sweep_csv(csv).table;
  REQUIRE(table.rows.size() == 2);
  CHECK(table.column("utilisation_ipu2").has_value());
  CHECK_FALSE(table.column("utilisation_ipu3").has_value());
  CHECK(cell(table, 0, "utilisation_ipu2").empty());
  CHECK(cell(table, 0, "peak_memory_bytes_ipu2").empty());
  CHECK_FALSE(cell(table, 1, "utilisation_ipu2").empty());
  // A rerun reads the file back, per-IPU cells and all, and has nothing left to do.
  const auto again = run_ipusim({"sweep", kTf1Config, "--vary",
                                 R"(pipeline.splits=["dense32"],["dense128","dense32"])", "--set",
                                 "hardware.ipus=4", "--gac", "24", "-o", csv, "--jobs", "1"});
  CHECK(again.code == 0);
  CHECK(again.out.find("0 simulated, 2 already in") != std::string::npos);
}

TEST_CASE("a sweep with --json-lines and no -o names no file it did not keep") {
  const auto result =
      run_ipusim({"sweep", kTf1Config, "--vary", "pipeline.gradient_accumulation_count=4,8",
                  "--jobs", "1", "--json-lines"});
  CHECK(result.code == 0);
  CHECK(std::count(result.out.begin(), result.out.end(), '\n') == 2);
  CHECK(result.err.find("2 simulated, 0 invalid") != std::string::npos);
  CHECK(result.err.ends_with("\nstreamed the runs on the output as JSON lines\n"));
  CHECK(result.err.find("sweep.csv") == std::string::npos);
}

TEST_CASE(
    "a sweep with --json-lines streams each run as JSON with the CSV figures, alike on a rerun") {
  const auto csv = fresh_output("sweep_test", "lines.csv");
  const std::vector<std::string> args = {
      "sweep",  kTf1Config, "--vary",      "pipeline.gradient_accumulation_count=2,4,8", "-o", csv,
      "--jobs", "1",        "--json-lines"};
  const auto first = run_ipusim(args);
  REQUIRE(first.code == 0);
  CHECK(first.err.find("ipusim sweep: configs/tf1_mnist_2ipu.json, 3 runs\n") == 0);
  std::istringstream lines(first.out);
  const auto table = sim::read_sweep_csv(csv).table;
  std::string line;
  std::size_t row = 0;
  while (std::getline(lines, line)) {
    const auto run = nlohmann::json::parse(line);
    REQUIRE(row < table.rows.size());
    CHECK(run.at("run") == row);
    CHECK(run.at("pipeline.gradient_accumulation_count") ==
          std::stoi(cell(table, row, "pipeline.gradient_accumulation_count")));
    if (row == 0) {
      CHECK(run.at("error").get<std::string>() == cell(table, 0, "error"));
      CHECK_FALSE(run.contains("step_cycles"));
    } else {
      CHECK(run.at("error").is_null());
      for (const auto& column : sim::metric_columns()) {
        const auto text = cell(table, row, column);
        CHECK(run.at(column) == nlohmann::json::parse(text));
      }
      CHECK(run.at("utilisation_per_ipu") ==
            nlohmann::json::array({std::stod(cell(table, row, "utilisation_ipu0")),
                                   std::stod(cell(table, row, "utilisation_ipu1"))}));
    }
    ++row;
  }
  CHECK(row == 3);
  // A rerun has nothing to simulate and streams the runs from the file: the same bytes.
  const auto again = run_ipusim(args);
  CHECK(again.code == 0);
  CHECK(again.out == first.out);
}

TEST_CASE("per-IPU throughput falls as ResNet-50 replicas grow, and the collectives say why") {
  const auto csv = fresh_output("sweep_test", "resnet_replicas.csv");
  // With samples ready in memory, so that the collectives alone set what changes with the
  // replicas, whatever the hosts' decoding (5,213 samples a second an instance of 2 replicas).
  REQUIRE(run_ipusim({"sweep", "configs/mlperf/resnet50_v2.0_pod16.json", "--vary",
                      "pipeline.replication_factor=1,2,4,8,16", "--set", "data.host_decode=false",
                      "-o", csv, "--quiet"})
              .code == 0);
  const auto table = sim::read_sweep_csv(csv).table;
  REQUIRE(table.rows.size() == 5);
  CHECK(cell(table, 0, "collective_cycles") == "0");  // one replica reduces nothing
  for (std::size_t r = 1; r < table.rows.size(); ++r) {
    INFO(cell(table, r, "pipeline.replication_factor"));
    CHECK(std::stod(cell(table, r, "throughput_per_ipu")) <
          std::stod(cell(table, r - 1, "throughput_per_ipu")));
    CHECK(std::stoll(cell(table, r, "collective_cycles")) >
          std::stoll(cell(table, r - 1, "collective_cycles")));
    // The IPUs' own compute is the same in every run: what grows is the weight update.
    CHECK(cell(table, r, "main_cycles") == cell(table, 0, "main_cycles"));
    CHECK(cell(table, r, "input_wait_cycles") == "0");
  }
}

TEST_CASE("without -o a sweep prints its CSV on the output, the summary on the error stream") {
  const auto with_file = fresh_output("sweep_test", "printed.csv");
  REQUIRE(run_ipusim({"sweep", kTf1Config, "--vary", "pipeline.gradient_accumulation_count=2,4",
                      "-o", with_file, "--jobs", "1", "--quiet"})
              .code == 0);
  const auto result = run_ipusim(
      {"sweep", kTf1Config, "--vary", "pipeline.gradient_accumulation_count=2,4", "--jobs", "1"});
  CHECK(result.code == 0);
  // The same bytes as the file a sweep with -o keeps.
  CHECK(result.out == read_file(with_file));
  CHECK(result.err ==
        "ipusim sweep: configs/tf1_mnist_2ipu.json, 2 runs\n"
        "2 simulated, 1 invalid (see the error column), 0 out of memory\n"
        "fastest: pipeline.gradient_accumulation_count=4: 222,243 samples/s, step 766,010 "
        "cycles (0.5759 ms), ramp overhead 10.0%\n"
        "printed the CSV on the output (one row per run, sorted by run)\n");
}
