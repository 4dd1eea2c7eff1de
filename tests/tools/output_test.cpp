// Every command checks its output paths before it simulates, writes only regular files it
// created, and leaves nothing half done when one output cannot be written.

#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/scratch_folder.hpp"
#include "tests/sim/core/file_size_limit.hpp"
#include "tests/tools/cli_support.hpp"

namespace {

namespace fs = std::filesystem;
using namespace ipusim::testing;

const std::string kAdvice = "; give the path of a regular file or of a new one\n";

// An empty folder of the test's own.
fs::path fresh_folder(const std::string& name) {
  const fs::path dir = scratch_folder("output_test") / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Runs the ipusim program with its output on `out_path` (closed when empty) and returns its
// exit code and error stream.
CliResult run_program_writing_to(const std::vector<std::string>& args,
                                 const std::string& out_path) {
  const fs::path dir = fresh_folder("program");
  const std::string binary = IPUSIM_BINARY_DIR "/tools/ipusim/ipusim";
  std::vector<std::string> argv_text = {binary};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& arg : argv_text)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (out_path.empty())
    posix_spawn_file_actions_addclose(&actions, STDOUT_FILENO);
  else
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(), O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, (dir / "err.txt").c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t child = 0;
  const int started = posix_spawn(&child, binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(started == 0);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  return {WEXITSTATUS(status), "", read_file(dir / "err.txt")};
}

}  // namespace

TEST_CASE("a command whose output cannot be written to a full disk fails and says so") {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"run", kBaseConfig, "--no-numeric"},
                                             {"schedule", kBaseConfig, "--format", "json"},
                                             {"validate", kBaseConfig}}) {
    const CliResult result = run_program_writing_to(args, "/dev/full");
    CHECK(result.code == 2);
    CHECK(result.err == "error: cannot write the standard output: No space left on device\n");
  }
}

TEST_CASE("a sweep printing its CSV on a closed output fails and does not claim it printed") {
  const CliResult result = run_program_writing_to(
      {"sweep", kBaseConfig, "--vary", "pipeline.gradient_accumulation_count=4,8", "--jobs", "1"},
      "");
  CHECK(result.code == 2);
  CHECK(result.err == "error: cannot write the standard output: Bad file descriptor\n");
}

TEST_CASE("a sweep printing its CSV on a full disk fails and does not claim it printed") {
  const CliResult result = run_program_writing_to(
      {"sweep", kBaseConfig, "--vary", "pipeline.gradient_accumulation_count=4,8", "--jobs", "1"},
      "/dev/full");
  CHECK(result.code == 2);
  CHECK(result.err == "error: cannot write the standard output: No space left on device\n");
}

TEST_CASE("run --json /dev/null is refused before simulating and /dev/null stays a device") {
  const auto result = run_ipusim({"run", kTf1Config, "--json", "/dev/null"});
  CHECK(result.code == 2);
  CHECK(result.out.empty());
  CHECK(result.err ==
        "error: /dev/null: cannot write the --json output: it is a character device" + kAdvice);
  CHECK(fs::is_character_file("/dev/null"));
}

TEST_CASE("run refuses a FIFO and a symbolic link as outputs and writes nothing") {
  const auto dir = fresh_folder("fifo_and_link");
  const auto fifo = (dir / "pipe.json").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  auto result = run_ipusim({"run", kTf1Config, "--trace", fifo});
  CHECK(result.code == 2);
  CHECK(result.out.empty());
  CHECK(result.err == "error: " + fifo +
                          ": cannot write the --trace output: it is a FIFO (named pipe)" + kAdvice);
  CHECK(fs::is_fifo(fifo));

  std::ofstream(dir / "target.json") << "kept\n";
  fs::create_symlink("target.json", dir / "link.json");
  const auto link = (dir / "link.json").string();
  result = run_ipusim({"run", kTf1Config, "--json", link});
  CHECK(result.code == 2);
  CHECK(result.err ==
        "error: " + link + ": cannot write the --json output: it is a symbolic link" + kAdvice);
  CHECK(fs::is_symlink(link));
  CHECK(read_file(dir / "target.json") == "kept\n");
  CHECK(entries(dir) == std::vector<std::string>{"link.json", "pipe.json", "target.json"});
}

