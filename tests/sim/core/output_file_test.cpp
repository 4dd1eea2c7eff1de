#include "sim/core/output_file.hpp"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>

#include "sim/core/error.hpp"
#include "tests/scratch_folder.hpp"
#include "tests/sim/core/file_size_limit.hpp"
#include "tests/test_support.hpp"

namespace fs = std::filesystem;

using ipusim::core::AppendFile;
using ipusim::core::ConfigError;
using ipusim::core::OutputSet;
using ipusim::core::write_file_atomically;

namespace {

using ipusim::testing::scratch_folder;

// An empty folder of the test's own.
fs::path fresh_folder(const std::string& name) {
  const fs::path dir = scratch_folder("output_file_test") / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The names in `dir`, sorted: what a failure must not add to.
std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

const std::string kAdvice = "; give the path of a regular file or of a new one";

mode_t permissions(const fs::path& path) {
  struct stat info {};
  REQUIRE(::stat(path.c_str(), &info) == 0);
  return info.st_mode & 0777;
}

// The status of a child process that writes `path` through an OutputSet and, its temporary
// file in place, sends itself `signal`.
int status_of_child_signalled_while_writing(const std::string& path, int signal) {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::signal(signal, SIG_DFL);  // as in a program of its own, not under the test runner's handler
    try {
      OutputSet outputs;
      outputs.add_folder(fs::path(path).parent_path().string(), "--save");
      outputs.add(path, "--trace");
      outputs.write(path, std::string(1 << 20, 'x'));
      ::raise(signal);
    } catch (...) {
    }
    ::_exit(0);  // only when the signal did not end the process
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  return status;
}

}  // namespace

TEST_CASE("an output file is written whole and no temporary file is left behind") {
  const auto dir = fresh_folder("whole");
  const auto path = (dir / "report.json").string();
  write_file_atomically(path, "{}\n");
  CHECK(read(path) == "{}\n");
  CHECK(entries(dir) == std::vector<std::string>{"report.json"});
}

TEST_CASE("a streamed output is written whole, pieces past a megabyte included") {
  const auto dir = fresh_folder("streamed");
  const auto path = (dir / "rows.csv").string();
  OutputSet outputs;
  outputs.add(path, "--csv");
  std::string expected;
  outputs.write_streamed(path, [&](const auto& put) {
    for (int i = 0; i < 100'000; ++i) {
      const std::string line = std::to_string(i) + ",a row of about twenty bytes\n";
      expected += line;
      put(line);
    }
  });
  CHECK(entries(dir).size() == 1);  // the temporary, until the commit
  outputs.commit();
  CHECK(read(path) == expected);
  CHECK(expected.size() > (std::size_t{1} << 21));
  CHECK(entries(dir) == std::vector<std::string>{"rows.csv"});
}

TEST_CASE("a streamed output whose producer fails leaves no file behind") {
  const auto dir = fresh_folder("streamed-failure");
  const auto path = (dir / "rows.csv").string();
  {
    OutputSet outputs;
    outputs.add(path, "--csv");
    CHECK_THROWS_AS(outputs.write_streamed(path,
                                           [](const auto& put) {
                                             put(std::string(3 << 20, 'x'));
                                             throw std::runtime_error("the rows ran out");
                                           }),
                    std::runtime_error);
  }  // the command unwinds past its outputs
  CHECK(entries(dir).empty());
}

TEST_CASE("an output file in a missing folder is an error naming the file and the folder") {
  CHECK(ipusim::testing::error_of<ConfigError>(
            [] { write_file_atomically("/nonexistent/ipusim/x.json", "{}"); }) ==
        "/nonexistent/ipusim/x.json: cannot write the output file: the folder "
        "/nonexistent/ipusim does not exist");
}

TEST_CASE("a character device as an output is refused and stays a device") {
  OutputSet outputs;
  CHECK(ipusim::testing::error_of<ConfigError>([&] { outputs.add("/dev/null", "--json"); }) ==
        "/dev/null: cannot write the --json output: it is a character device" + kAdvice);
  CHECK(ipusim::testing::error_of<ConfigError>([] { write_file_atomically("/dev/full", "{}"); }) ==
        "/dev/full: cannot write the output file: it is a character device" + kAdvice);
  CHECK(fs::is_character_file("/dev/null"));
  CHECK(fs::is_character_file("/dev/full"));
}

TEST_CASE("a FIFO as an output is refused and stays a FIFO") {
  const auto dir = fresh_folder("fifo");
  const auto fifo = dir / "pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  CHECK(
      ipusim::testing::error_of<ConfigError>([&] { write_file_atomically(fifo.string(), "{}"); }) ==
      fifo.string() + ": cannot write the output file: it is a FIFO (named pipe)" + kAdvice);
  CHECK(fs::is_fifo(fifo));
  CHECK(entries(dir) == std::vector<std::string>{"pipe"});
}

