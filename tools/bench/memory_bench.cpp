// Peak memory of `ipusim plan` against its number of settings, and of `ipusim merge` against
// its input. Each run is a child process whose peak resident set (getrusage's ru_maxrss of the
// child) is printed: plan on configs/tf1_mnist_2ipu.json at about 1,000, 10,000 and 100,000
// settings (schedules counted) with the default schedules, at 100,000 with the config's own
// schedule alone (grouped), with and without --csv and --html; then merge of a generated sweep
// CSV of 1,000,000 rows.
//
//   build/tools/bench/memory_bench [IPUSIM]   (run from the repository root; IPUSIM defaults to
//                                              build/tools/ipusim/ipusim)

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "child_usage.hpp"

namespace {

using ipusim::bench::run_child;
using ipusim::bench::Usage;

// "1,2,...": `count` values from `first` in steps of `step`.
std::string values(int first, int step, int count) {
  std::string out;
  for (int i = 0; i < count; ++i)
    out += (i ? "," : "") + std::to_string(first + i * step);
  return out;
}

void plan(const std::string& ipusim, const char* name, int settings,
          const std::vector<std::string>& options) {
  std::vector<std::string> args = {ipusim,    "plan",   "configs/tf1_mnist_2ipu.json",
                                   "--quiet", "--jobs", "2"};
  args.insert(args.end(), options.begin(), options.end());
  const auto usage = run_child(args);
  std::printf("plan, %-40s %7d settings: peak RSS %6.1f MB in %6.1f s%s\n", name, settings,
              double(usage.peak_kb) / 1024, usage.seconds, usage.status == 0 ? "" : " (FAILED)");
  std::fflush(stdout);
}

// A sweep CSV of `rows` runs in a shuffled order, its cells as sweep writes them.
std::uintmax_t write_sweep_csv(const std::string& path, int rows) {
  std::ofstream out(path);
  out << "run,pipeline.gradient_accumulation_count,pipeline.micro_batch_size";
  for (int m = 0; m < 20; ++m)
    out << ",m" << m;
  out << ",error\n";
  unsigned state = 12345;
  for (int i = 0; i < rows; ++i) {
    const long run = (long(i) * 7919) % rows;  // every run once, out of order
    out << run << "," << 8 * (run % 50 + 1) << "," << run % 40 + 1;
    for (int m = 0; m < 20; ++m) {
      state = state * 1103515245u + 12345u;
      out << "," << (state >> 8) % 10000 << "." << (state >> 4) % 1000000;
    }
    out << ",\n";
  }
  out.close();
  return std::filesystem::file_size(path);
}

// The config's pipeline_schedule, as its JSON text names it.
std::string config_schedule(const std::string& path) {
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string key = "\"pipeline_schedule\": \"";
  const auto at = text.find(key);
  if (at == std::string::npos)
    return "";
  const auto begin = at + key.size();
  return text.substr(begin, text.find('"', begin) - begin);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string ipusim = argc > 1 ? argv[1] : "build/tools/ipusim/ipusim";
  // Default schedules (3): 3 x GAC values x micro-batches.
  plan(ipusim, "default schedules", 3 * 25 * 13,
       {"--gac", values(8, 8, 25), "--micro-batch", values(1, 1, 13)});
  plan(ipusim, "default schedules", 3 * 50 * 67,
       {"--gac", values(8, 8, 50), "--micro-batch", values(1, 1, 67)});
  plan(ipusim, "default schedules", 3 * 2 * 128 * 130,
       {"--gac", values(8, 8, 128), "--micro-batch", values(1, 1, 130), "--recomputation",
        "none,auto"});
  const std::string own = config_schedule("configs/tf1_mnist_2ipu.json");
  plan(ipusim, own.c_str(), 1 * 2 * 250 * 200,
       {"--schedules", own, "--gac", values(4, 4, 250), "--micro-batch", values(1, 1, 200),
        "--recomputation", "none,auto"});
  const std::string scratch = std::filesystem::temp_directory_path() / "ipusim_memory_bench";
  std::filesystem::create_directories(scratch);
  plan(ipusim, (own + ", --csv and --html").c_str(), 1 * 2 * 250 * 200,
       {"--schedules", own, "--gac", values(4, 4, 250), "--micro-batch", values(1, 1, 200),
        "--recomputation", "none,auto", "--csv", scratch + "/plan.csv", "--html",
        scratch + "/plan.html"});
  const auto bytes = write_sweep_csv(scratch + "/sweep.csv", 1'000'000);
  const auto usage =
      run_child({ipusim, "merge", "-o", scratch + "/merged.csv", scratch + "/sweep.csv"});
  std::printf("merge of 1,000,000 rows, %.1f MB: peak RSS %.1f MB (%.2fx the input) in %.1f s%s\n",
              double(bytes) / 1e6, double(usage.peak_kb) / 1024,
              double(usage.peak_kb) * 1024 / double(bytes), usage.seconds,
              usage.status == 0 ? "" : " (FAILED)");
  std::filesystem::remove_all(scratch);
  return 0;
}