TEST_CASE("run with a directory as an output leaves no partial file") {
  const auto dir = fresh_folder("directory");
  fs::create_directory(dir / "report.html");
  const auto html = (dir / "report.html").string();
  const auto result = run_ipusim({"run", kTf1Config, "--html", html});
  CHECK(result.code == 2);
  CHECK(result.err ==
        "error: " + html + ": cannot write the --html output: it is a directory" + kAdvice);
  CHECK(entries(dir) == std::vector<std::string>{"report.html"});
}

// The run would stop out of memory (exit code 3) if it were simulated before the outputs were
// checked.
TEST_CASE("a missing folder for the second output of run is reported before simulating") {
  const auto dir = fresh_folder("missing_folder");
  const auto json = (dir / "report.json").string();
  const auto html = (dir / "missing" / "report.html").string();
  const auto result =
      run_ipusim({"run", "configs/bert_large_4ipu.json", "--set",
                  "pipeline.recomputation_mode=none", "--json", json, "--html", html});
  CHECK(result.code == 2);
  CHECK(result.out.empty());
  CHECK(result.err == "error: " + html + ": cannot write the --html output: the folder " +
                          (dir / "missing").string() + " does not exist\n");
  CHECK(entries(dir).empty());
}

TEST_CASE("two outputs of run naming one file are refused") {
  const auto dir = fresh_folder("same_file");
  const auto json = (dir / "run.json").string();
  const auto trace = (dir / "." / "run.json").string();
  const auto result = run_ipusim({"run", kTf1Config, "--json", json, "--trace", trace});
  CHECK(result.code == 2);
  CHECK(result.err == "error: " + trace +
                          ": cannot write the --trace output: the --json output is the same "
                          "file; give each output its own path\n");
  CHECK(entries(dir).empty());
}

TEST_CASE("when one output of run cannot be written the others are not written either") {
  const auto dir = fresh_folder("write_fails");
  const auto json = (dir / "report.json").string();  // about 11 kB
  const auto html = (dir / "report.html").string();  // about 64 kB
  ipusim::testing::CliResult result;
  {
    const ipusim::testing::FileSizeLimit limit(20000);
    result = run_ipusim({"run", kTf1Config, "--no-numeric", "--json", json, "--html", html});
  }
  CHECK(result.code == 2);
  CHECK(result.out.empty());
  CHECK(result.err == "error: " + html + ": cannot write the --html output: File too large\n");
  CHECK(entries(dir).empty());
}

TEST_CASE("a trace that fills the disk while it streams fails, names it and leaves nothing") {
  const auto dir = fresh_folder("trace_full");
  const auto trace = (dir / "t.json").string();  // about 7 MB at 20,000 micro-batches
  ipusim::testing::CliResult result;
  {
    const ipusim::testing::FileSizeLimit limit(1'000'000);
    result = run_ipusim({"run", kTf1Config, "--no-numeric", "--gac", "20000", "--schedule", "1f1b",
                         "--trace", trace});
  }
  CHECK(result.code == 2);
  CHECK(result.out.empty());
  CHECK(result.err == "error: " + trace + ": cannot write the --trace output: File too large\n");
  CHECK(entries(dir).empty());
}

TEST_CASE("run --trace writes protobuf for a .pftrace name or --trace-format proto") {
  const auto dir = fresh_folder("trace_formats");
  const auto proto = (dir / "run.pftrace").string();
  const auto named_json = (dir / "run.json").string();
  CHECK(run_ipusim({"run", kTf1Config, "--no-numeric", "--quiet", "--trace", proto}).code == 0);
  CHECK(run_ipusim({"run", kTf1Config, "--no-numeric", "--quiet", "--trace", named_json,
                    "--trace-format", "proto"})
            .code == 0);
  const std::string bytes = read_file(proto);
  REQUIRE(bytes.size() > 1000);
  CHECK(bytes[0] == '\x0a');  // Trace.packet, field 1, length-delimited
  CHECK(read_file(named_json) == bytes);
  const auto refused =
      run_ipusim({"run", kTf1Config, "--trace", named_json, "--trace-format", "jsn"});
  CHECK(refused.code != 0);
  CHECK(refused.err ==
        "error: --trace-format: unknown trace format 'jsn'; did you mean 'json'? (json or "
        "proto)\n");
}