TEST_CASE("a symbolic link as an output is refused and neither it nor its target changes") {
  const auto dir = fresh_folder("symlink");
  write_file_atomically((dir / "target.json").string(), "old\n");
  fs::create_symlink("target.json", dir / "link.json");
  const auto link = (dir / "link.json").string();
  CHECK(ipusim::testing::error_of<ConfigError>([&] { write_file_atomically(link, "new\n"); }) ==
        link + ": cannot write the output file: it is a symbolic link" + kAdvice);
  CHECK(fs::is_symlink(link));
  CHECK(read(dir / "target.json") == "old\n");
}

TEST_CASE("a directory as an output is refused and no partial file is left beside it") {
  const auto dir = fresh_folder("directory");
  fs::create_directory(dir / "report.html");
  const auto path = (dir / "report.html").string();
  CHECK(ipusim::testing::error_of<ConfigError>([&] { write_file_atomically(path, "<html>"); }) ==
        path + ": cannot write the output file: it is a directory" + kAdvice);
  CHECK(entries(dir) == std::vector<std::string>{"report.html"});
  CHECK(fs::is_empty(path));
}

TEST_CASE("an output under a regular file is refused naming that file as not a folder") {
  const auto dir = fresh_folder("not_a_folder");
  const auto file = (dir / "plain").string();
  write_file_atomically(file, "x");
  CHECK(ipusim::testing::error_of<ConfigError>([&] {
          write_file_atomically(file + "/x.json", "{}");
        }) == file + "/x.json: cannot write the output file: " + file + " is not a folder");
}

TEST_CASE("two outputs that are one file are refused, however the paths are spelt") {
  const auto dir = fresh_folder("same");
  OutputSet outputs;
  outputs.add((dir / "run.json").string(), "--json");
  const auto other = (dir / "." / "run.json").string();
  CHECK(ipusim::testing::error_of<ConfigError>([&] { outputs.add(other, "--trace"); }) ==
        other +
            ": cannot write the --trace output: the --json output is the same file; give each "
            "output its own path");
}

TEST_CASE("a write that fails is reported and leaves no file behind") {
  const auto dir = fresh_folder("too_large");
  const auto path = (dir / "big.json").string();
  const std::string text(100000, 'x');
  std::string error;
  {
    const ipusim::testing::FileSizeLimit limit(1000);
    error = ipusim::testing::error_of<ConfigError>([&] { write_file_atomically(path, text); });
  }
  CHECK(error == path + ": cannot write the output file: File too large");
  CHECK(entries(dir).empty());
}

TEST_CASE("when one output of a set fails to be written the others are left as they were") {
  const auto dir = fresh_folder("one_fails");
  const auto small = (dir / "small.json").string();
  const auto big = (dir / "big.html").string();
  write_file_atomically(small, "old\n");
  std::string error;
  {
    const ipusim::testing::FileSizeLimit limit(1000);
    OutputSet outputs;
    outputs.add(small, "--json");
    outputs.add(big, "--html");
    outputs.write(small, "new\n");
    error = ipusim::testing::error_of<ConfigError>(
        [&] { outputs.write(big, std::string(100000, 'x')); });
  }
  CHECK(error == big + ": cannot write the --html output: File too large");
  CHECK(entries(dir) == std::vector<std::string>{"small.json"});
  CHECK(read(small) == "old\n");
}

TEST_CASE("commit checks every path again before renaming any") {
  const auto dir = fresh_folder("spoilt");
  const auto first = (dir / "a.json").string();
  const auto second = (dir / "b.json").string();
  OutputSet outputs;
  outputs.add(first, "--json");
  outputs.add(second, "--csv");
  outputs.write(first, "a\n");
  outputs.write(second, "b\n");
  fs::create_directory(second);  // put there by someone else while the work ran
  CHECK(ipusim::testing::error_of<ConfigError>([&] { outputs.commit(); }) ==
        second + ": cannot write the --csv output: it is a directory" + kAdvice);
  CHECK_FALSE(fs::exists(first));
}

TEST_CASE("a set given up before commit removes its temporaries and the folders it created") {
  const auto dir = fresh_folder("given_up");
  const auto folder = (dir / "save" / "run1").string();
  {
    OutputSet outputs;
    outputs.add_folder(folder, "--save");
    CHECK(fs::is_directory(folder));
    outputs.add(folder + "/losses.npy", "--save");
    outputs.write(folder + "/losses.npy", "npy");
  }
  CHECK(entries(dir).empty());
}