TEST_CASE("run writes every output it was given and no temporary file") {
  const auto dir = fresh_folder("all_written");
  const auto result =
      run_ipusim({"run", kTf1Config, "--no-numeric", "--quiet", "--json", (dir / "a.json").string(),
                  "--trace", (dir / "b.json").string(), "--html", (dir / "c.html").string()});
  CHECK(result.code == 0);
  CHECK(entries(dir) == std::vector<std::string>{"a.json", "b.json", "c.html"});
}

TEST_CASE("compare checks its outputs before simulating") {
  const auto dir = fresh_folder("compare");
  const auto json = (dir / "runs.json").string();
  const auto result = run_ipusim({"compare", kTf1Config, "--schedules", "grouped,interleaved",
                                  "--json", json, "--csv", "/dev/full"});
  CHECK(result.code == 2);
  CHECK(result.out.empty());
  CHECK(result.err ==
        "error: /dev/full: cannot write the --csv output: it is a character device" + kAdvice);
  CHECK(entries(dir).empty());
}

TEST_CASE("sweep checks its HTML output before it writes the CSV") {
  const auto dir = fresh_folder("sweep");
  const auto csv = (dir / "gac.csv").string();
  const auto html = (dir / "plots").string();
  fs::create_directory(html);
  const auto result =
      run_ipusim({"sweep", kTf1Config, "--vary", "pipeline.gradient_accumulation_count=8,16", "-o",
                  csv, "--html", html});
  CHECK(result.code == 2);
  CHECK(result.out.empty());
  CHECK(result.err ==
        "error: " + html + ": cannot write the --html output: it is a directory" + kAdvice);
  CHECK(entries(dir) == std::vector<std::string>{"plots"});
}

TEST_CASE("merge refuses a device as its output") {
  const auto result = run_ipusim({"merge", "-o", "/dev/null", "no-such-shard.csv"});
  CHECK(result.code == 2);
  CHECK(result.err ==
        "error: /dev/null: cannot write the -o output: it is a character device" + kAdvice);
}

// The copy of the small config each test below may lose if the refusal fails.
std::string config_copy(const fs::path& dir) {
  const auto config = (dir / "base.json").string();
  fs::copy_file(kBaseConfig, config);
  return config;
}

std::string refused_input(const std::string& path, const std::string& option,
                          const std::string& role) {
  return "error: " + path + ": cannot write the " + option + " output: it is " + role +
         "; choose another file\n";
}

TEST_CASE("run, plan and sweep refuse to write over the config they read") {
  const auto dir = fresh_folder("config_as_output");
  const auto config = config_copy(dir);
  const auto text = read_file(config);
  const std::vector<std::vector<std::string>> commands = {
      {"run", config, "--json", config},
      {"plan", config, "--quiet", "-o", config},
      {"sweep", config, "--vary", "pipeline.gradient_accumulation_count=4,8", "-o", config}};
  const char* options[] = {"--json", "-o", "-o"};
  for (std::size_t i = 0; i < commands.size(); ++i) {
    const auto result = run_ipusim(commands[i]);
    CHECK(result.code == 2);
    CHECK(result.out.empty());
    CHECK(result.err == refused_input(config, options[i], "the config this command reads"));
  }
  CHECK(read_file(config) == text);
  CHECK(entries(dir) == std::vector<std::string>{"base.json"});
}

TEST_CASE("run refuses to write over a file its config includes, however it is spelt") {
  const auto dir = fresh_folder("include_as_output");
  config_copy(dir);
  const auto config = (dir / "top.json").string();
  write_file(config, "{\"include\": \"base.json\"}\n");
  const auto include = (dir / "." / "base.json").string();
  const auto result = run_ipusim({"run", config, "--trace", include});
  CHECK(result.code == 2);
  CHECK(result.err == refused_input(include, "--trace", "a file the config includes"));
  CHECK(read_file(include) == read_file(kBaseConfig));
}

TEST_CASE("import, merge, compare and calibrate refuse to write over a file they read") {
  const auto dir = fresh_folder("input_as_output");
  const auto model = (dir / "model.json").string();
  fs::copy_file("tests/models/keras/keras_cnn.json", model);
  auto result = run_ipusim({"import", model, "-o", model});
  CHECK(result.code == 2);
  CHECK(result.err == refused_input(model, "-o", "the model file this command reads"));
  CHECK(read_file(model) == read_file("tests/models/keras/keras_cnn.json"));

  const auto shard = (dir / "shard.csv").string();
  write_file(shard, "run\n");
  result = run_ipusim({"merge", "-o", shard, shard});
  CHECK(result.code == 2);
  CHECK(result.err == refused_input(shard, "-o", "one of the files this command merges"));
  CHECK(read_file(shard) == "run\n");

  const auto config = config_copy(dir);
  result = run_ipusim({"compare", kTf1Config, config, "--csv", config});
  CHECK(result.code == 2);
  CHECK(result.err == refused_input(config, "--csv", "a config this command reads"));

  const auto measured = (dir / "measured.csv").string();
  write_file(measured, "stage,cycles\n");
  result = run_ipusim({"calibrate", config, "--measured", measured, "-o", measured});
  CHECK(result.code == 2);
  CHECK(result.err == refused_input(measured, "-o", "the --measured file this command reads"));
  CHECK(read_file(measured) == "stage,cycles\n");
}

TEST_CASE("compare and calibrate refuse to write over a config included or named in a file") {
  const auto dir = fresh_folder("named_input_as_output");
  const auto base = config_copy(dir);
  const auto top = (dir / "top.json").string();
  write_file(top, "{\"include\": \"base.json\"}\n");
  auto result = run_ipusim({"compare", kTf1Config, top, "--json", base});
  CHECK(result.code == 2);
  CHECK(result.err == refused_input(base, "--json", "a file the config includes"));

  const auto measured = (dir / "measured.csv").string();
  write_file(measured,
             "config,set,stage,forward_cycles,backward_cycles,step_cycles\nbase.json,,,,,1000\n");
  result = run_ipusim({"calibrate", kBaseConfig, "--measured", measured, "-o", base});
  CHECK(result.code == 2);
  CHECK(result.err == refused_input(base, "-o", "a config the --measured file names"));
  CHECK(read_file(base) == read_file(kBaseConfig));
}

TEST_CASE("run and train refuse to write over the Fashion-MNIST files they read") {
  // Placeholders: the refusal comes before any data is read.
  const auto dir = fresh_folder("data_as_output");
  const auto images = (dir / "train-images-idx3-ubyte.gz").string();
  const auto labels = (dir / "t10k-labels-idx1-ubyte.gz").string();
  write_file(images, "images\n");
  write_file(labels, "labels\n");
  const std::string path = "data.path=\"" + dir.string() + "\"";
  auto result = run_ipusim({"run", kTf1Config, "--numeric", "--set", path, "--json", images});
  CHECK(result.code == 2);
  CHECK(result.err == refused_input(images, "--json", "a Fashion-MNIST file this command reads"));
  result = run_ipusim({"run", kTf1Config, "--no-numeric", "--set", path, "--trace", labels});
  CHECK(result.code == 2);
  CHECK(result.err == refused_input(labels, "--trace", "a Fashion-MNIST file this command reads"));
  CHECK(read_file(images) == "images\n");
  CHECK(read_file(labels) == "labels\n");
}