TEST_CASE("a committed set keeps the folders it created and every output") {
  const auto dir = fresh_folder("committed");
  const auto folder = (dir / "save").string();
  OutputSet outputs;
  outputs.add_folder(folder + "/", "--save");
  outputs.add(folder + "/a.npy", "--save");
  outputs.add(folder + "/b.npy", "--save");
  outputs.write(folder + "/a.npy", {"head", "data"});
  outputs.write(folder + "/b.npy", "b");
  outputs.commit();
  CHECK(entries(folder) == std::vector<std::string>{"a.npy", "b.npy"});
  CHECK(read(folder + "/a.npy") == "headdata");
}

TEST_CASE("a folder for outputs that is a regular file is refused") {
  const auto dir = fresh_folder("folder_is_file");
  const auto file = (dir / "out").string();
  write_file_atomically(file, "x");
  OutputSet outputs;
  CHECK(ipusim::testing::error_of<ConfigError>([&] { outputs.add_folder(file, "--save"); }) ==
        file + ": cannot write the --save output: it is a regular file, not a folder");
}

TEST_CASE("a file appended to in place is locked against a second writer until released") {
  const auto dir = fresh_folder("locked");
  const auto path = (dir / "rows.csv").string();
  const std::string busy = "another writer holds it";
  {
    AppendFile first(path, "the -o output", busy);
    first.append("a\n");
    CHECK(ipusim::testing::error_of<ConfigError>(
              [&] { AppendFile second(path, "the -o output", busy); }) == path + ": " + busy);
  }
  AppendFile again(path, "the -o output", busy);
  again.append("b\n");
  CHECK(read(path) == "a\nb\n");
}

TEST_CASE("an output that is a file the command reads is refused, before or after the input") {
  const auto dir = fresh_folder("input");
  const auto config = (dir / "run.json").string();
  write_file_atomically(config, "{}\n");
  const std::string error = config +
                            ": cannot write the --json output: it is the config this command "
                            "reads; choose another file";
  {
    OutputSet outputs;
    outputs.add_input(config, "the config this command reads");
    CHECK(ipusim::testing::error_of<ConfigError>([&] { outputs.add(config, "--json"); }) == error);
  }
  OutputSet outputs;
  outputs.add(config, "--json");
  CHECK(ipusim::testing::error_of<ConfigError>(
            [&] { outputs.add_input(config, "the config this command reads"); }) == error);
  CHECK(read(config) == "{}\n");
}

TEST_CASE("an output that is an input under another name or a hard link is refused") {
  const auto dir = fresh_folder("input_alias");
  const auto model = (dir / "model.json").string();
  write_file_atomically(model, "{}\n");
  fs::create_hard_link(model, dir / "linked.json");
  const auto linked = (dir / "linked.json").string();
  const auto missing = (dir / "new.json").string();
  OutputSet outputs;
  outputs.add_input((dir / "." / "model.json").string(), "the model file this command reads");
  outputs.add_input(missing, "the --measured file this command reads");
  CHECK(ipusim::testing::error_of<ConfigError>([&] { outputs.add(linked, "-o"); }) ==
        linked +
            ": cannot write the -o output: it is the model file this command reads; choose "
            "another file");
  CHECK(ipusim::testing::error_of<ConfigError>([&] { outputs.add(missing, "--csv"); }) ==
        missing +
            ": cannot write the --csv output: it is the --measured file this command "
            "reads; choose another file");
  outputs.add((dir / "other.json").string(), "--html");  // any other file is fine
}

TEST_CASE("an output replacing a file keeps that file's permission bits") {
  const auto dir = fresh_folder("permissions");
  const auto secret = (dir / "secret.json").string();
  const auto shared = (dir / "shared.json").string();
  write_file_atomically(secret, "old\n");
  write_file_atomically(shared, "old\n");
  REQUIRE(::chmod(secret.c_str(), 0600) == 0);
  REQUIRE(::chmod(shared.c_str(), 0664) == 0);
  write_file_atomically(secret, "new\n");
  write_file_atomically(shared, "new\n");
  CHECK(read(secret) == "new\n");
  CHECK(permissions(secret) == 0600);
  CHECK(permissions(shared) == 0664);
  const mode_t mask = ::umask(022);
  ::umask(mask);
  const auto created = (dir / "created.json").string();
  write_file_atomically(created, "new\n");
  CHECK(permissions(created) == (0666 & ~mask));
}

TEST_CASE(
    "SIGINT, SIGTERM, SIGHUP or SIGQUIT while an output is written removes its temporary file "
    "and the folders made for it") {
  for (const int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
    const auto dir = fresh_folder("signal" + std::to_string(signal));
    const auto path = dir / "made" / "deeper" / "trace.json";
    const int status = status_of_child_signalled_while_writing(path.string(), signal);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == signal);
    CHECK(entries(dir).empty());  // neither the temporary nor the folders made for it
  }
}