TEST_CASE("run and train refuse to write over the initial weights their config names") {
  const auto dir = fresh_folder("weights_as_output");
  const auto weights = dir / "weights";
  auto result = run_ipusim({"train", kTf1Config, "--steps", "1", "--test-samples", "0", "--set",
                            "data.source=\"synthetic\"", "--save", weights.string()});
  REQUIRE(result.code == 0);
  std::string initial;
  for (const auto& entry : fs::directory_iterator(weights)) {
    if (entry.path().string().ends_with(".initial.npy"))
      initial = entry.path().string();
  }
  REQUIRE(!initial.empty());
  const auto before = read_file(initial);
  const std::string named = "model.initial_weights=\"" + weights.string() + "\"";
  const std::string role = "a file of the config's initial_weights this command reads";
  result = run_ipusim({"run", kTf1Config, "--set", named, "--html", initial});
  CHECK(result.code == 2);
  CHECK(result.err == refused_input(initial, "--html", role));
  result = run_ipusim({"train", kTf1Config, "--steps", "1", "--set", named, "--set",
                       "data.source=\"synthetic\"", "--save", weights.string()});
  CHECK(result.code == 2);
  CHECK(result.err == refused_input(initial, "--save", role));
  CHECK(read_file(initial) == before);
}

TEST_CASE("run replacing a private report keeps it private") {
  const auto dir = fresh_folder("private");
  const auto json = (dir / "report.json").string();
  write_file(json, "old\n");
  REQUIRE(::chmod(json.c_str(), 0600) == 0);
  const auto result = run_ipusim({"run", kBaseConfig, "--quiet", "--json", json});
  CHECK(result.code == 0);
  CHECK(read_file(json) != "old\n");
  struct stat info {};
  REQUIRE(::stat(json.c_str(), &info) == 0);
  CHECK((info.st_mode & 07777) == 0600);
}

TEST_CASE("a sweep without -o names a TMPDIR that is not a folder and keeps nothing") {
  const auto dir = fresh_folder("tmpdir");
  const auto file = (dir / "a_file").string();
  write_file(file, "x\n");
  for (const std::string& tmpdir : {(dir / "missing").string(), file}) {
    ::setenv("TMPDIR", tmpdir.c_str(), 1);
    const auto result =
        run_ipusim({"sweep", kTf1Config, "--vary", "pipeline.gradient_accumulation_count=4,8"});
    ::unsetenv("TMPDIR");
    CHECK(result.code == 2);
    CHECK(result.out.empty());
    CHECK(result.err == "error: -o: a sweep without -o keeps its CSV in a temporary folder, but " +
                            tmpdir + " (TMPDIR) is not a folder; set TMPDIR to one, or give -o\n");
  }
  CHECK(entries(dir) == std::vector<std::string>{"a_file"});
}

// A sanitized ipusim reserves terabytes of address space at start, so a limit on it would stop
// the program before the command: the case runs in the plain build only.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IPUSIM_TEST_ADDRESS_SANITIZER 1
#endif
#endif
#if !defined(__SANITIZE_ADDRESS__) && !defined(IPUSIM_TEST_ADDRESS_SANITIZER)
TEST_CASE("a command that runs out of the machine's memory says so with exit code 3") {
  // The numeric replay's tensors at micro-batch 10,000,000 (a 784 x 10^7 input alone is 31 GB)
  // are more than 200 MB of address space holds. (A plan of 96,000 settings no longer is: its
  // memory stays flat in the settings.)
  const auto dir = fresh_folder("host_memory");
  const std::string command =
      "ulimit -v 200000; exec " IPUSIM_BINARY_DIR "/tools/ipusim/ipusim run " + kTf1Config +
      " --micro-batch 10000000 --numeric > /dev/null 2> " + (dir / "err.txt").string();
  const int status = std::system(("/bin/sh -c '" + command + "'").c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 3);
  CHECK(read_file(dir / "err.txt") ==
        "error: ipusim run " + kTf1Config +
            " ran out of this machine's memory: what it was asked to build (the model's tensors, "
            "the schedule's tasks, the search's settings, or an output held whole) is larger "
            "than the memory free here; ask for less (a smaller model or micro-batch, fewer "
            "micro-batches or settings) or run where more memory is free\n");
}
#endif
